"""A class analysis taken from the cache holds each path's state as far as the
rules read it (syncscan/flow/step.py `RulesState`, stored_units.py). That is
sound only while no rule reads more of a state: every rule, run over the
states reduced so, must find what it finds over the whole states, on every
fixture (a rule that starts reading another field of a path's state fails
here, and the field is then added to `RulesState`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers import SHAPES, copy_project, without_root_resume
from syncscan.rules import all_rules
from test_kept_units import _checked, _two_classes
from test_stored import _insert_statement

from syncscan.findings import finding_to_data
from syncscan.flow.context import Analysis
from syncscan.flow.state import PathState
from syncscan.flow.step import RootAnalysis, RulesState, for_rules
from syncscan.report import audit_model
from syncscan.runner import run


def _findings(analysis: Analysis) -> list[dict[str, Any]]:
    """Every rule's findings on `analysis`, as data, in one order."""
    found = [f for rule in all_rules() for f in rule().check(analysis)]
    return sorted((finding_to_data(f) for f in found), key=repr)


class _Reading:
    """A path's state that notes the fields read of it."""

    def __init__(self, state: PathState, read: set[str]) -> None:
        self._state, self._read = state, read

    def __getattr__(self, name: str) -> Any:
        self._read.add(name)
        return getattr(self._state, name)


# The fields of a path's state `RulesState` keeps.
KEPT = {"assumptions", "write", "reader"}


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_rules_find_the_same_in_states_reduced_for_them(project: Path) -> None:
    analysis = run(project, use_cache=False).analysis
    assert analysis is not None
    whole, results = _findings(analysis), analysis.step_results
    read: set[str] = set()
    analysis.__dict__["step_results"] = [  # the cached property
        replace(r, paths=[replace(p, state=_Reading(p.state, read)) for p in r.paths])
        for r in results
    ]
    assert _findings(analysis) == whole
    assert read <= KEPT, f"the rules read {sorted(read - KEPT)} of a path's state"
    reduced = []
    for r in results:
        paths, *_ = for_rules((r.paths, r.incomplete, r.host_syncs, r.sanctioned_regions))
        assert all(type(p.state) is RulesState for p in paths)
        reduced.append(
            RootAnalysis(r.root, paths, r.incomplete, r.host_syncs, r.sanctioned_regions)
        )
    analysis.__dict__["step_results"] = reduced  # as a class taken from the cache gives them
    assert _findings(analysis) == whole


def test_a_class_taken_whole_holds_states_for_the_rules_and_the_audit_refuses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The class taken whole gives reduced states; the edited one, walked and
    judged afresh (no resumed walk, whose judging would be taken too), whole ones."""
    without_root_resume(monkeypatch)
    project = _two_classes(tmp_path / "project")
    cache = tmp_path / "cache"
    _checked(project, cache, 1)
    _insert_statement(project / "engine" / "second.py", "SecondRunner.execute_model")
    edited = _checked(project, cache, 1)
    assert edited.stats["units_reused"] == 1 and edited.analysis is not None
    kinds = {r.root.name: {type(p.state) for p in r.paths} for r in edited.analysis.step_results}
    assert kinds["engine.runner.Runner.execute_model"] == {RulesState}  # taken: reduced
    assert RulesState not in kinds["engine.second.SecondRunner.execute_model"]  # walked: whole
    assert any(p.state.pending for r in edited.analysis.step_results for p in r.paths)
    with pytest.raises(ValueError, match="whole path states"):
        audit_model.build(edited)
    copy = copy_project(project, tmp_path / "again")
    assert audit_model.build(run(copy, use_cache=False)).paths  # a run without the cache: whole
