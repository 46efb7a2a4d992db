"""Engine core whose pause waits on host-side things and drains the device.

Shape (fixed): pause() keeps its host-side waits (the step loop's
threading.Event, the gloo all_reduce and barrier that keep ranks in step) and
adds `torch.accelerator.synchronize()` once the step loop has stopped
launching. That full-device barrier comes before the return, so the caller
never races the last step's kernels.
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
        torch.accelerator.synchronize()  # device: everything it launched finished
        flag = torch.ones(1)  # CPU tensor: every rank agrees it is paused
        dist.all_reduce(flag, group=self.cpu_group)
        torch.distributed.barrier(group=self.cpu_group)
        return None
