"""Engine core whose pause waits, but only on host-side things.

Shape (buggy, look-alike): before returning, pause() waits on
  * `self._loop_idle.wait()`: a threading.Event the step loop sets once it has
    stopped launching (the host loop is idle, the device is not);
  * `dist.all_reduce(flag, group=self.cpu_group)` and
    `torch.distributed.barrier(group=self.cpu_group)`: collectives over a gloo
    (CPU) group; every rank's host got here, no rank's device was drained.
None of these is a full-device barrier, so the return still races the last
step's kernels.
"""

import threading

import torch
import torch.distributed
import torch.distributed as dist


class EngineCore:
    def __init__(self, config):
        self.ids = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.table = torch.eye(config.vocab_size, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, config.vocab_size, device="cuda")
        self.cpu_group = torch.distributed.new_group(backend="gloo")
        self._loop_idle = threading.Event()
        self.paused = False

    def step(self, batch):
        """One engine step: launches device work and returns without waiting."""
        if self.paused:
            self._loop_idle.set()
            return None
        n = len(batch.token_ids)
        self.ids[:n].copy_(batch.ids_cpu, non_blocking=True)
        torch.ops.aten.index_select.out(self.table, 0, self.ids[:n], out=self.hidden[:n])
        return n

    def pause(self):
        """Stop scheduling steps; the caller assumes the device is idle afterwards."""
        self.paused = True
        self._loop_idle.wait()  # host: the step loop stopped launching
        flag = torch.ones(1)  # CPU tensor: every rank agrees it is paused
        dist.all_reduce(flag, group=self.cpu_group)
        # BUG: a gloo CPU barrier orders hosts, not devices.
        torch.distributed.barrier(group=self.cpu_group)
        return None
