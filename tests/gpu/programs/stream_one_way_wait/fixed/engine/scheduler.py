"""Scheduler that writes the next batch's block tables on its own stream.

Shape (fixed, the fixture's remedy): as the buggy program, and the schedule
stream also waits for the forward stream before it rewrites the tables.
"""

import torch


class Scheduler:
    def __init__(self, max_reqs, max_blocks):
        self.block_tables = torch.zeros(max_reqs, max_blocks, dtype=torch.int32, device="cuda")
        self.logits = torch.zeros(max_reqs, max_blocks, dtype=torch.int32, device="cuda")
        self.schedule_stream = torch.cuda.Stream()

    def _stage_tables(self, new_tables):
        # The reverse edge: the last forward has read the tables.
        self.schedule_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.schedule_stream):
            self.block_tables.copy_(new_tables, non_blocking=True)

    def execute_model(self, batch):
        self._stage_tables(batch.block_tables)
        torch.cuda.current_stream().wait_stream(self.schedule_stream)
        torch.ops.aten.add.out(self.block_tables, batch.positions, out=self.logits)
        return self.logits
