"""Worker with sleep / wake-up control points.

Shape (buggy): wake_up() restores the weights offloaded by sleep() with
`buf.copy_(saved)` and launches the re-init kernel (`kv_cache.zero_()`) to
clear the KV cache, then returns with no device barrier. busy_on_entry is
false (the worker was asleep), so only wake_up's own launches matter: the
restore copies are blocking (PyTorch synchronizes the stream after each), but
the kernel may still be running when the caller, told the worker is awake,
launches its own kernels (a weight update, the next step).
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
        # BUG: the re-init kernel may still be running.
        return None
