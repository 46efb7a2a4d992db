"""Worker whose sleep unmaps device memory before it waits for the device.

Shape (buggy, a release point): sleep() unmaps the pool, then synchronizes,
then returns. The return is after a barrier, but the kernels the step loop
launched may still be reading the pages unmapped a line earlier: the barrier
must come before the release, not only before completion.
"""

import torch

from engine.allocator import PoolAllocator


class Worker:
    def __init__(self):
        self.allocator = PoolAllocator()

    def sleep(self):
        # BUG: the step loop's kernels may still run on these pages.
        self.allocator.unmap()
        torch.accelerator.synchronize()
        return None
