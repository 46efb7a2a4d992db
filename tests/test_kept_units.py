"""Class analyses and crawl visits kept from one run for the next
(syncscan/flow/stored_units.py, syncscan/resolve/stored_crawl.py): an edit to one
step-root class re-analyses that class and takes the other's analysis; the
crawl replays the visits the edit left alone; and the result is a fresh
analysis's, field by field, whether the classes run in this process or in
walk workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BUGGY, add_text, copy_project, damage, framed, without_root_resume
from test_reuse import checked
from test_stored import _insert_statement, _same_as_fresh

from syncscan.flow import context, step, stored_results
from syncscan.flow.stored_units import _UNIT_CLASSES
from syncscan.resolve import callgraph
from syncscan.runner import RunResult, run

SECOND = '''"""A second engine class on the same inputs: the pool's slot is written and
nothing waits before the step returns."""

from engine.inputs import StagedInputs
from engine.kernels import embed_kernel
from engine.outputs import EmptyOutput


class SecondRunner:
    def __init__(self, config):
        self.inputs = StagedInputs(config.max_tokens, config.async_depth)
        self.table = None
        self.hidden = None

    def execute_model(self, batch):
        n = len(batch.token_ids)
        ids_view = self.inputs.stage(batch.token_ids)
        embed_kernel[(n,)](ids_view, self.table, self.hidden, 4)
        return EmptyOutput(batch.req_ids)
'''

ROOT = """
[[step_root]]
class = "engine.second.SecondRunner"
method = "execute_model"
"""


def _two_classes(root: Path) -> Path:
    project = copy_project(BUGGY, root)
    (project / "engine" / "second.py").write_text(SECOND, encoding="utf-8")
    pack = project / "step_pack.toml"
    pack.write_text(pack.read_text(encoding="utf-8") + ROOT, encoding="utf-8")
    return project


def _checked(project: Path, cache: Path, jobs: int) -> RunResult:
    return run(project, cache_dir=cache, reuse_findings=True, jobs=jobs)


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_edit_to_one_class_takes_the_other_class_and_the_visits_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    # Walk workers for a fixture's few call graph nodes (vLLM's have thousands).
    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 1)
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    first = _checked(project, cache, jobs)
    assert first.stats["step_roots"] == 2 and first.stats["units_reused"] == 0
    assert {f.location.path for f in first.findings} >= {"engine/runner.py", "engine/second.py"}
    if jobs > 1:
        assert first.stats["walk_processes"] == 2

    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model")
    second_edited = _checked(project, cache, jobs)
    assert second_edited.stats["findings_reused"] == 0
    assert second_edited.stats["units_reused"] == 1  # Runner's analysis, taken whole
    assert second_edited.stats["visits_reused"] > 0
    assert second_edited.stats["walk_processes"] == 0  # one class left: no workers
    _same_as_fresh(second_edited, project)

    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    runner_edited = _checked(project, cache, jobs)
    assert runner_edited.stats["units_reused"] == 1  # SecondRunner's, kept by the last run
    _same_as_fresh(runner_edited, project)
    # Both roots resumed: the walks were left as the first run kept them.
    record = json.loads((cache / "record.json").read_text(encoding="utf-8"))
    assert "walks.json" in record["kept_left"]

    # Both classes read StagedInputs.stage: neither analysis holds (in workers
    # where there are two processes, the walks read before they fork).
    _insert_statement(project / "engine" / "inputs.py", "StagedInputs.stage")
    shared_edited = _checked(project, cache, jobs)
    assert shared_edited.stats["units_reused"] == 0
    assert shared_edited.stats["walks_reused"] > 0  # from the store the last runs left
    _same_as_fresh(shared_edited, project)


def test_a_class_taken_whole_keeps_its_walks_for_the_next_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walks of a class whose analysis was taken stay kept: when an edit
    reaches that class later, its callees' walks are taken, not walked (its
    root walked whole, not resumed)."""
    without_root_resume(monkeypatch)
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model")
    assert checked(project, cache).stats["units_reused"] == 1
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["walks_reused"] > 0  # Runner's callees, kept two runs ago
    _same_as_fresh(again, project)


