"""Model runner whose copy stream waits on an event recorded only on the prefill path.

Shape (buggy): both paths write the sampled tokens on the compute stream
and the copy stream copies them to pinned host memory after waiting on
`sampled_ready`. The decode path never records it:
the copy stream waits on the last prefill's record and may copy the tokens
before the decode sampler writes them (read-after-write, stale event).
"""

import torch


class Runner:
    def __init__(self, max_reqs):
        self.sampled = torch.zeros(max_reqs, dtype=torch.int64, device="cuda")
        self.sampled_host = torch.zeros(max_reqs, dtype=torch.int64, pin_memory=True)
        self.copy_stream = torch.cuda.Stream()
        self.sampled_ready = torch.cuda.Event()

    def execute_model(self, batch):
        if batch.is_prefill:
            torch.ops.aten.argmax.out(batch.logits, -1, False, out=self.sampled)
            self.sampled_ready.record()
        else:
            torch.ops.aten.argmax.out(batch.logits, -1, False, out=self.sampled)
        with torch.cuda.stream(self.copy_stream):
            self.copy_stream.wait_event(self.sampled_ready)
            self.sampled_host.copy_(self.sampled, non_blocking=True)
        self.copy_stream.synchronize()
        return self.sampled_host
