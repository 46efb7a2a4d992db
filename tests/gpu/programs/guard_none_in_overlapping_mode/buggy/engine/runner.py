"""Model runner whose input guard is None in one of its overlapping modes.

Shape (buggy, guard None in an overlapping mode): the input event is made only
with async scheduling. With a batch queue (pipeline parallel) the engine also
runs step N+1 before step N's output is resolved, and there
prepared_inputs() yields with no wait: the next step writes the pinned
`input_ids` while the previous step's non_blocking copy may still read them.
Only the mode with neither (each step resolved before the next) is safe.
"""

from contextlib import contextmanager

import torch

from engine.outputs import AsyncOutput


class Runner:
    def __init__(self, config):
        self.async_scheduling = config.async_scheduling
        self.use_batch_queue = config.pipeline_parallel_size > 1
        self.input_ids = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_gpu = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.embed_table = torch.arange(config.vocab_size, dtype=torch.int64, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        # BUG: the batch queue overlaps steps too, and gets no event.
        self.inputs_event = torch.cuda.Event() if self.async_scheduling else None

    @contextmanager
    def prepared_inputs(self):
        if self.inputs_event is None:
            yield
            return
        # Host wait: the previous step's copy has read the pinned inputs.
        self.inputs_event.synchronize()
        try:
            yield
        finally:
            self.inputs_event.record()

    def _write_inputs(self, batch):
        n = len(batch.token_ids)
        self.input_ids[:n] = torch.tensor(batch.token_ids, dtype=torch.int64)
        self.input_ids_gpu[:n].copy_(self.input_ids[:n], non_blocking=True)

    def execute_model(self, batch):
        n = len(batch.token_ids)
        with self.prepared_inputs():
            self._write_inputs(batch)
        torch.ops.aten.index_select.out(
            self.embed_table, 0, self.input_ids_gpu[:n], out=self.hidden[:n]
        )
        output = AsyncOutput(batch.req_ids, self.hidden[:n])
        if self.async_scheduling:
            return output  # resolved later: the next step starts first
        if self.use_batch_queue:
            return output  # queued: the engine schedules the next batch first
        return output.get_output()
