"""Model runner whose dummy batch skips the input guard.

Shape (buggy, second entry point skips the guard): execute_model() writes the
pinned `input_ids` and queues their non_blocking copy inside
prepared_inputs(), which waits on the input event on entry and records it on
exit. The engine loop also calls execute_dummy_batch() (an idle data-parallel
rank runs a dummy forward to join the collectives), and _dummy_run() fills the
same pinned buffer with no wait first. After step N's execute_model, the dummy
write can land while step N's copy is still queued. The dummy run's own
trailing synchronize orders only its own work, after the write.
"""

from contextlib import contextmanager

import torch

from engine.outputs import AsyncOutput


class Runner:
    def __init__(self, config):
        self.input_ids = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_gpu = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.embed_table = torch.arange(config.vocab_size, dtype=torch.int64, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.inputs_event = torch.cuda.Event()

    @contextmanager
    def prepared_inputs(self):
        # Host wait: the previous step's copy has read the pinned inputs.
        self.inputs_event.synchronize()
        try:
            yield
        finally:
            self.inputs_event.record()

    def _forward(self, n):
        self.input_ids_gpu[:n].copy_(self.input_ids[:n], non_blocking=True)
        torch.ops.aten.index_select.out(
            self.embed_table, 0, self.input_ids_gpu[:n], out=self.hidden[:n]
        )

    def execute_model(self, batch):
        n = len(batch.token_ids)
        with self.prepared_inputs():
            self.input_ids[:n] = torch.tensor(batch.token_ids, dtype=torch.int64)
            self._forward(n)
        sampled = self.hidden[:n]
        return AsyncOutput(batch.req_ids, sampled)

    def _dummy_run(self, num_tokens):
        # BUG: no wait on inputs_event; the last execute_model's copy may be queued.
        self.input_ids[:num_tokens].zero_()
        self._forward(num_tokens)
        torch.cuda.synchronize()

    def execute_dummy_batch(self):
        self._dummy_run(1)
