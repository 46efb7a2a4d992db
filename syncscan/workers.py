"""How many processes a run should use: the cores it may use that the machine
is not already busy on.

Workers pay only when a core is idle for them: on a 2-core machine with another
job running, a worker and the analysis share one core and the run is slower
than serial (measured before this rule: 31 s against 17 s). So the count is the
process's cores less the processes the machine is running besides this one.
Where Linux says so (`/proc/loadavg`'s running count, the fewest of a few
samples a millisecond apart) that is a snapshot of now: a CPU hog counts, and a
run that ended a moment ago does not, as it would in the one-minute load
average (a pre-commit hook run right after another check, or a benchmark's next
case, would otherwise run serially on an idle machine). Elsewhere the
one-minute load average stands in. Light on purpose: the CLI asks before it
imports the indexer.
"""

from __future__ import annotations

import math
import os
import time
from functools import cache
from pathlib import Path

LOADAVG = Path("/proc/loadavg")
SAMPLES = 3


def usable_cores() -> int:
    """The cores this process may run on (its affinity set where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def running_elsewhere() -> int | None:
    """Processes running or ready to run besides this one, the fewest of a few
    samples (a process busy throughout, not one passing through); None where
    the OS does not say."""
    counts = []
    for sample in range(SAMPLES):
        if sample:
            time.sleep(0.001)
        try:
            fields = LOADAVG.read_text(encoding="ascii").split()
            counts.append(int(fields[3].split("/")[0]))
        except (OSError, IndexError, ValueError):
            return None
    return max(0, min(counts) - 1)


def busy_cores() -> int:
    """Cores the rest of the machine keeps busy: the processes running besides
    this one, else the one-minute load average rounded up (a half-busy core is
    not free for a worker); 0 where the OS says neither."""
    running = running_elsewhere()
    if running is not None:
        return running
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0
    return math.ceil(load - 0.25) if load > 0.25 else 0


@cache
def default_jobs() -> int:
    """Processes for a run: the usable cores the machine is not busy on (asked
    once per process: indexing and the roots' walks share the answer)."""
    return max(1, usable_cores() - busy_cores())
