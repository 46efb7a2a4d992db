"""The default worker count: the usable cores the machine is not already busy on."""

from __future__ import annotations

import os

import pytest

from syncscan import workers


@pytest.mark.parametrize(
    ("cores", "load", "jobs"),
    [(2, 0.0, 2), (2, 0.2, 2), (2, 0.9, 1), (2, 1.0, 1), (2, 3.5, 1), (8, 2.1, 6), (8, 1.2, 7)],
)
def test_jobs_are_the_idle_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, jobs: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert workers.default_jobs() == jobs


def test_no_load_average_means_every_usable_core(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1, 2}, raising=False)
    monkeypatch.setattr(os, "getloadavg", unavailable)
    assert workers.default_jobs() == 3
