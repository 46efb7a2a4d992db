"""Worker whose sleep waits for the device, then unmaps its memory.

Shape (fixed): the device barrier comes first, so nothing still runs on the
pages when they are released, and the return follows it too.
"""

import torch

from engine.allocator import PoolAllocator


class Worker:
    def __init__(self):
        self.allocator = PoolAllocator()

    def sleep(self):
        torch.accelerator.synchronize()
        self.allocator.unmap()
        return None