def test_a_class_whose_lines_moved_is_carried_where_they_went(tmp_path: Path) -> None:
    """A line added at the top of the second class's file moves what its
    analysis read; an edit to the first class then takes the second's analysis
    with its lines where they went (relocate.py), as a fresh analysis finds it."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    second = project / "engine" / "second.py"
    second.write_text("# moved\n\n" + second.read_text(encoding="utf-8"), encoding="utf-8")
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    again = checked(project, cache)
    assert again.stats["findings_reused"] == 0
    assert again.stats["units_reused"] == 1
    assert any(f.location.path == "engine/second.py" for f in again.findings)
    _same_as_fresh(again, project)


def test_a_module_without_a_summary_is_reported_where_a_kept_analysis_was_taken(
    tmp_path: Path,
) -> None:
    """A kept visit or class names the modules it read; the run asks for them
    without loading them (Program.mark), except one that had no summary: that
    one is loaded, and its diagnostic is the one a fresh run gives. One that
    stops parsing makes nothing kept hold (reuse.py)."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    # A module only Runner's step reads, which does not parse.
    (project / "engine" / "only_first.py").write_text("def helper(:\n", encoding="utf-8")
    runner = project / "engine" / "runner.py"
    source = runner.read_text(encoding="utf-8")
    runner.write_text(
        "from engine.only_first import helper\n"
        + source.replace(
            "        self._pending = None\n", "        self._pending = None\n        helper()\n"
        )
    )
    first = checked(project, cache)
    assert any(d.path == "engine/only_first.py" for d in first.diagnostics)
    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model")
    again = checked(project, cache)
    assert again.stats["units_reused"] == 1
    assert any(d.path == "engine/only_first.py" for d in again.diagnostics)
    _same_as_fresh(again, project)
    inputs = project / "engine" / "inputs.py"
    inputs.write_text(inputs.read_text(encoding="utf-8") + "\ndef broken(:\n")
    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model", "_x = 1")
    last = checked(project, cache)
    assert last.stats["units_reused"] == last.stats["visits_reused"] == 0
    _same_as_fresh(last, project)


def _reshaped_units(data: dict) -> None:
    for row in data["rows"]:
        row[2] = add_text(data, json.dumps([[["StepPath", "oops"]], [0]]))


def _units_not_a_table(data: dict) -> None:
    for row in data["rows"]:
        row[2] = add_text(data, "null")


def _units_text_outside(data: dict) -> None:
    for row in data["rows"]:
        row[2] = [len(data["_texts"]), 1]


def _visits_reading_nothing_known(data: dict) -> None:
    for row in data["rows"]:
        row[1] = [10**9]


def _foreign_visits(data: dict) -> None:
    for row in data["rows"]:
        if row[2] is not None:
            row[2][8] = [["x", 1, 2, "self", ["not", "a", "name"], None]]


@pytest.mark.parametrize(
    ("document", "how"),
    [
        ("units.json", "garbage"),
        ("units.json", "null"),
        ("units.json", _reshaped_units),
        ("units.json", _units_text_outside),
        ("units.json", _units_not_a_table),
        ("crawl.json", "truncate"),
        ("crawl.json", "[]"),
        ("crawl.json", _foreign_visits),
        ("crawl.json", _visits_reading_nothing_known),
    ],
    ids=[
        "units-garbage",
        "units-null",
        "units-state",
        "units-text",
        "units-not-a-table",
        "crawl-truncate",
        "crawl-list",
        "crawl-row",
        "crawl-ids",
    ],
)
def test_damaged_kept_units_and_visits_are_ignored(tmp_path: Path, document: str, how) -> None:  # type: ignore[no-untyped-def]
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    if callable(how):
        damage(cache / document, "reshape", how)
    else:
        damage(cache / document, how, lambda data: None)
    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model")
    again = checked(project, cache)
    if document == "units.json":
        assert again.stats["units_reused"] == 0
    else:
        assert again.stats["visits_reused"] == 0
    _same_as_fresh(again, project)


