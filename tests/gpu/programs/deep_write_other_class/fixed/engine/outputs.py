"""Step results handed back to the engine."""

import torch


class EmptyOutput:
    """Built on the host from request ids alone; resolving it waits for nothing."""

    def __init__(self, req_ids):
        self.req_ids = list(req_ids)


class AsyncOutput:
    """Deferred result: the engine calls get_output() before admitting more steps."""

    def __init__(self, req_ids, sampled):
        self.req_ids = list(req_ids)
        self.sampled_cpu = sampled.to("cpu", non_blocking=True)
        # Recorded after every launch of the step, so waiting on it bounds the step.
        self.copy_event = torch.cuda.Event()
        self.copy_event.record()

    def get_output(self):
        self.copy_event.synchronize()
        return dict(zip(self.req_ids, self.sampled_cpu.tolist(), strict=True))
