"""Quiescence points' results kept from one run for the next
(syncscan/flow/quiescence.py, syncscan/flow/stored_results.py): an edit the
points' walks never read takes their results, with their lines where a move
sent them; an edit they read, a change to what their walker assumes, or a
damaged store makes them again; and every result is a fresh analysis's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import add_text, combined_project, damage
from test_reuse import checked
from test_stored import _insert_statement, _same_as_fresh

from syncscan.flow.quiescence import QuiescenceAnalyzer, QuiescenceResult
from syncscan.index import reads
from syncscan.packs import QuiescenceSpec
from syncscan.runner import RunResult

CORE = Path("engine") / "core.py"
RUNNER = Path("engine") / "runner.py"


def _recorded_reads(cache: Path) -> dict:
    """The items the last run with `cache` recorded reading (reuse.py)."""
    return json.loads((cache / "reads.json").read_text(encoding="utf-8"))["read"]


def _sync002(result: RunResult) -> list[tuple[str, int]]:
    return [(f.location.path, f.location.line) for f in result.findings if f.code == "SYNC002"]


def test_an_edit_the_points_never_read_takes_their_results(tmp_path: Path) -> None:
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    assert first.stats["points_reused"] == 0
    assert first.stats["quiescence_points"] == 1
    assert _sync002(first) == [("engine/core.py", 36)]

    _insert_statement(project / RUNNER, "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["findings_reused"] == 0
    assert again.stats["points_reused"] == 1
    assert _sync002(again) == [("engine/core.py", 36)]
    _same_as_fresh(again, project)
    # What the kept result read is read again: the next edit to it is seen.
    checked(project, tmp_path / "fresh")
    assert _recorded_reads(cache) == _recorded_reads(tmp_path / "fresh")

    # The pause itself waits now: its kept result no longer holds.
    _insert_statement(project / CORE, "EngineCore.pause", "torch.cuda.synchronize()")
    fixed = checked(project, cache)
    assert fixed.stats["points_reused"] == 0
    assert _sync002(fixed) == []
    _same_as_fresh(fixed, project)


def test_a_point_whose_lines_moved_is_carried_where_they_went(tmp_path: Path) -> None:
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    core = project / CORE
    core.write_text("# moved\n\n\n" + core.read_text(encoding="utf-8"), encoding="utf-8")
    _insert_statement(project / RUNNER, "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["findings_reused"] == 0
    assert again.stats["points_reused"] == 1
    assert _sync002(again) == [("engine/core.py", 39)]
    _same_as_fresh(again, project)


def test_a_change_to_what_the_points_walker_assumes_makes_them_again(tmp_path: Path) -> None:
    """The walker's configuration holds the attributes the step path assigns
    (modes.py): a point kept under another configuration is analysed again."""
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_statement(project / RUNNER, "Runner.execute_model", "self.paused = True")
    again = checked(project, cache)
    assert again.stats["points_reused"] == 0
    _same_as_fresh(again, project)


def test_a_point_taken_reads_what_analysing_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taken, a point notes the items its analysis read (reads.py), so the
    record says what the findings came from, item by item."""
    read: list[set[str]] = []
    analyse = QuiescenceAnalyzer.analyse

    def recorded(self: QuiescenceAnalyzer, spec: QuiescenceSpec) -> QuiescenceResult:
        outer = reads.push()
        try:
            return analyse(self, spec)
        finally:
            read.append(set(reads.pop(outer)))

    monkeypatch.setattr(QuiescenceAnalyzer, "analyse", recorded)
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_statement(project / RUNNER, "Runner.execute_model")
    assert checked(project, cache).stats["points_reused"] == 1
    checked(project, tmp_path / "fresh")
    made, taken, fresh = read
    assert made and taken == fresh == made


@pytest.mark.parametrize(
    "how",
    [
        "truncate",
        "garbage",
        lambda data: data["rows"][0].__setitem__(1, [10**6]),  # an item outside the table
        lambda data: data["rows"][0].__setitem__(2, add_text(data, '[[["l",1]],[0]]')),
    ],
    ids=["truncate", "garbage", "item-ids", "not-a-result"],  # the last: a list of one
)
def test_damaged_kept_points_are_made_again(tmp_path: Path, how) -> None:  # type: ignore[no-untyped-def]
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    if callable(how):
        damage(cache / "quiescence.json", "reshape", how)
    else:
        damage(cache / "quiescence.json", how, lambda data: None)
    _insert_statement(project / RUNNER, "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["points_reused"] == 0
    _same_as_fresh(again, project)


def test_points_walked_apart_are_those_walked_here_and_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With processes to use, the points are walked in a forked process while
    the step's roots are walked (context.py `_start_points_apart`): the same
    findings, notes, items read and results kept for the next run as a run
    that walks them after the roots."""
    from syncscan.flow import context
    from syncscan.runner import run

    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 0)
    analyse = QuiescenceAnalyzer.analyse
    walked_by: list[Path] = []

    def noted(self: QuiescenceAnalyzer, spec: QuiescenceSpec) -> QuiescenceResult:
        walked_by.append(tmp_path / f"walked-by-{os.getpid()}")
        walked_by[-1].touch()
        return analyse(self, spec)

    monkeypatch.setattr(QuiescenceAnalyzer, "analyse", noted)
    project = combined_project(tmp_path / "project")
    apart = run(project, cache_dir=tmp_path / "apart", reuse_findings=True, jobs=2)
    here = run(project, cache_dir=tmp_path / "here", reuse_findings=True, jobs=1)
    walkers = {p.name for p in tmp_path.glob("walked-by-*")}
    assert f"walked-by-{os.getpid()}" in walkers and len(walkers) == 2  # here, and apart
    assert _sync002(apart) == _sync002(here) == [("engine/core.py", 36)]
    assert apart.notes == here.notes
    assert _recorded_reads(tmp_path / "apart") == _recorded_reads(tmp_path / "here")
    # What the forked process kept is the next run's to take.
    _insert_statement(project / RUNNER, "Runner.execute_model")
    again = run(project, cache_dir=tmp_path / "apart", reuse_findings=True, jobs=1)
    assert again.stats["points_reused"] == 1
    assert _sync002(again) == [("engine/core.py", 36)]


def test_points_kept_whole_are_taken_here_with_processes_to_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where every point's result is kept and no change touched it, a run with
    processes to use takes them in the main process: forking one for them
    cost more than taking them (context.py `_start_points_apart`)."""
    from syncscan.flow import context
    from syncscan.runner import run

    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 0)
    analyse = QuiescenceAnalyzer.analyse

    def noted(self: QuiescenceAnalyzer, spec: QuiescenceSpec) -> QuiescenceResult:
        (tmp_path / f"analysed-in-{os.getpid()}").touch()
        return analyse(self, spec)

    monkeypatch.setattr(QuiescenceAnalyzer, "analyse", noted)
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    first = run(project, cache_dir=cache, reuse_findings=True, jobs=2)
    analysed_in = {int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("analysed-in-*")}
    assert analysed_in and os.getpid() not in analysed_in  # walked apart: nothing kept yet
    for marker in tmp_path.glob("analysed-in-*"):
        marker.unlink()
    _insert_statement(project / RUNNER, "Runner.execute_model")
    again = run(project, cache_dir=cache, reuse_findings=True, jobs=2)
    assert again.stats["points_reused"] == 1
    assert {p.name for p in tmp_path.glob("analysed-in-*")} == {f"analysed-in-{os.getpid()}"}
    assert _sync002(again) == _sync002(first) == [("engine/core.py", 36)]
    _same_as_fresh(again, project)
