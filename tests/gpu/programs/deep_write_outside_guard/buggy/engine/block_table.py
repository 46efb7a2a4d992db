"""Per-request block ids, staged in pinned memory and copied to the device."""

import torch


class BlockTable:
    def __init__(self, max_reqs, max_blocks):
        self.cpu = torch.zeros((max_reqs, max_blocks), dtype=torch.int32, pin_memory=True)
        self.np = self.cpu.numpy()
        self.gpu = torch.zeros((max_reqs, max_blocks), dtype=torch.int32, device="cuda")
        self.num_blocks = [0] * max_reqs

    def add_row(self, row, blocks):
        self.np[row, : len(blocks)] = blocks
        self.num_blocks[row] = len(blocks)

    def append_block(self, row, block):
        self._set_entry(row, self.num_blocks[row], block)
        self.num_blocks[row] += 1

    def _set_entry(self, row, col, block):
        self.np[row, col] = block

    def copy_to_device(self, n):
        # The DMA reads rows [0, n) of the pinned table when the stream reaches it.
        self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)
