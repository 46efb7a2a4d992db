"""Model runner whose block-table update happens inside the guarded region.

Shape (fixed, deep write outside the guard): the same runner, with
finish_step() reserving the new blocks inside prepared_inputs(), before
RequestState.stage queues the table's copy. Every write of the pinned table,
however deep, follows the wait on the event the previous step recorded.
"""

from contextlib import contextmanager

import torch

from .outputs import AsyncOutput
from .requests import RequestState


class Runner:
    def __init__(self, config):
        self.max_blocks = config.max_blocks_per_req
        self.block_size = config.block_size
        self.requests = RequestState(config.max_reqs, config.max_blocks_per_req)
        self.positions = torch.zeros(config.max_reqs, dtype=torch.int64, device="cuda")
        self.slot_mapping = torch.zeros(config.max_reqs, dtype=torch.int64, device="cuda")
        self.logits = torch.zeros(config.max_reqs, config.vocab_size, device="cuda")
        self.inputs_event = torch.cuda.Event()

    @contextmanager
    def prepared_inputs(self):
        # Host wait: the previous step's copy has read the pinned table.
        self.inputs_event.synchronize()
        try:
            yield
        finally:
            self.inputs_event.record()

    def execute_model(self, batch):
        n = len(batch.req_ids)
        with self.prepared_inputs():
            self.requests.finish_step(batch)
            self.requests.stage(batch)
        # The slot-mapping kernel: each request's slot from its block at its position.
        column = (self.positions[:n] // self.block_size).unsqueeze(1)
        block = torch.ops.aten.gather(self.requests.block_table.gpu[:n], 1, column).squeeze(1)
        offset = self.positions[:n] % self.block_size
        torch.ops.aten.add.out(block * self.block_size, offset, out=self.slot_mapping[:n])
        return AsyncOutput(batch.req_ids, self.logits[:n].argmax(dim=-1))
