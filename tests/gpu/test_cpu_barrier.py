"""A CPU-group (gloo) barrier between processes orders no device work.

The torch pack lists `torch.distributed.barrier` and `all_reduce` under
`cpu_barriers`: on a gloo group they order host processes, so SYNC002 does not
count them as a device barrier (fixture `cpu_barrier_lookalike`). Two processes
share the device; each launches a long kernel, passes the barrier (and a gloo
all_reduce) with the other, and finds its own kernel still running.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpu_trials import ALL, ON_DEVICE, SLEEP_CYCLES, TRIALS, observe

pytestmark = ON_DEVICE

WORKER = Path(__file__).with_name("gloo_barrier_worker.py")
WORLD = 2


def test_a_gloo_barrier_returns_with_each_rank_kernel_still_running(tmp_path: Path) -> None:
    outs = [tmp_path / f"rank{rank}.json" for rank in range(WORLD)]
    init = tmp_path / "init"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), str(WORLD), str(init), str(out)]
            + [str(TRIALS), str(SLEEP_CYCLES * 5)]
        )
        for rank, out in enumerate(outs)
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    counts = [json.loads(out.read_text()) for out in outs]
    for rank, count in enumerate(counts):
        assert observe(f"rank {rank}: gloo barrier returned, kernel running", count["barrier"], ALL)
        label = f"rank {rank}: gloo all_reduce returned, kernel running"
        assert observe(label, count["all_reduce"], ALL)
