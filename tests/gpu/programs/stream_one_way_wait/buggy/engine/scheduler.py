"""Scheduler that writes the next batch's block tables on its own stream.

Shape (buggy): the schedule stream copies the next batch's tables into the
device buffer the forward reads; the forward stream waits for the schedule
stream before it reads (read-after-write is ordered). Nothing orders the other
direction: the next step's copy on the schedule stream may overwrite the
tables while the last forward still waits to read them (write-after-read).
"""

import torch


class Scheduler:
    def __init__(self, max_reqs, max_blocks):
        self.block_tables = torch.zeros(max_reqs, max_blocks, dtype=torch.int32, device="cuda")
        self.logits = torch.zeros(max_reqs, max_blocks, dtype=torch.int32, device="cuda")
        self.schedule_stream = torch.cuda.Stream()

    def _stage_tables(self, new_tables):
        with torch.cuda.stream(self.schedule_stream):
            self.block_tables.copy_(new_tables, non_blocking=True)

    def execute_model(self, batch):
        self._stage_tables(batch.block_tables)
        torch.cuda.current_stream().wait_stream(self.schedule_stream)
        torch.ops.aten.add.out(self.block_tables, batch.positions, out=self.logits)
        return self.logits
