"""The default worker count: the usable cores the machine is not already busy on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncscan import workers


@pytest.mark.parametrize(
    ("cores", "load", "jobs"),
    [(2, 0.0, 2), (2, 0.2, 2), (2, 0.9, 1), (2, 1.0, 1), (2, 3.5, 1), (8, 2.1, 6), (8, 1.2, 7)],
)
def test_without_a_running_count_jobs_are_the_cores_the_load_average_leaves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int, load: float, jobs: int
) -> None:
    monkeypatch.setattr(workers, "LOADAVG", tmp_path / "absent")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    workers.default_jobs.cache_clear()
    assert workers.default_jobs() == jobs


@pytest.mark.parametrize(
    ("cores", "samples", "jobs"),
    [
        (2, ["1/78", "1/78", "1/78"], 2),  # only this process: an earlier run's load is gone
        (2, ["2/78", "2/78", "2/78"], 1),  # a hog
        (2, ["2/78", "1/78", "2/78"], 2),  # a process passing through
        (8, ["4/90", "5/90", "4/90"], 5),
        (2, ["6/90", "6/90", "6/90"], 1),  # never fewer than one
    ],
)
def test_jobs_are_the_cores_nothing_else_is_running_on(
    monkeypatch: pytest.MonkeyPatch, cores: int, samples: list[str], jobs: int
) -> None:
    lines = iter(f"0.00 1.50 1.00 {s} 4242\n" for s in samples)
    monkeypatch.setattr(workers, "LOADAVG", _Lines(lines))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # not consulted
    workers.default_jobs.cache_clear()
    assert workers.default_jobs() == jobs


class _Lines:
    """A /proc/loadavg that reads differently each time."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines

    def read_text(self, encoding: str) -> str:
        return next(self._lines)


def test_no_load_average_means_every_usable_core(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(workers, "LOADAVG", Path("/nonexistent/loadavg"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1, 2}, raising=False)
    monkeypatch.setattr(os, "getloadavg", unavailable)
    workers.default_jobs.cache_clear()
    assert workers.default_jobs() == 3
