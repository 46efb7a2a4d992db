"""What the GPU checks share: the device marks, the trial counts, the busy kernel.

Every check runs TRIALS times behind a `torch.cuda._sleep` kernel long enough to
hold the stream past any call it makes, prints its count (`pytest -m gpu -s`)
and, where `SYNCSCAN_GPU_TABLE` names a file, appends it there as one JSON line,
so `scripts/gpu_table.py` can tabulate a run without parsing pytest's output.
"""

from __future__ import annotations

import json
import os

import pytest

try:
    import torch
except ImportError:  # CI has no torch and no GPU
    torch = None

ON_DEVICE = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="no CUDA device"),
]

TRIALS = 20
SLEEP_CYCLES = 20_000_000  # about 10 ms at the H200's clock: far longer than any call here
N = 1 << 20

# What a count must be, as the table states it: every trial, none, at least one.
ALL, NONE, SOME = "all", "none", "at least one"


def meets(hits: int, expected: str, trials: int = TRIALS) -> bool:
    """Whether `hits` of `trials` is what `expected` (ALL, NONE, SOME) asks."""
    return {ALL: hits == trials, NONE: hits == 0, SOME: hits > 0}[expected]


def report(label: str, hits: int, expected: str = "", trials: int = TRIALS) -> int:
    """Print a check's count, record it for the table, and hand it back to assert on."""
    print(f"{label}: {hits}/{trials}")
    table = os.environ.get("SYNCSCAN_GPU_TABLE")
    if table:
        row = {"test": label, "trials": trials, "count": hits, "expected": expected}
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
    return hits


def observe(label: str, hits: int, expected: str, trials: int = TRIALS) -> bool:
    """Report a count with its expectation; True when it holds (the test asserts it)."""
    report(label, hits, expected, trials)
    return meets(hits, expected, trials)
