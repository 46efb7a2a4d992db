"""A step root's walk kept statement by statement, and resumed after an edit to
the root's body (syncscan/flow/root_record.py, root_resume.py,
stored_roots.py): the walk up to the end of the edit is made again, the rest is
the kept walk's where the paths there agree, and the result is a fresh
analysis's, field by field. Each guard has an edit a resumed walk would get
wrong without it: there the root is walked whole."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from helpers import BUGGY, FIXTURES, SHAPES, add_text, copy_project, damage, write_project
from test_kept_units import _two_classes
from test_reuse import checked
from test_stored import DEEP, HELPER, ONE_ROOT, PROBE, RUNNER_CLASS, _same_as_fresh

from syncscan.flow import walk as walk_module
from syncscan.flow.codec import from_text
from syncscan.flow.root_record import _run_starts
from syncscan.flow.root_resume import SPLICES
from syncscan.flow.stored_roots import ROOT_CLASSES
from syncscan.index.cache import SummaryCache
from syncscan.runner import RunResult


def _roots(result: RunResult) -> list[tuple[Path, str]]:
    """Each step root's file and its function's name within it ("Class.method")."""
    assert result.analysis is not None
    found = []
    for analysis in result.analysis.step_results:
        qualname = analysis.root.function.qualname
        module = max((m for m in result.project.modules if qualname.startswith(m + ".")), key=len)
        found.append((result.project.modules[module], qualname[len(module) + 1 :]))
    return sorted(set(found))


def _body(path: Path, function: str) -> list[ast.stmt]:
    node: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    for name in function.split("."):
        node = next(
            n
            for n in node.body  # type: ignore[attr-defined]
            if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == name
        )
    return node.body  # type: ignore[attr-defined]


def _insert_before(path: Path, function: str, index: int, text: str) -> None:
    """`text` (lines, indented as the statement) before the `index`-th statement
    of `function`'s body (negative: from its end)."""
    stmt = _body(path, function)[index]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    indent = " " * stmt.col_offset
    block = "".join(indent + line + "\n" for line in text.splitlines())
    lines.insert(stmt.lineno - 1, block)
    path.write_text("".join(lines), encoding="utf-8")


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_edit_to_a_step_root_resumes_its_kept_walk(project: Path, tmp_path: Path) -> None:
    copy = copy_project(project, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(copy, cache)
    for path, function in _roots(first):
        _insert_before(path, function, 0, PROBE)
        again = checked(copy, cache)
        assert again.stats["findings_reused"] == 0
        assert again.stats["roots_resumed"] >= 1, function
        _same_as_fresh(again, copy)
        if len(_body(path, function)) > 2:
            _insert_before(path, function, -1, "_syncscan_probe_end = 0")
            _same_as_fresh(checked(copy, cache), copy)


def _kept_spliced(cache: Path) -> int:
    """How many resumes the one root's kept text was appended by (stored_roots.py)."""
    document, texts = SummaryCache(cache).read_framed("roots.json")
    (row,) = document["rows"]
    start, size = row[2]
    _, text = texts[start : start + size].split(b"\n", 1)
    return from_text(text, ROOT_CLASSES).spliced


def test_edit_after_edit_resumes_from_the_text_each_appended_to(tmp_path: Path) -> None:
    """A resumed walk is written after the text it resumed from (its table
    appended to), `SPLICES` times in a row, then whole; each of the edits resumes
    from the last one's text and finds what a fresh analysis finds."""
    copy = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(copy, cache)
    runner = copy / "engine" / "runner.py"
    assert _kept_spliced(cache) == 0
    for k in range(1, SPLICES + 3):
        _insert_before(runner, "Runner.execute_model", 0, f"_probe_{k} = {k}")
        again = checked(copy, cache)
        assert again.stats["roots_resumed"] == 1, k
        _same_as_fresh(again, copy)
        assert _kept_spliced(cache) == k % (SPLICES + 1)


# Edits a resumed walk would get wrong, each without one guard: (fixture, the root,
# where, the statement inserted).
GUARDED = {
    # The paths after the edit differ (a device barrier): the walk goes on.
    "paths": (BUGGY, "Runner.execute_model", 0, "torch.cuda.synchronize()"),
    # The edit returns: the returns so far differ.
    "returns": (BUGGY, "Runner.execute_model", 1, "if batch.token_ids is None:\n    return None"),
    # A name the edit binds is one the rest of the body reads: its values differ.
    "names": (BUGGY, "Runner.execute_model", 0, "ids_view = batch.token_ids"),
    # The edit hands the step's temporary on (before it is made: the paths there
    # agree): it is no longer freed at return.
    "fresh": (
        FIXTURES / "stream_freed_in_use" / "buggy",
        "Runner.execute_model",
        0,
        "print(hidden)",
    ),
}


@pytest.mark.parametrize("case", sorted(GUARDED))
def test_an_edit_that_changes_what_the_rest_reads_walks_the_root_whole(
    case: str, tmp_path: Path
) -> None:
    fixture, function, index, text = GUARDED[case]
    copy = copy_project(fixture, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(copy, cache)
    _insert_before(copy / "engine" / "runner.py", function, index, text)
    again = checked(copy, cache)
    assert again.stats["roots_resumed"] == 0
    _same_as_fresh(again, copy)


def test_a_root_that_met_the_depth_limit_resumes_unless_the_edit_runs_a_walk_it_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a depth limit of three levels, `via -> a -> b` cuts `c` short: the
    walks of `a` and `b` hold only at that depth (`Walker.cut_functions`). An
    edit that runs none of them resumes the kept walk; one that calls `a` first
    (where it is walked one level higher, and ends as it did: the paths there
    agree) walks the root whole."""
    monkeypatch.setattr(walk_module, "MAX_DEPTH", 3)
    body = "        self.helper.via()\n        self.helper.y()\n        return None\n"
    files = {"engine/__init__.py": "", "engine/helper.py": DEEP}
    project = write_project(
        tmp_path / "project", {**files, "engine/runner.py": RUNNER_CLASS + body}, ONE_ROOT
    )
    runner = project / "engine" / "runner.py"
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_before(runner, "Runner.execute_model", 0, PROBE)
    again = checked(project, cache)
    assert again.stats["roots_resumed"] == 1
    _same_as_fresh(again, project)
    _insert_before(runner, "Runner.execute_model", 0, "self.helper.a()")
    again = checked(project, cache)
    assert again.stats["roots_resumed"] == 0
    _same_as_fresh(again, project)


BACK_INTO_THE_ROOT = (
    RUNNER_CLASS
    + """        self.helper.g()
        if batch.inner is not None:
            return self._prebuilt(batch)
        return None

    def _prebuilt(self, batch):
        return self.execute_model(batch.inner)
"""
)


def test_a_root_that_calls_itself_back_cuts_the_call_and_resumes(tmp_path: Path) -> None:
    """The step root runs itself again through a helper (SGLang's prebuilt
    batch runs `run_batch` on its inner idle batch): the call back is a
    recursion cut, as in any callee walk, not a second walk of the whole step
    that no run could keep; an edit to the root resumes its kept walk."""
    files = {"engine/__init__.py": "", "engine/helper.py": HELPER}
    project = write_project(
        tmp_path / "project", {**files, "engine/runner.py": BACK_INTO_THE_ROOT}, ONE_ROOT
    )
    cache = tmp_path / "cache"
    checked(project, cache)
    _insert_before(project / "engine" / "runner.py", "Runner.execute_model", 0, PROBE)
    again = checked(project, cache)
    assert again.stats["roots_resumed"] == 1
    _same_as_fresh(again, project)


def test_a_statement_of_a_run_s_work_begins_a_run_of_its_own() -> None:
    """A few light statements, then one holding most of the work: an edit among
    the light ones resumes before the heavy one, not after it."""
    assert _run_starts([1, 1, 100, 1, 1], 8) == [0, 2, 3, 4]
    assert _run_starts([10] * 16, 8) == [0, 2, 4, 6, 8, 10, 12, 14]


# The root's own body holds a marked sync (the fixture's is in a callee).
MARKER = "        # gpu-sync-ok: one count per step, measured\n"
MARKED_BODY = MARKER + "        count = self.sampler.finished_count.item()\n"


def test_a_sync_moved_away_from_its_marker_in_the_root_is_reported(tmp_path: Path) -> None:
    """A line added between a marker comment and the sync below it, in the root's
    own body: the sync is no longer marked (the kept walk had it marked)."""
    copy = copy_project(FIXTURES / "hidden_sync_item_deep" / "marked", tmp_path / "project")
    runner = copy / "engine" / "runner.py"
    step = "        self._prepare(batch)\n"
    runner.write_text(runner.read_text().replace(step, step + MARKED_BODY), encoding="utf-8")
    sync = runner.read_text().splitlines().index(MARKED_BODY.splitlines()[1]) + 1
    cache = tmp_path / "cache"
    first = checked(copy, cache)
    assert not [f for f in first.findings if f.location.line == sync]  # marked
    runner.write_text(runner.read_text().replace(MARKER, MARKER + f"        {PROBE}\n"))
    again = checked(copy, cache)
    assert again.stats["roots_resumed"] == 0
    assert [f.code for f in again.findings if f.location.line == sync + 1] == ["SYNC005"]
    _same_as_fresh(again, copy)


def test_a_root_of_a_class_taken_whole_is_resumed_after_its_lines_moved(tmp_path: Path) -> None:
    """The kept walk of a root whose class analysis is taken whole is kept, its
    lines carried where a move sent them, and resumes an edit to it later."""
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    runner, second = project / "engine" / "runner.py", project / "engine" / "second.py"
    _insert_before(runner, "Runner.execute_model", 0, PROBE)
    second.write_text("# a comment line: every line below moves\n" + second.read_text())
    moved = checked(project, cache)
    assert moved.stats["units_reused"] == 1
    _same_as_fresh(moved, project)
    _insert_before(second, "SecondRunner.execute_model", 0, PROBE)
    again = checked(project, cache)
    assert again.stats["roots_resumed"] >= 1
    _same_as_fresh(again, project)


def _lines_not_numbers(data: dict) -> None:
    """The first row's shape, its statements' lines made text (its header and
    statements still agree with the function's)."""
    row = data["rows"][0]
    start, size = row[2]
    shape, rest = data["_texts"][start : start + size].split("\n", 1)
    fields = json.loads(shape)
    fields[3] = [[str(line) for line in lines] for lines in fields[3]]
    row[2] = add_text(data, json.dumps(fields) + "\n" + rest)


@pytest.mark.parametrize(
    "how",
    [
        "truncate",
        "garbage",
        lambda data: data["rows"][0].__setitem__(1, [10**6]),  # an item outside the table
        lambda data: data["rows"][0].__setitem__(2, add_text(data, "not a shape\n[]")),
        _lines_not_numbers,
    ],
    ids=["truncate", "garbage", "item-ids", "not-a-shape", "lines-not-numbers"],
)
def test_damaged_kept_roots_are_walked_whole(tmp_path: Path, how) -> None:  # type: ignore[no-untyped-def]
    copy = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(copy, cache)
    if callable(how):
        damage(cache / "roots.json", "reshape", how)
    else:
        damage(cache / "roots.json", how, lambda data: None)
    _insert_before(copy / "engine" / "runner.py", "Runner.execute_model", 0, PROBE)
    again = checked(copy, cache)
    assert again.stats["roots_resumed"] == 0
    _same_as_fresh(again, copy)


def test_vllm_0_28_edits_to_the_step_root_resume_its_walk(vllm_0_28: Path, tmp_path: Path) -> None:
    """On real code: statements inserted into the V1 `execute_model` (at its top,
    then in its middle) resume its kept walk, and the result is a fresh
    analysis's, field by field (the walk of the whole root: 0.28's
    `execute_model` holds the seed bug's mode)."""
    tree = tmp_path / "src"
    shutil.copytree(vllm_0_28, tree, ignore=shutil.ignore_patterns(".syncscan_cache"))
    cache = tmp_path / "cache"
    checked(tree, cache)
    step_file = tree / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    statements = len(_body(step_file, "GPUModelRunner.execute_model"))
    for index in (0, statements // 2):
        _insert_before(step_file, "GPUModelRunner.execute_model", index, f"_probe_{index} = 0")
        edited = checked(tree, cache)
        assert edited.stats["findings_reused"] == 0
        assert edited.stats["roots_resumed"] >= 1, index
        _same_as_fresh(edited, tree)
