"""Cache writes in a forked process, on a core the run leaves idle.

A cold run ends writing its record (vLLM 0.33.0: 0.8 s, SGLang 0.5.23: 1.7 s)
and the summaries it parsed, one process on one core while another waits; one
step class walked in the main process leaves the other core idle throughout.
What is written there changes no finding: a write that fails leaves the cache
without that entry, as a full disk would, and the next run rebuilds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable


def start(write: Callable[[], None]) -> int | None:
    """`write()` in a forked process, whose id it returns for `wait`; run here
    (None) where the OS cannot fork."""
    if not hasattr(os, "fork"):
        write()
        return None
    writer = os.fork()
    if writer:
        return writer
    status = 1
    try:
        write()
        status = 0
    finally:
        os._exit(status)  # never the parent's exit handlers, nor its buffers flushed again


def wait(writers: list[int | None]) -> None:
    """Until every process `start` made has ended."""
    while writers:
        writer = writers.pop()
        if writer is not None:
            os.waitpid(writer, 0)
