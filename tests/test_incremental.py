"""An edit seen through the cache gives what a cold run gives.

Every fixture pair is an edit that changes findings: the buggy project turned into
the fixed one (and back). A run over the edited tree that reads the earlier run's
cache (its summaries, its file facts, its record of findings) must report exactly
what a run without a cache reports on the same files. This is the soundness test of
every reuse the cache makes, and the one a finer-grained cache must pass too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES
from test_findings_guard import reported

from syncscan.runner import run

PAIRS = sorted(
    shape.name
    for shape in FIXTURES.iterdir()
    if (shape / "buggy").is_dir() and (shape / "fixed").is_dir()
)


def replace_tree(target: Path, source: Path) -> None:
    """Make `target`'s files those of `source` (the cache directory kept)."""
    for path in sorted(target.rglob("*"), reverse=True):
        if ".syncscan_cache" in path.parts or path == target:
            continue
        if path.is_file():
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    shutil.copytree(source, target, dirs_exist_ok=True)


@pytest.mark.parametrize("shape", PAIRS)
@pytest.mark.parametrize(("before", "after"), [("buggy", "fixed"), ("fixed", "buggy")])
def test_an_edit_read_through_the_cache_reports_what_a_cold_run_does(
    shape: str, before: str, after: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / shape / before, project)
    cache = tmp_path / "cache"
    first = reported(run(project, cache_dir=cache, reuse_findings=True))
    assert first == reported(run(FIXTURES / shape / before, use_cache=False))
    replace_tree(project, FIXTURES / shape / after)
    edited = reported(run(project, cache_dir=cache, reuse_findings=True))
    assert edited == reported(run(project, use_cache=False))
    assert edited != first or first["findings"] == [], "a pair whose edit changes nothing"
