"""A round-robin pool of pinned host buffers read by kernels through UVA."""

import torch

from .uva import device_view_of


class PinnedBuffer:
    def __init__(self, n):
        self.cpu = torch.zeros(n, dtype=torch.int32, device="cpu", pin_memory=True)
        self.uva = device_view_of(self.cpu)


class SlotPool:
    def __init__(self, n, depth):
        self.depth = depth
        self._bufs = [PinnedBuffer(n) for _ in range(depth)]
        self._idx = 0

    def write(self, values):
        self._idx = (self._idx + 1) % self.depth
        buf = self._bufs[self._idx]
        buf.cpu[: len(values)] = torch.as_tensor(values, dtype=torch.int32)
        return buf.uva
