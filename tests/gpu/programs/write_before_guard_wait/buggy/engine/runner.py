"""Model runner that writes positions before it waits on the input event.

Shape (buggy, write before the guard's wait): the embedding kernel reads the
pinned `positions` buffer in place through a UVA view, inside
prepared_inputs(), which waits on the input event on entry and records it on
exit. But _update_positions() runs before the region. In step N+1 it rewrites
`positions` while step N's kernel may still be queued to read them: the
event that would order the write is waited on only after it.
"""

from contextlib import contextmanager

import torch

from engine.outputs import AsyncOutput
from engine.uva import device_view_of


class Runner:
    def __init__(self, config):
        self.input_ids = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_gpu = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.positions = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        # The kernel reads positions straight from host memory: no copy.
        self.positions_uva = device_view_of(self.positions)
        self.tok_table = torch.arange(config.vocab_size, dtype=torch.int64, device="cuda")
        self.tok_table *= config.max_len
        self.pos_table = torch.arange(config.max_len, dtype=torch.int64, device="cuda")
        self.pos_rows = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.inputs_event = torch.cuda.Event()

    @contextmanager
    def prepared_inputs(self):
        # Host wait: the previous step's copy and kernel have read the inputs.
        self.inputs_event.synchronize()
        try:
            yield
        finally:
            self.inputs_event.record()

    def _update_positions(self, batch):
        n = len(batch.positions)
        self.positions[:n] = torch.tensor(batch.positions, dtype=torch.int64)

    def _embed(self, n):
        # The embedding kernel: token rows plus position rows, the positions read
        # in place from pinned memory through the UVA view when the kernel runs.
        ids = self.input_ids_gpu[:n]
        torch.ops.aten.index_select.out(self.tok_table, 0, ids, out=self.hidden[:n])
        positions = self.positions_uva[:n]
        torch.ops.aten.index_select.out(self.pos_table, 0, positions, out=self.pos_rows[:n])
        self.hidden[:n] += self.pos_rows[:n]

    def execute_model(self, batch):
        n = len(batch.token_ids)
        # BUG: before the wait; step N's kernel may still read positions.
        self._update_positions(batch)
        with self.prepared_inputs():
            self.input_ids[:n] = torch.tensor(batch.token_ids, dtype=torch.int64)
            self.input_ids_gpu[:n].copy_(self.input_ids[:n], non_blocking=True)
            self._embed(n)
        sampled = self.hidden[:n]
        return AsyncOutput(batch.req_ids, sampled)
