"""Findings are reused only while every input they were computed from is unchanged."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from helpers import BUGGY, SHAPES, copy_project, damage, signature

from syncscan import reuse
from syncscan.index.cache import SummaryCache
from syncscan.index.facts import FactsTable
from syncscan.index.summary import find_function
from syncscan.runner import RunResult, run


def checked(project: Path, cache: Path) -> RunResult:
    """A run as `syncscan check` makes it: findings reused where nothing changed."""
    return run(project, cache_dir=cache, reuse_findings=True)


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reused_findings_match_a_fresh_analysis(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = checked(project, cache)
    second = checked(project, cache)
    assert first.stats["findings_reused"] == 0 and first.analysis is not None
    assert second.stats["findings_reused"] == 1 and second.analysis is None
    assert signature(first) == signature(second) == signature(run(project, use_cache=False))


def unsummarised_file(result: RunResult) -> Path:
    """A file of the project that the analysis never summarised."""
    assert result.analysis is not None
    requested = set(result.analysis.program.requested())
    unread = sorted(set(result.project.modules) - requested)
    assert unread, "the fixture should have a file off the step path"
    return result.project.modules[unread[0]]


def test_a_changed_callee_discards_the_record(tmp_path: Path) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    assert len(checked(project, cache).findings) == 1
    pool = project / "engine" / "pool.py"
    pool.write_text(pool.read_text().replace("pin_memory=True", "pin_memory=False"))
    after = checked(project, cache)
    assert after.stats["findings_reused"] == 0
    assert after.findings == []
    again = checked(project, cache)
    assert again.stats["findings_reused"] == 1 and again.findings == []


def test_a_comment_appended_to_a_step_file_keeps_the_findings(tmp_path: Path) -> None:
    """Early cutoff: the changed file is re-summarised; its summary is the same."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    runner_file = project / "engine" / "runner.py"
    with runner_file.open("a", encoding="utf-8") as handle:
        handle.write("\n# touched\n")
    touched = checked(project, cache)
    assert touched.stats["findings_reused"] == 1
    assert signature(touched) == signature(first)
    # A line inserted above the step moves what the analysis read, unchanged:
    # the findings are carried to where their lines went (relocate.py).
    runner_file.write_text("# a new first line\n" + runner_file.read_text())
    moved = checked(project, cache)
    assert moved.stats["findings_reused"] == 1
    assert [f.location.line for f in moved.findings] == [
        f.location.line + 1 for f in first.findings
    ]
    assert moved.findings == run(project, use_cache=False).findings
    # A comment line inside the step's body moves what follows it: carried too.
    _edit(
        runner_file,
        "        n = len(batch.token_ids)\n",
        "        # a note\n        n = len(batch.token_ids)\n",
    )
    _rechecked(project, cache, reused=True)
    # A statement changed inside it is a change: recomputed.
    _edit(runner_file, "n = len(batch.token_ids)", "n = len(batch.req_ids)")
    _rechecked(project, cache, reused=False)


