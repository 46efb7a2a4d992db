"""What the GPU checks share: the device marks, the trial counts, the busy kernel.

Every check runs TRIALS times behind a `torch.cuda._sleep` kernel long enough to
hold the stream past any call it makes, and prints its count (`pytest -m gpu -s`).
"""

from __future__ import annotations

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


def report(label: str, hits: int) -> int:
    """Print a check's count and hand it back to assert on."""
    print(f"{label}: {hits}/{TRIALS}")
    return hits
