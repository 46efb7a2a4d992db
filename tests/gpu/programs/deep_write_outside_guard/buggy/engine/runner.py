"""Model runner whose block-table update lands after the guard's record.

Shape (buggy, deep write outside the guard): execute_model() stages the
pinned block table and queues its non_blocking copy inside prepared_inputs()
(RequestState.stage -> BlockTable.copy_to_device), which waits on the input
event on entry and records it on exit. After the region, finish_step()
reserves new blocks: RequestState.finish_step -> BlockTable.append_block ->
BlockTable._set_entry writes the same pinned table, three calls deep in
another module, while the copy queued in this step may not have read it.
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
            self.requests.stage(batch)
        # The slot-mapping kernel: each request's slot from its block at its position.
        column = (self.positions[:n] // self.block_size).unsqueeze(1)
        block = torch.ops.aten.gather(self.requests.block_table.gpu[:n], 1, column).squeeze(1)
        offset = self.positions[:n] % self.block_size
        torch.ops.aten.add.out(block * self.block_size, offset, out=self.slot_mapping[:n])
        # BUG: after the record; the table copy above may still be queued.
        self.requests.finish_step(batch)
        return AsyncOutput(batch.req_ids, self.logits[:n].argmax(dim=-1))
