"""Model runner that pads its pinned input ids after the guard has recorded.

Shape (buggy, write after record): prepared_inputs() waits on the input event
on entry and records it on exit, and the non_blocking copy of the pinned
`input_ids` is queued inside the region. After the region the step zeroes the
padded tail of the same pinned buffer. The copy queued a few lines earlier
reads the buffer whenever the stream reaches it: when that is before the pad
write, the device gets the last batch's stale ids where the pad should be.
"""

from contextlib import contextmanager

import torch

from engine.outputs import AsyncOutput


class Runner:
    def __init__(self, config):
        self.input_ids = torch.zeros(config.max_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_np = self.input_ids.numpy()
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

    def _copy_inputs(self, padded):
        # The DMA reads the pinned buffer when the stream reaches it, not now.
        self.input_ids_gpu[:padded].copy_(self.input_ids[:padded], non_blocking=True)

    def execute_model(self, batch):
        n = len(batch.token_ids)
        padded = batch.padded_size
        with self.prepared_inputs():
            self.input_ids_np[:n] = batch.token_ids
            self._copy_inputs(padded)
        # BUG: after the record; the copy above may still be reading these bytes.
        self.input_ids_np[n:padded] = 0
        ids = self.input_ids_gpu[:padded]
        torch.ops.aten.index_select.out(self.embed_table, 0, ids, out=self.hidden[:padded])
        return AsyncOutput(batch.req_ids, self.hidden[:padded])
