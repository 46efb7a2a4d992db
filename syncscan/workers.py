"""How many processes a cold run should index with: the cores it may use that
the machine is not already busy on.

Prefetching workers pay only when a core is idle for them: on a 2-core machine
with another job running, a worker and the analysis share one core and the run
is slower than serial (measured before this rule: 31 s against 17 s). So the
count is the process's cores less the load the machine already carries (the
one-minute load average, which a fresh process has not yet raised), and never
less than one. Light on purpose: the CLI asks before it imports the indexer.
"""

from __future__ import annotations

import math
import os


def usable_cores() -> int:
    """The cores this process may run on (its affinity set where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def busy_cores() -> int:
    """Cores the rest of the machine keeps busy: the one-minute load average, rounded
    up (a half-busy core is not free for a worker); 0 where the OS has none."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0
    return math.ceil(load - 0.25) if load > 0.25 else 0


def default_jobs() -> int:
    """Processes for cold indexing: the usable cores the machine is not busy on."""
    return max(1, usable_cores() - busy_cores())
