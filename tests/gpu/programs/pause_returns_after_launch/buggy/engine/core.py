"""Engine core: a busy step loop plus the pause control point.

Shape (buggy): `pause()` only flips a host-side flag and returns. The step
launches its work asynchronously (a non_blocking H2D copy and a gather from the
weight table), so when pause() is called the last step's work may still be
queued. The caller takes the return as "the device is idle" and updates the
weights on its own stream, racing the gather still to run.
"""

import torch


class EngineCore:
    def __init__(self, config):
        self.ids = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.table = torch.eye(config.vocab_size, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, config.vocab_size, device="cuda")
        self.paused = False

    def step(self, batch):
        """One engine step: launches device work and returns without waiting."""
        if self.paused:
            return None
        n = len(batch.token_ids)
        self.ids[:n].copy_(batch.ids_cpu, non_blocking=True)
        torch.ops.aten.index_select.out(self.table, 0, self.ids[:n], out=self.hidden[:n])
        return n

    def pause(self):
        """Stop scheduling steps; the caller assumes the device is idle afterwards."""
        self.paused = True
        # BUG: no device barrier; the previous step's work may still run.
        return None
