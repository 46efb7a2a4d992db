"""SYNC005's possible syncs: counted inside a sanctioned region, never reported.

A `.tolist()` of a tensor of unknown origin, `x[mask]`, a blocking copy between
tensors the walk cannot place: each syncs only if a tensor is on the device. In
a region the engine drew around a sync they say the sync is found (recall); on
the step path elsewhere they would be a flood of guesses, so no finding.
"""

from __future__ import annotations

from pathlib import Path

from helpers import FIXTURES, copy_project

from syncscan.flow.mask_index import boolean_locals, mask_indexed
from syncscan.index import ir
from syncscan.index.build import summarise
from syncscan.report import audit_model
from syncscan.runner import run


def _value(source: str) -> ir.Expr | None:
    summary = summarise(source, "m", "m.py", False)
    (stmt,) = summary.functions["f"].body
    return getattr(stmt, "value", None)


def test_what_looks_like_a_boolean_mask() -> None:
    looks = [
        "def f(x):\n    return x[x > 0]",
        "def f(x, pad_mask):\n    return x[~pad_mask]",
        "def f(x, a, b):\n    return x[(a > 0) & b]",
        "def f(x, valid_mask):\n    return x[valid_mask]",
        "def f(x, inputs):\n    return x[inputs['features_mask']]",
        "def f(x, keep_mask):\n    return x[keep_mask, :3]",
    ]
    plain = [
        "def f(x, i):\n    return x[i]",
        "def f(x, i):\n    return x[-i]",
        "def f(x, i):\n    return x[i, :3]",
        "def f(x):\n    return x[:4]",
        "def f(x, inputs):\n    return x[inputs['lengths']]",
    ]
    assert all(mask_indexed(_value(s)) for s in looks)
    assert not any(mask_indexed(_value(s)) for s in plain)


def test_a_local_bound_to_a_comparison_is_a_mask() -> None:
    summary = summarise("def f(x):\n    keep = x != 0\n    return x[keep]", "m", "m.py", False)
    function = summary.functions["f"]
    assert boolean_locals(function) == frozenset({"keep"})
    assert mask_indexed(function.body[1].value, boolean_locals(function))


def _project(tmp_path: Path, body: str) -> Path:
    project = copy_project(FIXTURES / "hidden_sync_item_deep" / "sanctioned", tmp_path / "p")
    runner = project / "engine" / "runner.py"
    text = runner.read_text()
    old = "        with sync_allowed():\n            self._prepare(batch)\n"
    assert old in text
    runner.write_text(text.replace(old, body))
    return project


def test_a_possible_sync_is_found_in_a_region_and_never_reported(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        "        with sync_allowed():\n"
        "            n = batch.lengths.tolist()\n"
        "        kept = batch.tokens[batch.tokens > 0]\n",
    )
    result = run(project, use_cache=False)
    regions = result.analysis.sanctioned_regions
    assert list(regions) == [("engine/runner.py", 11)]
    assert regions[("engine/runner.py", 11)] == frozenset({("engine/runner.py", 12, False)})
    assert [f for f in result.findings if f.code == "SYNC005"] == []


def test_the_audit_lists_a_region_with_no_sync(tmp_path: Path) -> None:
    project = _project(tmp_path, "        with sync_allowed():\n            n = len(batch)\n")
    result = run(project, use_cache=False)
    assert result.analysis.sanctioned_regions == {("engine/runner.py", 11): frozenset()}
    assert audit_model.build(result).silent_regions == ("engine/runner.py:11",)


def test_an_engine_without_annotations_gets_sync005_only_by_name(tmp_path: Path) -> None:
    """Steps overlap, but the pack names no sanctioned region or marker: every
    deliberate sync would be a warning, so the rule is opt-in (`--select`)."""
    project = copy_project(FIXTURES / "hidden_sync_pageable_copy" / "buggy", tmp_path / "p")
    pack = project / "step_pack.toml"
    text = pack.read_text()
    assert 'sanctioned_sync_markers = ["gpu-sync-ok"]' in text
    pack.write_text(text.replace('sanctioned_sync_markers = ["gpu-sync-ok"]', ""))

    def codes(**kwargs: object) -> list[str]:
        return [f.code for f in run(project, use_cache=False, **kwargs).findings]

    assert "SYNC005" not in codes()
    assert codes(select=("SYNC005",)) == ["SYNC005"]
