"""Every field of a module, function or class the program hands out notes its read
(syncscan/index/reads.py): a field that did not would let an edit the analysis
read keep stale findings (reuse.py's early cutoff by item)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from helpers import SUMMARY_SOURCE

from syncscan.index import reads
from syncscan.index.build import summarise
from syncscan.index.summary import (
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    binding,
    class_self_assignments,
    class_self_attributes,
    markers,
    method_named,
    recorded,
    star_imports,
    summary_from_data,
    summary_to_data,
)

# Fields that are names: the module's and class's own headers hold them.
NAMES = {"name", "qualname"}
ITEM_OF = {"self_assignments": "assigned", "self_attributes": "attributes"}


def _summaries() -> list[ModuleSummary]:
    built = summarise(SUMMARY_SOURCE, "pkg.mod", "pkg/mod.py", False)
    data = json.loads(json.dumps(summary_to_data(built)))
    return [recorded(built), summary_from_data(data)]


def _read(get) -> set[str]:
    reads.start()
    try:
        get()
    finally:
        found = reads.stop()
    return found


@pytest.mark.parametrize("summary", _summaries(), ids=["freshly built", "from the cache"])
def test_every_function_field_notes_its_read(summary: ModuleSummary) -> None:
    method = summary.classes["Runner"].methods["step"]
    qualname = "pkg.mod.Runner.step"
    names = [f.name for f in fields(FunctionSummary) if f.name not in NAMES]
    names += ["self_assignments", "self_attributes"]
    for name in names:
        kind = ITEM_OF.get(name, "function")
        assert _read(lambda name=name: getattr(method, name)) == {
            reads.item("pkg.mod", kind, qualname)
        }, name


@pytest.mark.parametrize("summary", _summaries(), ids=["freshly built", "from the cache"])
def test_every_class_field_notes_its_read(summary: ModuleSummary) -> None:
    cls = summary.classes["Runner"]
    for name in (f.name for f in fields(ClassSummary) if f.name not in NAMES):
        kind = "methods" if name == "methods" else "class"
        assert _read(lambda name=name: getattr(cls, name)) == {
            reads.item("pkg.mod", kind, "pkg.mod.Runner")
        }, name


@pytest.mark.parametrize("summary", _summaries(), ids=["freshly built", "from the cache"])
def test_a_class_is_read_member_by_member_where_resolution_asks(summary: ModuleSummary) -> None:
    cls = summary.classes["Runner"]
    step = _read(lambda: method_named(cls, "step"))
    assert step == {reads.item("pkg.mod", "method", "pkg.mod.Runner.step")}
    assert method_named(cls, "step") is cls.methods["step"]
    assert method_named(cls, "missing") is None
    made = _read(lambda: class_self_assignments(cls))
    assert made == {reads.item("pkg.mod", "class-assigned", "pkg.mod.Runner")}
    assert [(m.name, [a for a, _, _ in found]) for m, found in class_self_assignments(cls)] == [
        ("step", ["count"])
    ]
    named = _read(lambda: class_self_attributes(cls))
    assert named == {reads.item("pkg.mod", "class-attributes", "pkg.mod.Runner")}
    assert class_self_attributes(cls) == {"count"}


@pytest.mark.parametrize("summary", _summaries(), ids=["freshly built", "from the cache"])
def test_every_field_of_a_modules_own_level_notes_the_whole_of_it(summary: ModuleSummary) -> None:
    """Read through a field, the module's own level is read as a whole; its
    identity (name, path, package) is not content."""
    identity = {"module", "path", "is_package"}
    for name in (f.name for f in fields(ModuleSummary) if f.name not in identity):
        assert _read(lambda name=name: getattr(summary, name)) == {
            reads.item("pkg.mod", "module")
        }, name


@pytest.mark.parametrize("summary", _summaries(), ids=["freshly built", "from the cache"])
def test_name_resolution_reads_one_name_at_a_time(summary: ModuleSummary) -> None:
    found = _read(lambda: binding(summary, "torch"))
    assert found == {reads.item("pkg.mod", "name", "torch")}
    assert binding(summary, "torch").target == "torch"
    assert binding(summary, "Runner").cls is not None
    assert binding(summary, "LIMIT").value is not None
    assert _read(lambda: star_imports(summary)) == {reads.item("pkg.mod", "stars")}
    assert _read(lambda: markers(summary)) == {reads.item("pkg.mod", "markers")}


def test_nothing_is_noted_while_no_run_records_or_while_paused() -> None:
    summary = _summaries()[1]
    method = summary.classes["Runner"].methods["step"]
    assert reads.LOG is None
    assert method.body and reads.LOG is None
    reads.start()
    try:
        with reads.paused():
            method.body  # noqa: B018 - a read the cache's encoder makes
        method.line  # noqa: B018
    finally:
        found = reads.stop()
    assert found == {reads.item("pkg.mod", "function", "pkg.mod.Runner.step")}


def test_nested_records_count_for_the_records_around_them() -> None:
    reads.start()
    try:
        reads.note("a")
        outer = reads.push()
        reads.note("b")
        inner = reads.pop(outer)
        reads.note("c")
    finally:
        everything = reads.stop()
    assert set(inner) == {"b"} and everything == {"a", "b", "c"}


def test_a_memo_hit_notes_what_making_the_value_read() -> None:
    memo: reads.Memo[str, int] = reads.Memo()
    made: list[str] = []

    def make() -> int:
        made.append("x")
        reads.note("made-from")
        return 7

    reads.start()
    try:
        assert memo.made("k", make) == 7
        first = reads.take()
        assert memo.made("k", make) == 7  # a hit: not made again, its read noted again
        second = reads.stop()
    finally:
        reads.stop()
    assert made == ["x"] and first == second == {"made-from"}


def test_a_memo_guard_answers_a_recursive_ask_and_fits_refuses_a_stale_value() -> None:
    memo: reads.Memo[str, int] = reads.Memo()
    assert memo.made("k", lambda: memo.made("k", lambda: 1, guard=0) + 5, guard=0) == 5
    assert memo.made("k", lambda: 9, fits=lambda value: value != 5) == 9
    assert "k" in memo and "other" not in memo


def test_reads_of_a_positions_unused_function_are_noted_movable_and_memos_keep_them_as_read() -> (
    None
):
    """What a function whose result names no position reads is noted in the
    form a move leaves unchanged; a memo filled inside it keeps the items as
    read, so a reader that uses positions and hits it names them as they are."""
    memo: reads.Memo[str, int] = reads.Memo()
    assigned = reads.item("pkg.mod", "class-assigned", "pkg.mod.Runner")
    asked = reads.item("", "defs", "step")  # a subclass query: no positions, as it is

    def assignments() -> int:
        reads.note(assigned)
        reads.note(asked)
        return 1

    @reads.positions_unused
    def types() -> int:
        return memo.made("k", assignments) + nested()

    @reads.positions_unused
    def nested() -> int:  # inside another: counted once, at the outer one
        reads.note(assigned)
        return 0

    reads.start()
    try:
        assert types() == 1
        typed = reads.take()
        assert memo.made("k", assignments) == 1  # a hit outside: as read
        placed = reads.stop()
    finally:
        reads.stop()
    assert typed == {reads.movable(assigned), asked}
    assert placed == {assigned, asked}


def test_a_large_set_noted_whole_counts_for_every_record_around_it() -> None:
    """A memo hit's or a reused walk's items, noted whole (`note_all`), are
    held by reference and merged once: the record around the note, a take, a
    positions-unused reader (in the form a move leaves unchanged) and the
    run's end all name them."""
    big = frozenset(reads.item("pkg.mod", "function", f"pkg.mod.f{i}") for i in range(100))
    small = frozenset({reads.item("pkg.mod", "name", "x")})

    @reads.positions_unused
    def typed() -> None:
        reads.note_all(big)

    reads.start()
    try:
        outer = reads.push()
        reads.note_all(big)
        reads.note_all(big)  # the same set again: held once
        reads.note_all(small)
        inner = reads.pop(outer)
        taken = reads.take()
        typed()
        moved = reads.take()
        reads.note_all(big)
        everything = reads.stop()
    finally:
        reads.stop()
    assert set(inner) == big | small and taken == big | small
    assert moved == {reads.movable(entry) for entry in big}
    assert everything == big
