"""Callee walks kept from one run for the next (syncscan/flow/stored.py): after a
statement is inserted into a function a walk read, a check takes the kept walks
the edit left alone, and what it finds is what a fresh analysis finds, field by
field; walks that read the edited function, or any function holding them, are
walked again."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from helpers import (
    BUGGY,
    FIXTURES,
    SHAPES,
    add_text,
    copy_project,
    damage,
    without_root_resume,
    write_project,
)
from test_reuse import _functions_read, checked

from syncscan.findings import finding_to_data
from syncscan.flow import step, stored
from syncscan.flow import walk as walk_module
from syncscan.flow.memo import CalleeWalk
from syncscan.flow.step import RulesState, StepAnalyzer, for_rules
from syncscan.flow.stored import StoredWalks
from syncscan.index import store_files
from syncscan.index.cache import SummaryCache
from syncscan.report.json_report import VOLATILE_STATS
from syncscan.runner import RunResult, run

PROBE = "_syncscan_probe = 0"


def _insert_statement(path: Path, function: str, text: str = PROBE) -> None:
    """`text` as the first statement of `function` in `path` (`function` named
    by its qualname's tail: "Class.method", "helper", ...)."""
    source = path.read_text(encoding="utf-8")
    body: list[ast.stmt] = ast.parse(source).body
    parts = [p for p in function.split(".") if p != "<locals>"]
    for start in range(len(parts)):  # skip the module's dotted name
        node = _named(body, parts[start:])
        if node is not None:
            first = node.body[0]
            lines = source.splitlines(keepends=True)
            lines.insert(first.lineno - 1, " " * first.col_offset + text + "\n")
            path.write_text("".join(lines), encoding="utf-8")
            return
    raise AssertionError(f"no {function} in {path}")


def _named(body: list[ast.stmt], names: list[str]) -> ast.FunctionDef | None:
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name != names[0]:
                continue
            if len(names) == 1:
                return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None
            return _named(node.body, names[1:])
    return None


def _same_as_fresh(result: RunResult, project: Path) -> None:
    fresh = run(project, use_cache=False)
    assert [finding_to_data(f) for f in result.findings] == [
        finding_to_data(f) for f in fresh.findings
    ]
    assert result.diagnostics == fresh.diagnostics
    assert result.notes == fresh.notes
    # The run's inputs too: a kept walk loads the modules walking it would have.
    assert _stable_stats(result) == _stable_stats(fresh)
    assert result.analysis is not None and fresh.analysis is not None
    # SYNC005's regions: those a kept walk entered are entered again.
    assert result.analysis.sanctioned_regions == fresh.analysis.sanctioned_regions
    # And every root's paths, state by state.
    assert _paths(result) == _paths(fresh, like=result)
    # The call graph, built from kept visits (stored_crawl.py), in the same order.
    assert _graph(result) == _graph(fresh)
    # The quiescence points' results, kept ones included (quiescence.py).
    assert result.analysis.quiescence_results == fresh.analysis.quiescence_results


def _graph(result: RunResult) -> tuple:
    assert result.analysis is not None
    graph = result.analysis.callgraph
    return (
        list(graph.graph.nodes.items()),
        graph.graph.edges,
        graph.assigned_attrs,
        graph.chain_assigned,
        graph.none_tested,
        graph.unresolved_sites,
        graph.resolved_calls,
        graph.unresolved_calls,
        graph.incomplete,
    )


def _stable_stats(result: RunResult) -> dict:
    return {k: v for k, v in result.stats.items() if k not in VOLATILE_STATS}


def _paths(result: RunResult, like: RunResult | None = None) -> list[tuple]:
    """Each root's paths; where `like`'s are those of a class analysis taken
    from the cache (kept as the rules read them: step.py `RulesState`), as
    the rules read them too."""
    assert result.analysis is not None
    found = []
    for k, r in enumerate(result.analysis.step_results):
        paths = r.paths
        if like is not None and _for_rules(like, k):
            paths = for_rules((paths, None, (), {}))[0]
        found.append((r.root.name, paths, r.incomplete))
    return found


def _for_rules(result: RunResult, k: int) -> bool:
    """Whether the k-th root's paths are those of a class analysis taken whole."""
    assert result.analysis is not None
    return any(type(p.state) is RulesState for p in result.analysis.step_results[k].paths)


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_statement_edit_finds_what_a_fresh_analysis_finds(project: Path, tmp_path: Path) -> None:
    copy = copy_project(project, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(copy, cache)
    for module, function in _functions_read(cache)[:4]:
        path = first.project.modules[module]
        _insert_statement(path, function)
        again = checked(copy, cache)
        assert again.stats["findings_reused"] == 0, function
        _same_as_fresh(again, copy)


def _walks(method: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, CalleeWalk]:
    """The walks the store is told were taken ("took") or is given to keep
    ("keep": made and kept) from now on, by their key."""
    found: dict[str, CalleeWalk] = {}
    original = getattr(StoredWalks, method)

    def took(self, walk):  # type: ignore[no-untyped-def]
        found[walk.__dict__[stored.KEY]] = walk
        return original(self, walk)

    def keep(self, frame, start, walk, nested, function):  # type: ignore[no-untyped-def]
        kept = original(self, frame, start, walk, nested, function)
        if kept:
            found[walk.__dict__[stored.KEY]] = walk
        return kept

    monkeypatch.setattr(StoredWalks, method, took if method == "took" else keep)
    return found


def test_a_walk_whose_sync_moved_away_from_its_marker_is_walked_again(tmp_path: Path) -> None:
    """A line added between a marker comment and the host sync it sanctions
    moves the sync, not the comment: the kept walk that found the sync marked
    is walked again, and the sync is reported as a fresh analysis reports it."""
    project = copy_project(FIXTURES / "hidden_sync_item_deep" / "marked", tmp_path / "project")
    sampler = project / "engine" / "sampler.py"
    sync = "        return self.finished_count.item()"
    marker = "# gpu-sync-ok: one flag read per step, measured"
    source = sampler.read_text(encoding="utf-8")
    above = source.replace(f"{sync}  {marker}", f"        {marker}\n{sync}")
    assert above != source
    sampler.write_text(above, encoding="utf-8")
    cache = tmp_path / "cache"
    assert checked(project, cache).findings == []
    sampler.write_text(above.replace(sync, "        # a note\n" + sync), encoding="utf-8")
    again = checked(project, cache)
    assert [(f.code, f.location.path) for f in again.findings] == [("SYNC005", "engine/sampler.py")]
    _same_as_fresh(again, project)


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_walks_whose_lines_moved_are_carried_to_what_walking_again_makes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file gains a line at its top, and one function read a statement:
    each kept walk the check takes read what moved, so it is carried to where
    its lines went (relocate.py), and it is the walk a fresh analysis makes
    under its key, field by field. This holds every form in which a state
    names a line to the list `StateCarrier` carries."""
    _taken_as_fresh_makes(project, tmp_path, monkeypatch, moved=True)


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_walks_near_the_depth_limit_are_taken_where_walking_gives_them(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a depth limit of two levels, most walks are cut short (never kept)
    or near it: each walk taken is the one a fresh analysis makes under its
    key, field by field."""
    monkeypatch.setattr(walk_module, "MAX_DEPTH", 2)
    _taken_as_fresh_makes(project, tmp_path, monkeypatch, moved=False)


def _taken_as_fresh_makes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moved: bool
) -> dict[str, CalleeWalk]:
    """After a statement in the last function the first check read (and a
    line at the top of every file, where `moved`), the walks a check takes are
    those a fresh analysis makes, and so are its paths and findings."""
    copy = copy_project(project, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(copy, cache)
    module, function = _functions_read(cache)[-1]
    for path in sorted(copy.rglob("*.py")) if moved else ():
        path.write_text("# moved\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    _insert_statement(first.project.modules[module], function)
    taken = _walks("took", monkeypatch)
    again = checked(copy, cache)
    made = _walks("keep", monkeypatch)
    fresh = checked(copy, tmp_path / "fresh")  # an empty cache: every walk made
    assert [finding_to_data(f) for f in again.findings] == [
        finding_to_data(f) for f in fresh.findings
    ]
    assert _paths(again) == _paths(fresh, like=again)
    assert again.stats["walks_reused"] == len(taken)
    for key, walk in taken.items():
        assert _as_kept(walk) == _as_kept(made[key]), walk.functions
    return taken


def _as_kept(walk: CalleeWalk, work: bool = True) -> CalleeWalk:
    """The walk as the store keeps it: without its items and functions (rows
    of their own); and without its work where not `work`: that is what it
    cost where it was made (memo hits cost less; step.py `NEAR_BUDGET`
    allows for it), so another order of walks counts it otherwise."""
    found = dataclasses.replace(walk, items=frozenset(), functions=frozenset())
    return found if work else dataclasses.replace(found, work=0)


def _taken(project: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RunResult, set]:
    """A check, and the functions whose kept walks it took."""
    taken: set[str] = set()
    took = StoredWalks.took

    def noting(self, walk):  # type: ignore[no-untyped-def]
        taken.add(self._rows[walk.__dict__[stored.KEY]][9].partition("|")[0])  # its function
        return took(self, walk)

    monkeypatch.setattr(StoredWalks, "took", noting)
    result = checked(project, cache)
    monkeypatch.setattr(StoredWalks, "took", took)
    return result, taken


def test_kept_walks_are_taken_and_an_edit_walks_again_only_what_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step root edited: the walks of its callees are taken. A callee
    edited: its walk is walked again, the walks nested in it are taken."""
    without_root_resume(monkeypatch)
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    assert first.stats["walks_reused"] == 0  # nothing kept yet
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    root_edited, taken = _taken(project, cache, monkeypatch)
    assert root_edited.stats["walks_reused"] == len(taken) > 0
    assert "engine.inputs.StagedInputs.stage" in taken
    _same_as_fresh(root_edited, project)
    _insert_statement(project / "engine" / "inputs.py", "StagedInputs.stage")
    callee_edited, taken_after = _taken(project, cache, monkeypatch)
    assert "engine.inputs.StagedInputs.stage" not in taken_after
    assert "engine.pool.SlotPool.write" in taken_after  # the walk nested in it: taken
    _same_as_fresh(callee_edited, project)


# A helper class with a pinned buffer and a device tensor, its methods after.
HELPER_CLASS = """
import torch


class Helper:
    def __init__(self):
        self.buf = torch.zeros(8, pin_memory=True)
        self.dev = torch.zeros(8, device="cuda")
"""
HELPER = (
    HELPER_CLASS
    + """
    def g(self):
        self.h(False)

    def h(self, again):
        if again:
            self.g()
        self.dev.copy_(self.buf, non_blocking=True)
"""
)
# A step class over the helper, its step's body after.
RUNNER_CLASS = """
from engine.helper import Helper


class Runner:
    def __init__(self):
        self.helper = Helper()

    def execute_model(self, batch):
"""
RUNNER = (
    RUNNER_CLASS
    + """        self.helper.g()
        self.helper.h(True)
        return None
"""
)
ONE_ROOT = """
[pack]
name = "one"
[[step_root]]
class = "engine.runner.Runner"
method = "execute_model"
"""


def test_a_walk_made_from_a_memoised_one_is_kept_only_where_walking_gives_the_same(
    tmp_path: Path,
) -> None:
    """The step walks `g` (which runs `h(False)`), then `h(True)`, which calls
    `g` again: the memoised walk of `g` is reused there, though walking `g`
    inside `h` would cut its call of `h` as a recursion. The walk of
    `h(True)` is what this order made, so no run keeps it: once the step calls
    `h(True)` first, the walks are a fresh analysis's, path by path."""
    project = write_project(
        tmp_path / "project",
        {"engine/__init__.py": "", "engine/helper.py": HELPER, "engine/runner.py": RUNNER},
        ONE_ROOT,
    )
    cache = tmp_path / "cache"
    checked(project, cache)
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    first, second = "        self.helper.g()\n", "        self.helper.h(True)\n"
    assert first + second in text
    runner.write_text(text.replace(first + second, second + first), encoding="utf-8")
    again = checked(project, cache)
    # `g` is met first inside `h(True)`, where its kept walk runs `h`, active
    # there: it is walked again, not taken.
    assert again.stats["walks_reused"] == 0
    _same_as_fresh(again, project)


DEEP = (
    HELPER_CLASS
    + """
    def a(self):
        self.b()

    def b(self):
        self.c()

    def c(self):
        self.d()

    def d(self):
        self.e()

    def e(self):
        self.dev.copy_(self.buf, non_blocking=True)

    def via(self):
        self.a()

    def x(self):
        self.y()

    def y(self):
        self.c()
"""
)
DEEP_RUNNER = (
    RUNNER_CLASS
    + """{calls}
        return None

    def sample_tokens(self, batch):
        self.helper.y()
        return None
"""
)
SECOND_ROOT = """
[[step_root]]
class = "engine.runner.Runner"
method = "sample_tokens"
"""
# Each a root body after the last: a walk the depth limit cut short is made at
# one depth and met first at another, reused inside a walk made later, or held
# in a walk taken whole where another kept walk runs its function.
ORDERS = [
    ["y"], ["via", "y"], ["via"], ["via", "y"], ["y", "via"], ["a", "y"], ["b", "a"], ["a"],
    ["y"], ["a", "y"], ["via", "b"], ["x", "a"], ["y", "a"], ["c", "via", "y"], ["a", "x"],
    ["b", "x", "via"], ["via", "x", "a", "b"],
]  # fmt: skip


@pytest.mark.parametrize("limit", [2, 3, 5])
def test_walks_around_the_depth_limit_are_taken_only_where_walking_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """With a depth limit of a few levels, the walk of `c` called down the
    chain from `a` is cut short where `c` called from the step is not, and `y`
    reuses `c`'s memoised walk from wherever it was made first (a second root
    walks `y` alone). After each reordering of the step's calls, the walks a
    check takes are those a fresh analysis makes under their keys, field by
    field, and so are its paths; none was cut short (stored.py keeps none)."""
    monkeypatch.setattr(walk_module, "MAX_DEPTH", limit)
    project = tmp_path / "project"
    runner = project / "engine" / "runner.py"
    cache = tmp_path / "cache"
    truncated_taken = 0
    for n, order in enumerate(ORDERS):
        calls = "\n".join(f"        self.helper.{name}()" for name in order)
        files = {"engine/__init__.py": "", "engine/helper.py": DEEP}
        if n == 0:
            write_project(project, {**files, "engine/runner.py": ""}, ONE_ROOT + SECOND_ROOT)
        runner.write_text(DEEP_RUNNER.format(calls=calls), encoding="utf-8")
        taken = _walks("took", monkeypatch)
        again = checked(project, cache)
        made = _walks("keep", monkeypatch)
        fresh = checked(project, tmp_path / f"fresh{n}")
        assert _paths(again) == _paths(fresh, like=again), order
        assert [finding_to_data(f) for f in again.findings] == [
            finding_to_data(f) for f in fresh.findings
        ]
        for key, walk in taken.items():
            assert _as_kept(walk, False) == _as_kept(made[key], False), (order, walk.functions)
            truncated_taken += walk.truncated
        monkeypatch.undo()
        monkeypatch.setattr(walk_module, "MAX_DEPTH", limit)
    assert truncated_taken == 0  # one cut short holds only where it was made: never kept


@pytest.mark.parametrize("shape", ["slot_pool_mode_without_wait", "hidden_sync_item_deep"])
def test_a_root_near_the_budget_is_walked_again_without_kept_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """Past `NEAR_BUDGET` (here: at once) a root walked with kept walks is walked
    afresh: what the first try met (host syncs too) is dropped, and the result
    is a fresh one."""
    project = copy_project(FIXTURES / shape / "buggy", tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    afresh = []
    walk_afresh = StepAnalyzer._walk_afresh

    def counting(self, root):  # type: ignore[no-untyped-def]
        afresh.append(root.name)
        return walk_afresh(self, root)

    monkeypatch.setattr(step, "NEAR_BUDGET", 0.0)
    monkeypatch.setattr(StepAnalyzer, "_walk_afresh", counting)
    again = checked(project, cache)
    assert afresh == ["engine.runner.Runner.execute_model"]
    _same_as_fresh(again, project)


def test_walks_outlive_a_move_that_kept_the_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line added at the top of the step file moves what the walks of its
    methods read: the findings are carried (reuse.py), and the kept walks stay,
    with the record saying where their lines went since. The next statement
    edit carries them there (relocate.py), and finds what a fresh analysis
    finds; so does the one after two such moves."""
    without_root_resume(monkeypatch)
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    runner_file = project / "engine" / "runner.py"
    runner_file.write_text("# moved\n" + runner_file.read_text(encoding="utf-8"))
    assert checked(project, cache).stats["findings_reused"] == 1
    _insert_statement(runner_file, "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["walks_reused"] >= 1
    _same_as_fresh(again, project)
    # Lines added above a callee whose walk is kept, twice, each run reusing
    # the findings: the next edit carries that walk across both moves.
    inputs_file = project / "engine" / "inputs.py"
    for note in ("# a note\n", "# another\n\n"):
        source = inputs_file.read_text(encoding="utf-8")
        inputs_file.write_text(source.replace("    def stage(", note + "    def stage(", 1))
        assert checked(project, cache).stats["findings_reused"] == 1
    _insert_statement(runner_file, "Runner.execute_model", "_syncscan_again = 1")
    last, taken = _taken(project, cache, monkeypatch)
    assert last.stats["findings_reused"] == 0
    assert "engine.inputs.StagedInputs.stage" in taken
    _same_as_fresh(last, project)


def _with_callee_below_the_root(project: Path) -> Path:
    """The fixture's step root staging its inputs through a method of its
    class written below it: a statement added to the root moves its lines."""
    runner_file = project / "engine" / "runner.py"
    source = runner_file.read_text(encoding="utf-8").replace(
        "ids_view = self.inputs.stage(batch.token_ids)", "ids_view = self._stage(batch)"
    )
    below = "\n    def _stage(self, batch):\n        return self.inputs.stage(batch.token_ids)\n"
    runner_file.write_text(source + below, encoding="utf-8")
    return runner_file


def _record(cache: Path) -> dict:
    return json.loads((cache / "record.json").read_text(encoding="utf-8"))


def test_a_resumed_root_leaves_the_walks_as_kept_and_later_edits_take_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit whose root resumes from its kept walk looks up no callee walk:
    the walks' store is left as the run that kept it wrote it (neither read
    nor written), the record naming it by that run's token with what changed
    since (reuse.py `kept_left`). An edit after two such runs reads it with
    both changes: a walk whose lines moved since is carried and taken, a
    callee edited is walked again; each run finds what a fresh analysis finds."""
    project = copy_project(BUGGY, tmp_path / "project")
    runner_file = _with_callee_below_the_root(project)
    cache = tmp_path / "cache"
    checked(project, cache)
    token, walks = _record(cache)["kept"], (cache / "walks.json").read_bytes()
    for n in range(2):
        _insert_statement(runner_file, "Runner.execute_model", f"_left_{n} = {n}")
        resumed = checked(project, cache)
        assert resumed.stats["roots_resumed"] == 1 and resumed.stats["walks_reused"] == 0
        _same_as_fresh(resumed, project)
        assert (cache / "walks.json").read_bytes() == walks
        assert not (cache / "walks.json.delta").exists()
        left = _record(cache)["kept_left"]["walks.json"]
        assert left["kept"] == token and "engine/runner.py" in left["kept_lines"]
    # A line added on top: the findings are carried, the record with them.
    runner_file.write_text("# moved\n" + runner_file.read_text(encoding="utf-8"), encoding="utf-8")
    assert checked(project, cache).stats["findings_reused"] == 1
    assert _record(cache)["kept_left"]["walks.json"]["kept"] == token
    # The root walked whole: the walk of `_stage`, three lines further down
    # than when kept, is carried there and taken.
    with monkeypatch.context() as whole:
        without_root_resume(whole)
        _insert_statement(runner_file, "Runner.execute_model", "_whole = 1")
        walked, taken = _taken(project, cache, monkeypatch)
    assert "engine.runner.Runner._stage" in taken
    _same_as_fresh(walked, project)
    assert _record(cache)["kept_left"] == {}  # the store was read: written for the next run
    # Left again, then a callee edited: walked again, the walk nested in it taken.
    _insert_statement(runner_file, "Runner.execute_model", "_left_again = 1")
    assert checked(project, cache).stats["walks_reused"] == 0
    assert "walks.json" in _record(cache)["kept_left"]
    _insert_statement(project / "engine" / "inputs.py", "StagedInputs.stage")
    edited, taken = _taken(project, cache, monkeypatch)
    assert "engine.inputs.StagedInputs.stage" not in taken
    assert "engine.pool.SlotPool.write" in taken
    _same_as_fresh(edited, project)


@pytest.mark.parametrize(
    "damaged",
    [
        None,  # undamaged: the walks left are taken
        [],
        {"walks.json": []},
        {"walks.json": {"kept": 5}},
        {"walks.json": {"kept": "another"}},
        {"walks.json": {"kept_stale": 3}},
    ],
)
def test_a_damaged_record_of_a_store_left_takes_nothing_of_it(
    tmp_path: Path, damaged: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    runner_file = project / "engine" / "runner.py"
    _insert_statement(runner_file, "Runner.execute_model", "_left = 1")
    checked(project, cache)
    data = _record(cache)
    entry = data["kept_left"]["walks.json"]
    if isinstance(damaged, dict) and isinstance(damaged["walks.json"], dict):
        damaged = {"walks.json": {**entry, **damaged["walks.json"]}}
    if damaged is not None:
        record = cache / "record.json"
        record.write_text(json.dumps({**data, "kept_left": damaged}), encoding="utf-8")
    without_root_resume(monkeypatch)
    _insert_statement(runner_file, "Runner.execute_model")
    again = checked(project, cache)
    assert (again.stats["walks_reused"] > 0) == (damaged is None)
    _same_as_fresh(again, project)


def test_a_store_is_left_only_where_the_run_covers_the_record_it_was_kept_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A left store's rows read inputs of the record it was kept with: a run
    whose inputs do not hold them all reads and writes the store, as before."""
    from syncscan import reuse

    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    monkeypatch.setattr(reuse, "_covers", lambda *covered: False)
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    assert checked(project, cache).stats["roots_resumed"] == 1
    record = _record(cache)
    assert record["kept_left"] == {}
    # Written for this record: read under its token.
    found, _, _ = store_files.read(SummaryCache(cache), "walks.json", record["kept"])
    assert found is not None and found["rows"]


def test_what_a_run_covers_of_the_record_before_it() -> None:
    """`_covers`: the recorded run's modules, items and class headers; the
    items as their document groups them (`_flattened`, None where damaged)."""
    from types import SimpleNamespace

    from syncscan.reuse import Recorded, _covers, _flattened

    before = _flattened({"m": ["function\0m.f"], "": ["defs\0step"]})
    assert before == {"m\0function\0m.f", "\0defs\0step"}
    assert _flattened({"m": "x"}) is None and _flattened({"m": [3]}) is None
    read = {"m\0function\0m.f", "\0defs\0step", "n\0class\0n.C"}
    program = SimpleNamespace(headers_used=True, requested=lambda: ["m", "n"])
    headed = ((), "digest")  # the record read every file's class headers
    recorded = Recorded(summarised={"m": ["d", "k"]}, read_before=before, headers=headed)
    assert _covers(recorded, read, program)
    assert not _covers(recorded, read - {"\0defs\0step"}, program)
    assert not _covers(dataclasses.replace(recorded, read_before=None), read, program)
    assert not _covers(dataclasses.replace(recorded, summarised={"o": []}), read, program)
    unheaded = SimpleNamespace(headers_used=False, requested=lambda: ["m", "n"])
    assert not _covers(recorded, read, unheaded)
    assert _covers(dataclasses.replace(recorded, headers=None), read, unheaded)


@pytest.mark.parametrize(
    "damaged",
    [
        {"kept_moved": 5},
        {"kept_moved": [7]},
        {"kept_lines": []},
        {"kept_lines": {"engine/inputs.py": [["x", 1, 2]]}},
        {"kept_lines": {"engine/inputs.py": [[1, 2]]}},
        {"kept_lines": {"engine/inputs.py": 3}},
    ],
)
def test_a_damaged_record_of_moves_since_kept_takes_nothing(tmp_path: Path, damaged: dict) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    inputs_file = project / "engine" / "inputs.py"
    inputs_file.write_text("# moved\n" + inputs_file.read_text(encoding="utf-8"))
    assert checked(project, cache).stats["findings_reused"] == 1
    record = cache / "record.json"
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["kept_lines"] and data["kept_moved"]  # what the move left to carry
    record.write_text(json.dumps({**data, **damaged}), encoding="utf-8")
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["walks_reused"] == again.stats["units_reused"] == 0
    _same_as_fresh(again, project)


FOREIGN_STATE = json.dumps([[["CalleeWalk", *(["oops"] * 13)]], [0]])
RESHAPED = {
    "token": lambda data: data.update(token="another"),
    "format": lambda data: data.update(format=-1),
    "class": lambda data: [
        row.__setitem__(8, add_text(data, '[[["Popen", "ls"]], [0]]')) for row in data["rows"]
    ],
    "state": lambda data: [
        row.__setitem__(8, add_text(data, FOREIGN_STATE)) for row in data["rows"]
    ],
    "text": lambda data: [row.__setitem__(8, [len(data["_texts"]), 1]) for row in data["rows"]],
    "not-a-table": lambda data: [
        row.__setitem__(8, add_text(data, "null")) for row in data["rows"]
    ],
    "items": lambda data: [row.__setitem__(6, ",x,") for row in data["rows"]],
    "listed": lambda data: [row.__setitem__(6, [0]) for row in data["rows"]],
    "index": lambda data: [row.__setitem__(6, f",{10**9},") for row in data["rows"]],
    "row": lambda data: data["rows"].append([1, 2]),
}


@pytest.mark.parametrize("how", ["truncate", "garbage", "[]", "null", *RESHAPED])
def test_damaged_kept_walks_are_ignored(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_root_resume(monkeypatch)
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    damage(cache / "walks.json", how, RESHAPED.get(how, lambda data: None))
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    again = checked(project, cache)
    if how != "row":  # a foreign row beside good ones: the good ones are taken
        assert again.stats["walks_reused"] == 0
    else:
        assert again.stats["walks_reused"] > 0
    _same_as_fresh(again, project)


def test_vllm_0_28_a_statement_in_the_step_root_takes_the_kept_walks(
    vllm_0_28: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On real code: a statement inserted at the top of the V1 `execute_model`
    (every line below it moves, so every walk of that file's methods below it
    is walked again); the callee walks elsewhere are taken, and the result is
    a fresh analysis's, field by field (the root walked whole: test_root_resume.py
    resumes it)."""
    without_root_resume(monkeypatch)
    tree = tmp_path / "src"
    shutil.copytree(vllm_0_28, tree, ignore=shutil.ignore_patterns(".syncscan_cache"))
    cache = tmp_path / "cache"
    checked(tree, cache)
    step_file = tree / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    _insert_statement(step_file, "GPUModelRunner.execute_model")
    edited = checked(tree, cache)
    assert edited.stats["findings_reused"] == 0
    assert edited.stats["walks_reused"] > 100
    _same_as_fresh(edited, tree)


def test_the_walks_store_is_written_apart_only_where_a_run_made_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With processes to use, a run writes its walks' store in a forked process
    where it made at least `WALKS_APART_FROM` walks (a cold run); an edit that
    took them writes it here (a fork cost more). Either way the next edit
    takes what was kept."""
    from syncscan import reuse

    without_root_resume(monkeypatch)  # an edit to the root takes its callees' walks
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    forked: list[str] = []

    class Counted(reuse.Forked[None]):
        def __init__(self, make: partial[None], here: Callable[[], None] | None = None) -> None:
            forked.append(make.args[1])  # the store's name (reuse._write_store)
            super().__init__(make, here)

    monkeypatch.setattr(reuse, "Forked", Counted)
    cold = run(project, cache_dir=cache, reuse_findings=True, jobs=2)
    made = cold.analysis.kept.walks.made
    assert made > 0
    assert forked == []  # fewer than WALKS_APART_FROM

    monkeypatch.setattr(reuse, "WALKS_APART_FROM", made)
    shutil.rmtree(cache)
    run(project, cache_dir=cache, reuse_findings=True, jobs=2)
    assert forked == ["walks.json"]

    runner = project / "engine" / "runner.py"
    _insert_statement(runner, "Runner.execute_model")
    edited = run(project, cache_dir=cache, reuse_findings=True, jobs=2)
    assert edited.stats["walks_reused"] > 0 and edited.analysis.kept.walks.made < made
    assert forked == ["walks.json"]  # the edit wrote them here
    _insert_statement(runner, "Runner.execute_model", "_another_probe = 1")
    again = run(project, cache_dir=cache, reuse_findings=True, jobs=1)
    assert again.stats["walks_reused"] == edited.stats["walks_reused"]
    _same_as_fresh(again, project)


def _chain(levels: int) -> str:
    """A helper whose methods call each other `levels` deep, each call inside
    five nested blocks: every level of the walk costs its Python frames."""
    methods = []
    for k in range(levels):
        call = (
            f"self.f{k + 1}(x)" if k + 1 < levels else "self.dev.copy_(self.buf, non_blocking=True)"
        )
        methods.append(
            f"""
    def f{k}(self, x):
        with torch.no_grad():
            try:
                for _ in x:
                    if x:
                        while x:
                            {call}
            finally:
                pass
"""
        )
    return HELPER_CLASS + "".join(methods)


def test_the_depth_limit_cuts_a_call_chain_before_the_python_stack_runs_out(
    tmp_path: Path,
) -> None:
    """A call chain past the depth limit, each level nested in blocks: the limit
    cuts it (the walk completes) before the interpreter's recursion limit would
    make the root incomplete ("code nested too deeply")."""
    runner = RUNNER_CLASS + "        self.helper.f0(batch)\n        return None\n"
    files = {"engine/__init__.py": "", "engine/helper.py": _chain(walk_module.MAX_DEPTH + 4)}
    project = write_project(tmp_path / "project", {**files, "engine/runner.py": runner}, ONE_ROOT)
    result = run(project, use_cache=False)
    assert result.analysis is not None
    assert [r.incomplete for r in result.analysis.step_results] == [None]
