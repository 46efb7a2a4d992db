"""Engine core: a busy step loop plus the pause control point.

Shape (fixed, the fixture's reference remedy): `pause()` calls
torch.accelerator.synchronize() before it returns, so the caller's weight
update on its own stream starts after the last step's work has run.
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
        torch.accelerator.synchronize()
        return None
