"""Each callee walk knows what it read (reads.py, walk.py): walked again by a
fresh analysis that has memoised nothing, it reads no summary item the first
walk did not note, memo hits included. A memo table shared across walks that
forgets to note its reads on a hit fails here: the first walk, reusing a value
another walk computed, would not name the items the value came from, and a
persisted walk would outlive an edit to them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from helpers import FIXTURES

from syncscan.flow import walk
from syncscan.flow.context import Analysis
from syncscan.index import reads
from syncscan.index.facts import FactsTable
from syncscan.index.load import FileSummariser
from syncscan.index.summary import find_function
from syncscan.runner import run

PROJECTS = sorted(
    FIXTURES / shape.name / variant
    for shape in FIXTURES.iterdir()
    if (shape / "expect.toml").is_file()
    for variant in tomllib.loads((shape / "expect.toml").read_text())
)


def _recorded_walks(root: Path) -> tuple[Analysis, list[tuple[Any, ...]]]:
    """The run's analysis and its callee walks: (walker, frame, start, depth, walk)."""
    walked: list[tuple[Any, ...]] = []
    original = walk.Walker._walk_callee

    def recording(self, frame, start, depth):  # type: ignore[no-untyped-def]
        found = original(self, frame, start, depth)
        walked.append((self, frame, start, depth, found))
        return found

    walk.Walker._walk_callee = recording  # type: ignore[method-assign]
    try:
        result = run(root, use_cache=False)
    finally:
        walk.Walker._walk_callee = original  # type: ignore[method-assign]
    assert result.analysis is not None
    return result.analysis, walked


def _memo_tables(root: object) -> list[reads.Memo]:
    """Every memo table reachable from `root` through syncscan objects' fields."""
    found: list[reads.Memo] = []
    seen: set[int] = set()
    pending = [root]
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, reads.Memo):
            found.append(value)
        elif type(value).__module__.startswith("syncscan") and hasattr(value, "__dict__"):
            pending.extend(vars(value).values())
    return found


def _cold_reads(first: Analysis, walker: walk.Walker, frame: Any, start: Any, depth: int):
    """The walk again, by a fresh analysis of the same project with every memo
    table empty: (the items it read, its outcome)."""
    project = first.project
    fresh = Analysis(
        project, first.packs, FileSummariser(None), FactsTable(project.modules, None), 1
    )
    fresh.__dict__["callgraph"] = first.callgraph  # what the step assigns: the modes' input
    again = fresh._walker([], barriers_only=walker.barriers_only)
    again.modes.root_mode_params = walker.modes.root_mode_params
    qualname = frame.function.qualname
    module = fresh.program.module_of(qualname)
    assert module is not None
    function = find_function(module, qualname)
    assert function is not None
    cold_frame = again.frame_for(
        function, frame.scope.self_class, frame.self_path, frame.params, frame.mode_params,
        frame.anchors,
    )  # fmt: skip
    for table in _memo_tables(again):
        table.clear()
    reads.start()
    try:
        outcome = again._walk_callee(cold_frame, start, depth)
    finally:
        read = reads.stop()
    return read, outcome


def test_a_walk_names_every_item_it_depends_on() -> None:
    checked = 0
    for project in PROJECTS:
        analysis, walked = _recorded_walks(project)
        for walker, frame, start, depth, first in walked:
            if first.cuts:
                continue  # holds only while the cut function is active
            read, again = _cold_reads(analysis, walker, frame, start, depth)
            missing = sorted(m.replace("\0", " ") for m in read - set(first.items))
            where = f"{project.relative_to(FIXTURES)}: {frame.function.qualname}"
            assert not missing, (where, missing)
            assert again.outs == first.outs, where
            checked += 1
    assert checked >= 120, checked  # the fixtures' walks, not a vacuous pass
