"""A round-robin pool of pinned host buffers, each copied to the device per step."""

import torch


class SlotPool:
    """`depth` pinned buffers; the slot written now is rewritten `depth` writes later."""

    def __init__(self, n, depth):
        self.depth = depth
        self._bufs = [torch.zeros(n, dtype=torch.int64, pin_memory=True) for _ in range(depth)]
        self._idx = 0

    def write(self, values):
        self._idx = (self._idx + 1) % self.depth
        buf = self._bufs[self._idx]
        buf.numpy()[: len(values)] = values
        return buf[: len(values)]
