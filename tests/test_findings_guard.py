"""What syncscan reports, bit for bit: every fixture and three vLLM releases.

The guard of every engine change meant to change no finding (a faster walk, a
cache of summaries, a new index): the findings with their witnesses, related
sites, remedies and fingerprints, the diagnostics and the analysis statistics,
as the JSON report gives them, against the record under
`tests/data/findings/`. A run from cached summaries must give the same as a run
without a cache.

A change meant to change findings re-records them (and the diff of the record
is then the change's evidence, read like any finding):

    python tests/test_findings_guard.py          # every subject
    python tests/test_findings_guard.py vllm-0.33.0
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from engine_trees import fetch_release
from helpers import FIXTURES, REPO, copy_project

from syncscan.flow import parallel
from syncscan.report.json_report import diagnostics_data, finding_data, render
from syncscan.runner import RunResult, run

RECORD = REPO / "tests" / "data" / "findings"
RELEASES = ("0.28.0", "0.29.0", "0.33.0")
FIXTURE_PROJECTS = sorted(
    f"{shape.name}/{variant.name}"
    for shape in FIXTURES.iterdir()
    if (shape / "expect.toml").is_file()
    for variant in shape.iterdir()
    if variant.is_dir()
)


def reported(result: RunResult) -> dict[str, Any]:
    """The contract's part that is a function of the code alone (no `volatile`)."""
    data = json.loads(render(result, result.findings))
    assert data["findings"] == [finding_data(f) for f in result.findings]
    assert data["diagnostics"] == diagnostics_data(result)
    return {key: data[key] for key in ("findings", "diagnostics", "stats")}


def fixtures_reported() -> dict[str, Any]:
    return {name: reported(run(FIXTURES / name, use_cache=False)) for name in FIXTURE_PROJECTS}


def recorded(subject: str) -> dict[str, Any]:
    path = RECORD / f"{subject}.json"
    assert path.is_file(), f"no record {path}: python tests/test_findings_guard.py {subject}"
    return json.loads(path.read_text(encoding="utf-8"))


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Equal, else a failure naming the first differing entry."""
    for key in sorted(got.keys() | want.keys()):
        mine, theirs = got.get(key), want.get(key)
        if mine == theirs:
            continue
        if isinstance(mine, list) and isinstance(theirs, list):
            for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
                if a != b:
                    pytest.fail(f"{key}[{index}] differs:\n got:  {_shown(a)}\n want: {_shown(b)}")
            pytest.fail(f"{key}: {len(mine)} entries, the record has {len(theirs)}")
        pytest.fail(f"{key} differs:\n got:  {_shown(mine)}\n want: {_shown(theirs)}")


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True)[:2000]


def test_fixtures_report_what_they_did() -> None:
    want = recorded("fixtures")
    assert sorted(want) == FIXTURE_PROJECTS, "a fixture was added or removed: re-record"
    got = fixtures_reported()
    for name in FIXTURE_PROJECTS:
        assert_same(got[name], want[name])


@pytest.mark.parametrize("release", RELEASES)
def test_vllm_release_reports_what_it_did(release: str, tmp_path: Path) -> None:
    want = recorded(f"vllm-{release}")
    tree = copy_project(fetch_release("vllm", release), tmp_path / "tree")
    cold = reported(run(tree, cache_dir=tmp_path / "cache"))
    assert_same(cold, want)
    # Again from the summaries the first run cached (the pre-commit path), its
    # roots walked in two worker processes (parallel.py).
    warm = run(tree, cache_dir=tmp_path / "cache", jobs=2)
    assert warm.analysis is not None
    classes = len({root.self_class for root in warm.analysis.roots})
    # A process per class, two per core at most (parallel.py); every release has several.
    assert warm.stats["walk_processes"] == min(classes, 2 * parallel.PROCESSES_PER_CORE) > 1
    assert_same(reported(warm), want)


def record(subjects: list[str]) -> None:
    RECORD.mkdir(parents=True, exist_ok=True)
    for subject in subjects:
        if subject == "fixtures":
            data = fixtures_reported()
        else:
            engine, release = subject.split("-", 1)
            data = reported(run(fetch_release(engine, release), use_cache=False))
        path = RECORD / f"{subject}.json"
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"recorded {path.relative_to(REPO)}")


if __name__ == "__main__":
    record(sys.argv[1:] or ["fixtures", *(f"vllm-{r}" for r in RELEASES)])
