"""Step roots analysed in worker processes (syncscan/flow/parallel.py): the same
results, in order, with the workers' module demands replayed in the parent,
and a worker that dies leaves its units to the parent, never a missing root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import FIXTURES

from syncscan.apart import can_fork
from syncscan.flow import context, parallel
from syncscan.index import reads
from syncscan.report.json_report import render
from syncscan.runner import run

pytestmark = pytest.mark.skipif(not can_fork(), reason="no fork on this platform")


class FakeProgram:
    """The part of Program the workers use: demands made, and adopted."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.headers_used = False
        self.adopted: list[tuple[list[str], list[str], bool]] = []
        self.in_a_worker = False
        self.walkers_told = 0

    def walkers_started(self) -> None:
        self.walkers_told += 1

    def in_worker(self) -> None:
        self.in_a_worker = True

    def requested_in_order(self) -> list[str]:
        return list(self.requests)

    def parsed_in_worker(self) -> list[str]:
        return [r for r in self.requests if r.endswith("_c")]  # the parsed one

    def adopt(self, requested: list[str], parsed: list[str], headers_used: bool) -> None:
        self.adopted.append((requested, parsed, headers_used))


def test_partition_gives_each_unit_a_process_while_the_cores_can_share_them() -> None:
    assert parallel.partition([5, 1, 3, 1], 2) == [[0], [2], [1], [3]]
    assert parallel.partition([1, 1, 1], 2) == [[0], [1], [2]]
    assert parallel.partition([7], 4) == [[0]]


def test_partition_beyond_the_cap_balances_the_costliest_first() -> None:
    # Two cores: at most four processes; the six units fill the least loaded.
    assert parallel.partition([5, 1, 3, 1, 2, 2], 2) == [[0], [2], [1, 4], [3, 5]]
    assert parallel.partition([1] * 5, 1) == [[0, 2, 4], [1, 3]]


def test_results_come_back_in_root_order_with_each_roots_demands() -> None:
    program = FakeProgram()
    parent = os.getpid()

    def walk(root: str) -> tuple[str, bool]:
        program.requests.append(f"module_of_{root}")
        if root == "b":
            program.headers_used = True
        return root.upper(), os.getpid() != parent

    roots = ["a", "b", "c", "d"]
    results = parallel.run_in_workers(roots, [[0, 1], [2, 3]], walk, program)  # type: ignore[arg-type]
    assert [r[0] for r in results] == ["A", "B", "C", "D"]  # type: ignore[index]
    assert all(r[1] for r in results)  # type: ignore[index] - each walked in a worker
    assert program.adopted == [
        (["module_of_a"], ["module_of_c"], False),
        (["module_of_b"], ["module_of_c"], True),
        (["module_of_c"], ["module_of_c"], False),
        (["module_of_d"], ["module_of_c"], False),
    ]
    assert not program.in_a_worker  # only the workers' copies were told
    assert program.walkers_told == 1  # the cores are the walks' from the fork on


def test_a_worker_that_dies_leaves_its_roots_to_the_parent() -> None:
    program = FakeProgram()
    parent = os.getpid()

    def walk(root: str) -> tuple[str, bool]:
        if root == "dies" and os.getpid() != parent:
            os._exit(1)  # killed mid-walk (out of memory, say)
        return root, os.getpid() == parent

    roots = ["dies", "after", "x", "y", "z"]
    results = parallel.run_in_workers(roots, [[0, 1], [2], [3], [4]], walk, program)  # type: ignore[arg-type]
    # "dies" and "after" shared a worker: both walked again in the parent.
    assert results == [("dies", True), ("after", True), ("x", False), ("y", False), ("z", False)]


@pytest.mark.parametrize(
    ("fixture", "processes"),
    [
        ("stream_lookalikes/clean", 4),  # six runner classes, a root each: 2 per core
        ("second_entry_skips_guard/buggy", 0),  # two roots of one class: one unit
    ],
)
def test_a_fixture_reports_the_same_whether_its_roots_are_analysed_in_workers(
    fixture: str, processes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = run(FIXTURES / fixture, use_cache=False)
    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 0)
    forked = run(FIXTURES / fixture, use_cache=False, jobs=2)
    assert serial.stats["walk_processes"] == 0
    assert forked.stats["walk_processes"] == processes

    def contract(result) -> dict:
        data = json.loads(render(result, result.findings))
        return {k: data[k] for k in ("findings", "diagnostics", "stats")}

    assert contract(forked) == contract(serial)
    assert serial.stats["step_roots"] >= 2


def test_a_cold_run_with_walk_workers_leaves_every_summary_in_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The parent holds back the summaries it parses and writes them once its
    walk workers have forked (or at its end); workers write theirs at once:
    the next run parses nothing."""
    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 0)
    cache = tmp_path / "cache"
    cold = run(FIXTURES / "stream_lookalikes/clean", cache_dir=cache, jobs=2)
    assert cold.stats["walk_processes"] == 4 and cold.stats["parsed"] > 0
    warm = run(FIXTURES / "stream_lookalikes/clean", cache_dir=cache, jobs=2)
    assert warm.stats["parsed"] == 0
    assert warm.stats["cache_hits"] == cold.stats["summarised"]


def test_the_summary_items_a_worker_reads_are_the_parents_to_record() -> None:
    """Each unit's reads (reads.py) come back with it and join the parent's:
    the run record says what the findings came from."""
    program = FakeProgram()

    def walk(root: str) -> str:
        assert reads.LOG is not None
        reads.LOG.add(f"read by {root}")
        return root

    reads.start()
    try:
        reads.LOG.add("read before the fork")  # type: ignore[union-attr]
        parallel.run_in_workers(["a", "b", "c"], [[0, 2], [1]], walk, program)  # type: ignore[arg-type]
    finally:
        read = reads.stop()
    assert read == {"read before the fork", "read by a", "read by b", "read by c"}
