"""Worker with sleep / wake-up control points.

Shape (fixed): wake_up() restores the weights offloaded by sleep() with
`buf.copy_(saved)`, launches the re-init kernel (`kv_cache.zero_()`) to clear
the KV cache, and ends with `torch.accelerator.synchronize()`: a full-device
barrier after its last launch, before it reports the worker awake.
sleep() is a second, correct quiescence point: its barrier comes first and the
offload after it (`.cpu()`) blocks the host and launches nothing.
"""

import torch


class Worker:
    def __init__(self, config):
        self.block_size = config.block_size
        self.num_blocks = config.num_blocks
        shape = (config.hidden_size, config.hidden_size)
        self.weights = [torch.zeros(shape, device="cuda") for _ in range(config.num_layers)]
        self.kv_cache = torch.zeros(config.num_blocks * config.block_size, device="cuda")
        self._saved = []

    def sleep(self):
        """Offload the weights; correct: the device barrier comes first."""
        torch.accelerator.synchronize()
        self._saved = [buf.cpu() for buf in self.weights]  # blocking D2H copies
        return None

    def wake_up(self):
        """Restore the weights and clear the KV cache; the caller assumes an idle device."""
        for buf, saved in zip(self.weights, self._saved, strict=True):
            buf.copy_(saved)
        self.kv_cache.zero_()  # the re-init kernel: clears every block, in order
        # Trailing full-device barrier: restore and re-init have finished.
        torch.accelerator.synchronize()
        return None