def test_a_suppression_on_a_moved_function_header_still_applies(tmp_path: Path) -> None:
    """Carried findings keep their function's header lines where they went: a
    suppression on the `def` line matches there."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    assert len(first.findings) == 1
    runner_file = project / "engine" / "runner.py"
    header = "    def execute_model(self, batch):"
    suppressed = f"{header}  # syncscan: ignore[SYNC001] encoder-only steps are serialised"
    runner_file.write_text("# moved\n" + runner_file.read_text().replace(header, suppressed))
    moved = checked(project, cache)
    assert moved.stats["findings_reused"] == 1
    assert moved.findings == []
    assert [f.fingerprint for f in moved.suppressed] == [first.findings[0].fingerprint]


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_moved_lines_carry_the_findings_where_a_fresh_analysis_puts_them(
    project: Path, tmp_path: Path
) -> None:
    """Each file the analysis read, moved down by a line, then a comment line
    inside functions its walks read: the record is carried each time, and the
    result is a fresh analysis's, field by field."""
    copy = copy_project(project, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(copy, cache)
    assert first.analysis is not None
    read = sorted(first.analysis.program.requested())
    for module in read:
        path = first.project.modules.get(module)
        if path is None:
            continue
        path.write_text("# moved\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
        again = checked(copy, cache)
        fresh = run(copy, use_cache=False)
        assert again.stats["findings_reused"] == 1, module
        assert again.findings == fresh.findings, module
        assert again.diagnostics == fresh.diagnostics, module
    # A comment line above the first statement of each function a walk read.
    latest = run(copy, use_cache=False)
    for module, function in _functions_read(cache)[:4]:
        assert latest.analysis is not None
        summary = latest.analysis.program.summary(module)
        found = find_function(summary, function) if summary is not None else None
        assert found is not None and found.body, function
        statement = found.body[0]
        path = first.project.modules[module]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        comment = " " * statement.col + "# moved inside\n"
        path.write_text(
            "".join([*lines[: statement.line - 1], comment, *lines[statement.line - 1 :]])
        )
        again = checked(copy, cache)
        latest = run(copy, use_cache=False)
        assert again.stats["findings_reused"] == 1, function
        assert again.findings == latest.findings, function


def test_a_file_off_the_step_path_keeps_the_record_until_its_class_headers_change(
    tmp_path: Path,
) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    other = unsummarised_file(first)
    with other.open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef helper_added_later():\n    return 1\n")
    body_only = checked(project, cache)
    assert body_only.stats["findings_reused"] == 1
    assert signature(body_only) == signature(first)
    # A subclass of the step root's class appears: the subclass query must run again.
    with other.open("a", encoding="utf-8") as handle:
        handle.write(
            "\n\nfrom engine.runner import Runner\n\n\nclass LateRunner(Runner):\n"
            "    def execute_model(self, batch):\n        return None\n"
        )
    header = checked(project, cache)
    assert header.stats["findings_reused"] == 0
    assert signature(header) == signature(run(project, use_cache=False))


def test_a_function_added_where_subclass_queries_look_counts_only_under_a_name_they_asked(
    tmp_path: Path,
) -> None:
    """A subclass query for overrides of a method reads which files with classes
    define a function of that name (reads.py's "defs" items): a function of
    another name added there keeps the findings, one of that name does not."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    other = unsummarised_file(checked(project, cache))
    _append(other, "\n\nclass Unrelated(object):\n    pass\n")
    _rechecked(project, cache, reused=False)
    record = json.loads((cache / "record.json").read_text(encoding="utf-8"))
    asked = record["asked"]
    assert asked, "the fixture's walk should ask for overrides of some method"
    _append(other, "\n\ndef no_query_asked_for_this():\n    return 1\n")
    _rechecked(project, cache, reused=True)
    _append(other, f"\n\ndef {asked[0]}(self):\n    return 1\n")
    _rechecked(project, cache, reused=False)


def test_a_new_file_changes_the_module_table(tmp_path: Path) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    (project / "engine" / "extra.py").write_text("X = 1\n")
    assert checked(project, cache).stats["findings_reused"] == 0


def test_other_packs_or_rule_selection_are_other_inputs(tmp_path: Path) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    only_sync002 = run(project, cache_dir=cache, reuse_findings=True, select=("SYNC002",))
    assert only_sync002.stats["findings_reused"] == 0 and only_sync002.findings == []
    pack = project / "step_pack.toml"
    pack.write_text(pack.read_text().replace('label = "encoder-only"', 'label = "enc"'))
    relabelled = checked(project, cache)
    assert relabelled.stats["findings_reused"] == 0
    assert [f.mode_label for f in relabelled.findings] == ["enc"]


@pytest.mark.parametrize("document", ["record.json", "reads.json", "facts.json"])
@pytest.mark.parametrize("how", ["truncate", "garbage", "[]", "null", "wrong shape"])
def test_damaged_documents_are_ignored(tmp_path: Path, document: str, how: str) -> None:
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    expected = signature(checked(project, cache))

    def reshape(data: dict) -> None:
        for value in data.values():
            if isinstance(value, dict):
                for key in value:
                    value[key] = [None, "x"]

    damage(cache / document, how, reshape)
    again = checked(project, cache)
    assert signature(again) == expected
    if document == "record.json":
        assert again.stats["findings_reused"] == 0
    assert checked(project, cache).stats["findings_reused"] == 1


def test_vllm_0_28_reused_findings_match(result_0_28: RunResult, vllm_0_28: Path) -> None:
    fresh = run(vllm_0_28, reuse_findings=True)
    reused = run(vllm_0_28, reuse_findings=True)
    assert reused.stats["findings_reused"] == 1
    assert signature(fresh) == signature(reused) == signature(result_0_28)


def _functions_read(cache: Path) -> list[tuple[str, str]]:
    """(module, function) of the function items the last run read, in order."""
    read = json.loads((cache / "reads.json").read_text(encoding="utf-8"))["read"]
    return [
        (module, item.partition("\0")[2])
        for module, items in sorted(read.items())
        for item in items
        if item.startswith("function\0")
    ]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def _rechecked(project: Path, cache: Path, reused: bool) -> RunResult:
    """A check after an edit: the findings reused or recomputed as `reused`
    says, and in either case what a fresh analysis of the tree finds."""
    result = checked(project, cache)
    assert result.stats["findings_reused"] == int(reused)
    assert result.findings == run(project, use_cache=False).findings
    return result


def test_an_edit_to_what_the_analysis_never_read_keeps_the_findings(tmp_path: Path) -> None:
    """Early cutoff by item (reads.py): the step file changes inside a method no
    walk enters, on a line that is not one of its `self.x = ...` assignments
    (which attribute types read), and no line moves."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    runner_file = project / "engine" / "runner.py"
    with runner_file.open("a", encoding="utf-8") as handle:
        handle.write(
            "\n    def resize(self):\n        self.hidden_size = 4\n"
            "        unused = 1\n        return unused\n"
        )
    first = checked(project, cache)
    assert first.stats["findings_reused"] == 0 and len(first.findings) == 1
    _edit(runner_file, "unused = 1", "unused = 2")
    kept = checked(project, cache)
    assert kept.stats["findings_reused"] == 1
    assert signature(kept) == signature(first) == signature(run(project, use_cache=False))
    # Its assignments through `self` are read: a change there is recomputed.
    _edit(runner_file, "self.hidden_size = 4", "self.hidden_size = 5")
    assigned = checked(project, cache)
    assert assigned.stats["findings_reused"] == 0
    assert signature(assigned) == signature(run(project, use_cache=False))
    # So is any change to a function a walk entered, its line count unchanged.
    _edit(runner_file, "n = len(batch.token_ids)", "n = len(batch.req_ids)")
    walked = checked(project, cache)
    assert walked.stats["findings_reused"] == 0
    assert signature(walked) == signature(run(project, use_cache=False))
    # The module's own level is read name by name: a name nothing resolves,
    # added where no line moves, is not read.
    _append(runner_file, "\n\nLIMIT = 3\n\n\ndef helper():\n    return LIMIT\n")
    added = _rechecked(project, cache, reused=True)
    assert signature(added) == signature(walked)
    # A name the walk resolves, bound anew (a function now shadows the import
    # of the kernel the step launches): recomputed, and the finding changes.
    _append(runner_file, "\n\ndef embed_kernel(*args):\n    return None\n")
    shadowed = _rechecked(project, cache, reused=False)
    assert signature(shadowed) != signature(walked)


def test_a_method_added_to_the_step_class_counts_only_for_what_it_assigns_and_names(
    tmp_path: Path,
) -> None:
    """A class is read member by member (summary.py): a method nothing calls,
    assigning nothing through `self`, keeps the findings; one that assigns
    through `self` changes what attribute types see, and one naming a new
    attribute of a class whose attribute names a walk asked changes which
    assumptions its callees see: both are recomputed."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    first = checked(project, cache)
    runner_file = project / "engine" / "runner.py"
    _append(runner_file, "\n    def describe(self):\n        return self.hidden_size\n")
    assert _rechecked(project, cache, reused=True).findings == first.findings
    _append(runner_file, "\n    def reset(self):\n        self.hidden_size = None\n")
    _rechecked(project, cache, reused=False)
    inputs_file = project / "engine" / "inputs.py"
    _append(inputs_file, "\n    def peek(self):\n        return self.pool\n")
    _rechecked(project, cache, reused=True)  # a name the class had
    _append(inputs_file, "\n    def names_another(self):\n        return self.unheard_of\n")
    _rechecked(project, cache, reused=False)


def test_a_record_without_the_items_read_counts_every_change(tmp_path: Path) -> None:
    """A record whose items do not say what was read of a file (missing for
    it, another record's, or none at all): any change to it recomputes."""
    project = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    runner_file = project / "engine" / "runner.py"
    with runner_file.open("a", encoding="utf-8") as handle:
        handle.write("\n    def resize(self, size):\n        return 1\n")
    checked(project, cache)
    _edit(runner_file, "return 1", "return 2")
    assert checked(project, cache).stats["findings_reused"] == 1  # with the items: kept
    items = cache / "reads.json"
    kept = items.read_text(encoding="utf-8")
    data = json.loads(kept)
    data["read"].pop("engine.runner")
    items.write_text(json.dumps(data), encoding="utf-8")
    _edit(runner_file, "return 2", "return 3")
    _rechecked(project, cache, reused=False)
    # Another record's items (their digest is not the record's): as if none.
    data = json.loads(items.read_text(encoding="utf-8"))
    data["digest"] = "0" * 64
    items.write_text(json.dumps(data), encoding="utf-8")
    _edit(runner_file, "return 3", "return 4")
    _rechecked(project, cache, reused=False)
    items.unlink()
    _edit(runner_file, "return 4", "return 5")
    _rechecked(project, cache, reused=False)
    _edit(runner_file, "return 5", "return 6")
    _rechecked(project, cache, reused=True)  # the last run wrote them again


def _unread_return_line(source: str, module: str, read: list[str]) -> int:
    """The line of a one-line `return <value>` in a method the run never read."""
    tree = ast.parse(source)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            if f"function\0{module}.{cls.name}.{method.name}" in read:
                continue
            for node in ast.walk(method):
                one_line = getattr(node, "end_lineno", None) == getattr(node, "lineno", 0)
                if isinstance(node, ast.Return) and node.value is not None and one_line:
                    return node.lineno
    raise AssertionError("no unread method with a one-line return")


def test_vllm_0_28_an_edit_the_analysis_never_read_keeps_what_a_fresh_run_finds(
    vllm_0_28: Path, tmp_path: Path
) -> None:
    """On real code: a method of the V1 step file no walk read (the run record
    says which) grows by a line, moving every line below it: the findings are
    carried to where their lines went, and they are what a fresh analysis of
    the edited tree reports, field by field."""
    tree = tmp_path / "src"
    shutil.copytree(vllm_0_28, tree, ignore=shutil.ignore_patterns(".syncscan_cache"))
    cache = tmp_path / "cache"
    checked(tree, cache)
    module = "vllm.v1.worker.gpu_model_runner"
    step_file = tree / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    read = json.loads((cache / "reads.json").read_text(encoding="utf-8"))["read"][module]
    lines = step_file.read_text(encoding="utf-8").splitlines(keepends=True)
    at = _unread_return_line("".join(lines), module, read) - 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at] = f"{indent}_unused = 0\n" + lines[at]
    step_file.write_text("".join(lines), encoding="utf-8")
    edited = checked(tree, cache)
    assert edited.stats["findings_reused"] == 1
    fresh = run(tree, use_cache=False)
    assert edited.findings == fresh.findings
    moved = [
        step.line
        for finding in fresh.findings
        for step in finding.witness
        if step.path.endswith("worker/gpu_model_runner.py") and step.line > at + 1
    ]
    assert moved, "no finding names a line the edit moved"
    # A comment line inside the step root itself moves what follows it there.
    source = step_file.read_text(encoding="utf-8")
    anchor = source.index("    def execute_model(")
    body = source.index("\n        ", source.index(":\n", anchor)) + 1
    step_file.write_text(source[:body] + "        # a note\n" + source[body:], encoding="utf-8")
    commented = checked(tree, cache)
    assert commented.stats["findings_reused"] == 1
    assert commented.findings == run(tree, use_cache=False).findings


def test_a_record_names_each_summary_by_its_file_reading_only_the_changed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's summary keys are each file's own after an edit, though only
    the edited file is read again for its key: the others' digests are as the
    record had them, and so are their keys."""
    copy = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    checked(copy, cache)
    runner = copy / "engine" / "runner.py"
    head = "    def execute_model(self, batch):\n"
    runner.write_text(runner.read_text().replace(head, head + "        _probe = 0\n"))
    asked: list[str] = []
    key_of = reuse._summary_key

    def counted(cache_: SummaryCache, facts: FactsTable, module: str) -> str | None:
        asked.append(module)
        return key_of(cache_, facts, module)

    monkeypatch.setattr(reuse, "_summary_key", counted)
    edited = checked(copy, cache)
    assert edited.stats["findings_reused"] == 0
    assert asked == ["engine.runner"]
    record = json.loads((cache / "record.json").read_text())
    facts = FactsTable(edited.project.modules, SummaryCache(cache))
    assert len(record["summarised"]) > 1
    for module, (digest, key) in record["summarised"].items():
        found = facts.get(module)
        assert found is not None
        assert [digest, key] == [found.digest, key_of(SummaryCache(cache), facts, module)]


def test_the_items_read_are_written_again_only_where_they_differ(tmp_path: Path) -> None:
    """An edit whose analysis reads what the last one did leaves the items'
    document as it was (its digest is the record's), and the next run still
    tells an edit it never read from one it did."""
    copy = copy_project(BUGGY, tmp_path / "project")
    cache = tmp_path / "cache"
    runner = copy / "engine" / "runner.py"
    head = "    def execute_model(self, batch):\n"
    checked(copy, cache)

    def probe(text: str) -> RunResult:
        runner.write_text(runner.read_text().replace(head, head + f"        {text}\n"))
        return checked(copy, cache)

    def stamp() -> tuple[int, str, str]:
        reads = json.loads((cache / "reads.json").read_text())
        record = json.loads((cache / "record.json").read_text())
        return (cache / "reads.json").stat().st_mtime_ns, reads["digest"], record["reads"]

    assert probe("_probe_first = 0").stats["findings_reused"] == 0
    written, digest, named = stamp()
    assert digest == named
    assert probe("_probe_second = 1").stats["findings_reused"] == 0
    assert stamp() == (written, digest, named)
    runner.write_text(runner.read_text() + "# a comment the analysis never reads\n")
    assert checked(copy, cache).stats["findings_reused"] == 1
