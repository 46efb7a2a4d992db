"""Model runner relaying each step's sequence lengths to the next step.

Shape (fixed): `publish` creates `ready` the first time through and records it
after every write of `seq_lens`, in every mode, so `resolve`'s copy stream waits
for the last write. `ready` is None only before the first write, where the
blocking `.cpu()` path reads what no stream has written. (An earlier version
recorded it only in the speculative mode and created it there only, leaving the
other mode on the `.cpu()` path: a copy on the current stream, which never waits
for the forward stream's write. On an H200 that read stale lengths in 20 of 20
trials once the forward stream was slowed; syncscan reports it.)
"""

import torch

from engine.algo import Algo


class Relay:
    """Hands each step's new sequence lengths to the next step."""

    def __init__(self, max_reqs: int, algo: Algo):
        self.algo = algo
        self.seq_lens = torch.zeros(max_reqs, dtype=torch.int64, device="cuda")
        self.seq_lens_host = torch.zeros(max_reqs, dtype=torch.int64, pin_memory=True)
        self.copy_stream = torch.cuda.Stream()
        self.ready = None

    def resolve(self):
        if self.ready is None:
            return self.seq_lens.cpu()
        self.copy_stream.wait_event(self.ready)
        with torch.cuda.stream(self.copy_stream):
            self.seq_lens_host.copy_(self.seq_lens, non_blocking=True)
        self.copy_stream.synchronize()
        return self.seq_lens_host

    def publish(self, indices, new_lens):
        if indices is None:
            return  # an idle step publishes nothing
        self.seq_lens[indices] = new_lens
        if self.ready is None:
            self.ready = torch.cuda.Event()
        self.ready.record()  # in every mode: the next step's copy waits for this write


class Runner:
    def __init__(self, max_reqs: int, algo: Algo):
        self.relay = Relay(max_reqs, algo)
        self.forward_stream = torch.cuda.Stream()

    def execute_model(self, batch):
        lens = self.relay.resolve()
        self.forward_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.forward_stream):
            new_lens = torch.ops.aten.add(batch.input_ids, 1)
            self.relay.publish(batch.indices, new_lens)
        return lens
