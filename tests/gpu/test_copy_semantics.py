"""The torch pack's copy and wait semantics, observed on a CUDA device.

Each test puts a long kernel (`torch.cuda._sleep`) on the current stream, makes
one call, and looks at what the host can see right after it returns: whether
the stream is idle, or which value the device copied. Counts over TRIALS are
printed (`pytest -m gpu -s`). The pack's rows these back: a blocking copy
synchronizes its stream (a host wait, never an unwaited launch); a
`non_blocking` copy from pinned memory reads its source later and one into
pinned memory lands later; from pageable memory the source is staged before
the call returns; `.cpu()`, `.tolist()`, `.item()` and `event.synchronize()`
wait; a round-robin pool of depth d is safe exactly while at most d - 1 steps
are in flight when a slot is rewritten.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gpu_trials import ALL, NONE, ON_DEVICE, SLEEP_CYCLES, SOME, TRIALS, N, observe, torch

pytestmark = ON_DEVICE


def _count(label: str, trial: Callable[[], bool], expected: str) -> bool:
    """Whether the count of trials `trial` returned True for, each behind a busy
    stream, is `expected`; the count is reported either way."""
    hits = 0
    for _ in range(TRIALS):
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        hits += bool(trial())
    torch.cuda.synchronize()
    return observe(label, hits, expected)


def _idle() -> bool:
    return torch.cuda.current_stream().query()


@pytest.mark.parametrize("pinned", [False, True])
def test_a_blocking_h2d_copy_returns_with_its_stream_idle(pinned: bool) -> None:
    src = torch.ones(N, pin_memory=pinned)
    dst = torch.empty(N, device="cuda")

    def trial() -> bool:
        dst.copy_(src)
        return _idle()

    assert _count(f"blocking H2D (pinned={pinned}): stream idle at return", trial, ALL)


def test_a_blocking_d2h_copy_cpu_tolist_and_item_return_with_the_stream_idle() -> None:
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

    def item() -> bool:
        src[0].item()
        return _idle()

    assert _count("blocking D2H: stream idle at return", copy_back, ALL)
    assert _count(".cpu(): stream idle at return", to_cpu, ALL)
    assert _count(".tolist(): stream idle at return", to_list, ALL)
    assert _count(".item(): stream idle at return", item, ALL)


def test_an_event_recorded_then_synchronized_drains_the_stream() -> None:
    event = torch.cuda.Event()

    def trial() -> bool:
        event.record()
        event.synchronize()
        return _idle()

    assert _count("record; synchronize: stream idle", trial, ALL)


@pytest.mark.parametrize(("pinned", "expected"), [(True, ALL), (False, NONE)])
def test_a_non_blocking_h2d_copy_reads_pinned_memory_late_and_stages_pageable(
    pinned: bool, expected: str
) -> None:
    src = torch.zeros(N, pin_memory=pinned)
    dst = torch.empty(N, device="cuda")

    def trial() -> bool:
        src.fill_(1.0)
        dst.copy_(src, non_blocking=True)
        src.fill_(2.0)  # the host rewrites the source right after the call
        torch.cuda.synchronize()
        return dst[0].item() == 2.0  # the copy read the rewritten value

    label = f"non_blocking H2D (pinned={pinned}): device got the later rewrite"
    assert _count(label, trial, expected)


def test_an_event_synchronized_after_a_pinned_copy_orders_the_rewrite_after_it() -> None:
    """The SYNC001/SYNC003 remedy: record after the copy, synchronize before the write."""
    src = torch.zeros(N, pin_memory=True)
    dst = torch.empty(N, device="cuda")
    event = torch.cuda.Event()

    def trial() -> bool:
        src.fill_(1.0)
        dst.copy_(src, non_blocking=True)
        event.record()
        event.synchronize()
        src.fill_(2.0)
        torch.cuda.synchronize()
        return dst[0].item() == 2.0

    assert _count("pinned H2D; record; synchronize; rewrite: device got it", trial, NONE)


def test_a_non_blocking_d2h_copy_into_pinned_memory_lands_later() -> None:
    src = torch.full((N,), 7.0, device="cuda")
    dst = torch.zeros(N, pin_memory=True)

    def trial() -> bool:
        dst.zero_()
        dst.copy_(src, non_blocking=True)
        return dst[0].item() == 0.0  # the host reads before the copy landed

    assert _count("non_blocking D2H into pinned: not landed at return", trial, SOME)


DEPTH = 2
STEPS = 8


@pytest.mark.parametrize(("in_flight", "expected"), [(0, NONE), (1, NONE), (2, SOME)])
def test_a_round_robin_pool_is_safe_while_fewer_steps_than_its_depth_are_in_flight(
    in_flight: int, expected: str
) -> None:
    """Step i writes slot i % DEPTH, copies it non_blocking behind a kernel and
    records an event; before writing, the host waits for step i - 1 - in_flight,
    so at most `in_flight` earlier steps are still queued. A trial is corrupted
    when some step's device copy holds a later step's values."""
    slots = [torch.zeros(N, pin_memory=True) for _ in range(DEPTH)]
    dst = torch.empty(STEPS, N, device="cuda")
    events = [torch.cuda.Event() for _ in range(STEPS)]
    corrupted = 0
    for _ in range(TRIALS):
        torch.cuda.synchronize()
        for i in range(STEPS):
            waited = i - 1 - in_flight
            if waited >= 0:
                events[waited].synchronize()
            slots[i % DEPTH].fill_(float(i + 1))
            torch.cuda._sleep(SLEEP_CYCLES // 10)
            dst[i].copy_(slots[i % DEPTH], non_blocking=True)
            events[i].record()
        torch.cuda.synchronize()
        seen = dst[:, 0].tolist()
        corrupted += seen != [float(i + 1) for i in range(STEPS)]
    label = f"pool depth {DEPTH}, {in_flight} steps in flight at a write: corrupted"
    assert observe(label, corrupted, expected)


class _HostArray:
    """A pinned tensor's memory described as device memory: with unified
    addressing a CUDA tensor over its pointer reads host memory in place (the
    packs' `uva_view_functions` make such views)."""

    def __init__(self, t: torch.Tensor) -> None:
        self.owner = t
        self.__cuda_array_interface__ = {
            "shape": tuple(t.shape),
            "typestr": "<i8",
            "data": (t.data_ptr(), False),
            "version": 2,
        }


@pytest.mark.parametrize("non_blocking", [False, True])
def test_a_copy_from_a_device_view_of_pinned_memory_reads_it_late(non_blocking: bool) -> None:
    """A device-to-device copy is queued whatever `non_blocking` says: from a UVA
    view it reads the pinned memory when it runs (walk.py `_uva_copy`)."""
    src = torch.zeros(N, dtype=torch.int64, pin_memory=True)
    view = torch.as_tensor(_HostArray(src), device="cuda")
    dst = torch.empty(N, dtype=torch.int64, device="cuda")

    def trial() -> bool:
        src.fill_(1)
        dst.copy_(view, non_blocking=non_blocking)
        src.fill_(2)  # the host rewrites the pinned memory right after the call
        torch.cuda.synchronize()
        return dst[0].item() == 2

    label = f"copy_ from a UVA view (non_blocking={non_blocking}): device got the later rewrite"
    assert _count(label, trial, ALL)


def test_a_copy_to_the_host_waits_for_its_own_stream_only() -> None:
    """`.cpu()` copies on the current stream and waits for it alone: a write
    another stream has queued is not waited for (stream_effects.py
    `on_copy_to_host`)."""
    side = torch.cuda.Stream()
    src = torch.zeros(N, device="cuda")

    def trial() -> bool:
        torch.cuda.synchronize()  # the current stream idle: only the side one is busy
        src.zero_()
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(SLEEP_CYCLES)
            src.fill_(1.0)
        return src.cpu()[0].item() == 0.0  # read before the side stream's write

    assert _count(".cpu() while another stream writes: read the old value", trial, ALL)