def test_a_kept_visit_whose_callee_cannot_be_singled_out_crawls_again_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a visit must be made again and its function is known only by the
    qualname a kept visit names (its caller's visit was taken), the module must
    hold exactly one function of that name; else the crawl starts again without
    kept visits, and finds what a fresh crawl finds."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    # StagedInputs.stage's visit read SlotPool.write (resolving its call); the
    # step roots' visits did not: theirs are taken, stage's is made again.
    _insert_statement(project / "engine" / "pool.py", "SlotPool.write")
    assert checked(project, cache).stats["visits_reused"] > 0
    _insert_statement(project / "engine" / "pool.py", "SlotPool.write", "_again = 1")
    monkeypatch.setattr(callgraph, "functions_named", lambda module, qualname: [])
    again = checked(project, cache)
    assert again.stats["visits_reused"] == 0
    _same_as_fresh(again, project)


def test_a_lone_class_takes_its_judging_after_an_edit_its_root_resumed_from(
    tmp_path: Path,
) -> None:
    """One class on the step path is kept too: taken whole it would only repeat
    the reused findings, but a statement added at the top of its root resumes
    the root's walk, and the judging of the paths it ends in is taken."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    assert len(framed(cache / "units.json")["rows"]) == 1
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    again = checked(project, cache)
    assert (again.stats["roots_resumed"], again.stats["units_judged"]) == (1, 1)
    _same_as_fresh(again, project)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_class_whose_walks_end_as_they_did_takes_its_judging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A statement added at the top of a root's body resumes its kept walk, which
    ends in the paths the kept analysis judged (they are named alike), meeting
    the same host syncs: the judging is taken, not made again, edit after edit
    (the first run judges in walk workers: what judging read comes back with
    the rest), and the result is a fresh analysis's."""
    monkeypatch.setattr(context, "PARALLEL_MIN_NODES", 1)
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    assert _checked(project, cache, jobs).stats["units_judged"] == 0
    encoded: list[object] = []
    to_text = stored_results.to_text

    def counted(value: object, classes: dict[str, type]) -> bytes:
        if classes is _UNIT_CLASSES:
            encoded.append(value)
        return to_text(value, classes)

    monkeypatch.setattr(stored_results, "to_text", counted)
    for probe in ("_probe_first = 0", "_probe_second = 1"):
        _insert_statement(project / "engine" / "runner.py", "Runner.execute_model", probe)
        edited = _checked(project, cache, jobs)
        assert edited.stats["roots_resumed"] == 1
        assert edited.stats["units_judged"] == 1
        assert encoded == []  # the kept text is kept, not encoded again
        _same_as_fresh(edited, project)


# Edits after which a resumed walk's judging is made again: (the file, the
# function, the statement added at its top), with a statement at the top of the
# root's body (the walk resumes).
JUDGED_AGAIN = {
    # The walk meets a host sync it did not: the analysis says so.
    "syncs": ("runner.py", "Runner.execute_model", "_probe = batch.token_ids.item()"),
    # What judging reads changed: the resolution a pending path waits on.
    "resolution": ("outputs.py", "AsyncOutput.get_output", "_probe = 0"),
}


@pytest.mark.parametrize("case", sorted(JUDGED_AGAIN))
def test_a_class_whose_judging_may_differ_is_judged_again(tmp_path: Path, case: str) -> None:
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    _checked(project, cache, 1)
    name, function, text = JUDGED_AGAIN[case]
    _insert_statement(project / "engine" / name, function, text)
    if name != "runner.py":
        _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    edited = _checked(project, cache, 1)
    assert edited.stats["roots_resumed"] == 1
    assert edited.stats["units_judged"] == 0
    _same_as_fresh(edited, project)


def test_a_class_whose_root_is_walked_afresh_is_judged_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `NEAR_BUDGET` (here: at once) a resumed root is walked afresh: its
    paths are that walk's, not those the kept analysis judged."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    _checked(project, cache, 1)
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    monkeypatch.setattr(step, "NEAR_BUDGET", 0.0)
    edited = _checked(project, cache, 1)
    assert edited.stats["roots_resumed"] == 1
    assert edited.stats["units_judged"] == 0
    _same_as_fresh(edited, project)


@pytest.mark.parametrize(
    "how",
    [
        lambda row: row.__setitem__(4, [10**9]),  # what judging read: outside the table
        lambda row: row.__setitem__(6, [7]),  # the finals judged, not named
        lambda row: row.__setitem__(5, "walks"),  # the walks judging relied on, not a list
    ],
    ids=["judging-ids", "judging-finals", "judging-walks"],
)
def test_damaged_judging_is_judged_again(tmp_path: Path, how) -> None:  # type: ignore[no-untyped-def]
    """A kept class analysis whose judging fields are damaged is judged again
    (never taken with what it does not say)."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    _checked(project, cache, 1)
    damage(cache / "units.json", "reshape", lambda data: [how(row) for row in data["rows"]])
    _insert_statement(project / "engine" / "runner.py", "Runner.execute_model")
    edited = _checked(project, cache, 1)
    assert edited.stats["roots_resumed"] >= 1  # a row not well formed: its class walked too
    assert edited.stats["units_judged"] == 0
    _same_as_fresh(edited, project)
