"""Model runner that offloads each step's KV block to host memory on a copy stream.

Shape (buggy): the forward writes this step's KV block on the compute
stream; the copy stream then copies it to pinned host memory. The copy stream
waits for the compute stream, but before the attention kernel that writes the
block is launched: the copy may read the block before it is written
(read-after-write).
"""

import torch


class Runner:
    def __init__(self, n):
        self.kv_block = torch.zeros(n, n, device="cuda")
        self.kv_host = torch.zeros(n, n, pin_memory=True)
        self.hidden = torch.ones(n, n, device="cuda")
        self.copy_stream = torch.cuda.Stream()

    def _offload(self):
        with torch.cuda.stream(self.copy_stream):
            self.kv_host.copy_(self.kv_block, non_blocking=True)

    def execute_model(self, batch):
        # BUG: the wait is placed before the write it must follow.
        self.copy_stream.wait_stream(torch.cuda.current_stream())
        torch.ops.aten.mm.out(batch.query, self.hidden, out=self.kv_block)
        self._offload()
        self.copy_stream.synchronize()
        return batch.req_ids
