"""Engine core whose pause completes either at once or from a deferred callback.

Shape (buggy): pause() has two completions and neither follows a device barrier.
  * Fast path: no step is unfinished in the host's bookkeeping, so pause()
    returns None ("paused now"). The last step returned without waiting, so its
    kernels may still be running on the device.
  * Slow path: pause() registers a nested callback `on_idle` that resolves the
    future once the host loop goes idle, and hands the future back. Host-idle
    is not device-idle: `future.set_result(None)` reports completion while the
    last step's kernels may still run.
`return future` is NOT a completion: it hands back an unresolved future, and
the caller waits for its resolution (the set_result in on_idle).
"""

from concurrent.futures import Future

import torch


class EngineCore:
    def __init__(self, config):
        self.ids = torch.zeros(config.max_tokens, dtype=torch.int64, device="cuda")
        self.table = torch.eye(config.vocab_size, device="cuda")
        self.hidden = torch.zeros(config.max_tokens, config.vocab_size, device="cuda")
        self.paused = False
        self._unfinished = 0  # steps launched whose outputs the host has not processed
        self._idle_callbacks = []
        self._pause_future = None

    def step(self, batch):
        """One engine step: launches device work and returns without waiting."""
        if self.paused:
            return None
        n = len(batch.token_ids)
        self.ids[:n].copy_(batch.ids_cpu, non_blocking=True)
        torch.ops.aten.index_select.out(self.table, 0, self.ids[:n], out=self.hidden[:n])
        self._unfinished += 1
        return n

    def process_outputs(self, count):
        """Host bookkeeping; runs the idle callbacks when nothing is unfinished."""
        self._unfinished -= count
        if self._unfinished == 0:
            callbacks, self._idle_callbacks = self._idle_callbacks, []
            for callback in callbacks:
                callback(self._pause_future)

    def pause(self):
        """Returns None if paused now, else a future resolved once paused."""
        self.paused = True
        if self._unfinished == 0:
            # BUG: host-idle fast path; the device may still be busy.
            return None
        future = Future()
        self._pause_future = future

        def on_idle(future):
            # BUG: runs when the host loop is idle, not when the device is.
            future.set_result(None)

        self._idle_callbacks.append(on_idle)
        return future  # not a completion: the future is still unresolved
