"""Step results handed back to the engine."""

import torch


class AsyncOutput:
    """Deferred result: the engine calls get_output() before admitting more steps."""

    def __init__(self, req_ids, sampled):
        self.req_ids = list(req_ids)
        self.sampled_cpu = sampled.to("cpu", non_blocking=True)
        self.copy_event = torch.cuda.Event()
        self.copy_event.record()

    def get_output(self):
        self.copy_event.synchronize()
        return dict(zip(self.req_ids, self.sampled_cpu.tolist(), strict=True))
