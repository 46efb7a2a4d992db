"""Async output: the sampled tokens are copied to the host on a side stream.

Shape (buggy): the sampler writes `sampled` on the compute stream and the
output copy runs on `output_stream`, recorded by an event the engine
synchronizes before it reads the host copy. Nothing orders the output stream
after the sampler: the copy may read `sampled` before it is written
(read-after-write), and the next step's sampler may overwrite it while the copy
still reads it.
"""

import torch


class AsyncOutput:
    def __init__(self, host, event):
        self.host = host
        self.event = event

    def get_output(self):
        self.event.synchronize()
        return self.host.tolist()


class Runner:
    def __init__(self, max_reqs):
        self.sampled = torch.zeros(max_reqs, dtype=torch.int64, device="cuda")
        self.output_stream = torch.cuda.Stream()
        self.output_event = torch.cuda.Event()

    def _sample(self, logits):
        torch.ops.aten.argmax.out(logits, -1, False, out=self.sampled)

    def _copy_out(self):
        with torch.cuda.stream(self.output_stream):
            host = self.sampled.to("cpu", non_blocking=True)
            self.output_event.record()
        return AsyncOutput(host, self.output_event)

    def execute_model(self, batch):
        self._sample(batch.logits)
        return self._copy_out()
