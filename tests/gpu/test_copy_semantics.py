"""The torch pack's copy and wait semantics, observed on a CUDA device.

Each test puts a long kernel (`torch.cuda._sleep`) on the current stream, makes
one call, and looks at what the host can see right after it returns: whether
the stream is idle, or which value the device copied. Counts over TRIALS are
printed (`pytest -m gpu -s`). The pack's rows these back: a blocking copy
synchronizes its stream (a host wait, never an unwaited launch); a
`non_blocking` copy from pinned memory reads its source later and one into
pinned memory lands later; from pageable memory the source is staged before
the call returns; `.cpu()`, `.tolist()` and `event.synchronize()` wait.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gpu_trials import ON_DEVICE, SLEEP_CYCLES, TRIALS, N, report, torch

pytestmark = ON_DEVICE


def _count(label: str, trial: Callable[[], bool]) -> int:
    """How many of TRIALS `trial` returned True for, each behind a busy stream."""
    hits = 0
    for _ in range(TRIALS):
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        hits += bool(trial())
    torch.cuda.synchronize()
    return report(label, hits)


def _idle() -> bool:
    return torch.cuda.current_stream().query()


@pytest.mark.parametrize("pinned", [False, True])
def test_a_blocking_h2d_copy_returns_with_its_stream_idle(pinned: bool) -> None:
    src = torch.ones(N, pin_memory=pinned)
    dst = torch.empty(N, device="cuda")

    def trial() -> bool:
        dst.copy_(src)
        return _idle()

    assert _count(f"blocking H2D (pinned={pinned}) idle", trial) == TRIALS


def test_a_blocking_d2h_copy_and_cpu_return_with_the_stream_idle() -> None:
    src = torch.ones(N, device="cuda")
    dst = torch.empty(N)

    def copy_back() -> bool:
        dst.copy_(src)
        return _idle()

    def to_cpu() -> bool:
        src.cpu()
        return _idle()

    def to_list() -> bool:
        src[:4].tolist()
        return _idle()

    assert _count("blocking D2H idle", copy_back) == TRIALS
    assert _count(".cpu() idle", to_cpu) == TRIALS
    assert _count(".tolist() idle", to_list) == TRIALS


def test_an_event_recorded_then_synchronized_drains_the_stream() -> None:
    event = torch.cuda.Event()

    def trial() -> bool:
        event.record()
        event.synchronize()
        return _idle()

    assert _count("record; synchronize idle", trial) == TRIALS


@pytest.mark.parametrize(("pinned", "reads_late"), [(True, True), (False, False)])
def test_a_non_blocking_h2d_copy_reads_pinned_memory_late_and_stages_pageable(
    pinned: bool, reads_late: bool
) -> None:
    src = torch.zeros(N, pin_memory=pinned)
    dst = torch.empty(N, device="cuda")

    def trial() -> bool:
        src.fill_(1.0)
        dst.copy_(src, non_blocking=True)
        src.fill_(2.0)  # the host rewrites the source right after the call
        torch.cuda.synchronize()
        return dst[0].item() == 2.0  # the copy read the rewritten value

    late = _count(f"non_blocking H2D (pinned={pinned}) read the rewrite", trial)
    assert (late > 0) == reads_late


def test_a_non_blocking_d2h_copy_into_pinned_memory_lands_later() -> None:
    src = torch.full((N,), 7.0, device="cuda")
    dst = torch.zeros(N, pin_memory=True)

    def trial() -> bool:
        dst.zero_()
        dst.copy_(src, non_blocking=True)
        return dst[0].item() == 0.0  # the host reads before the copy landed

    assert _count("non_blocking D2H not landed at return", trial) > 0
