"""The triage corpus pins what syncscan reports on real vLLM and SGLang releases.

CI checks the seeds' releases (vLLM 0.28.0, 0.29.0, analysed once per session by
conftest) and a subset of SGLang releases: every triaged bug is still reported,
every error/warning finding has a verdict, and most error findings are bugs.
`pytest -m sweep` does the same for every release of both engines
(`python bench/sweep.py [--engine sglang]` prints the figures).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from corpus import (
    ENGINES,
    Record,
    Review,
    Verdict,
    load_triage,
    record_from,
    review,
    toml_entry,
)
from engine_trees import fetch_release
from helpers import analysed_sglang
from measure import check_tree

from syncscan.report.json_report import finding_data
from syncscan.runner import RunResult

VERDICTS = load_triage()
SGLANG_VERDICTS = load_triage("sglang")
BUG_SHARE_TARGET = 0.9
# SGLang releases CI checks against the corpus: the oldest 0.4 whose step walk
# completes quickly, and a 0.5 release with the overlap scheduler's streams.
SGLANG_CI = ("0.4.10.post2", "0.5.10.post1")


def records_of(release: str, result: RunResult) -> list[Record]:
    return sorted(record_from(release, finding_data(f)) for f in result.findings)


def lost_message(result: Review) -> str:
    return "\n".join(
        f"{release}: triaged bug no longer reported: {v.code} {v.function} [{v.mode}]"
        for release, v in result.lost
    )


def unreviewed_message(result: Review, engine: str = "vllm") -> str:
    blocks = "\n".join(toml_entry(r) for r in result.unreviewed)
    where = f"tests/triage/{ENGINES[engine].triage.name}"
    return f"unreviewed findings; read the code, then add to {where}:\n\n{blocks}"


@pytest.mark.parametrize("verdicts", [VERDICTS, SGLANG_VERDICTS], ids=["vllm", "sglang"])
def test_entries_do_not_overlap(verdicts: list[Verdict]) -> None:
    """A finding matches at most one entry, so its verdict is never ambiguous."""
    seen: dict[tuple[str, str, str, str], Verdict] = {}
    for v in verdicts:
        for release in v.releases:
            key = (release, v.code, v.function, v.mode)
            assert key not in seen, f"{key} is in two entries"
            seen[key] = v


@pytest.fixture(scope="module")
def seeds(result_0_28: RunResult, result_0_29: RunResult) -> Review:
    records = records_of("0.28.0", result_0_28) + records_of("0.29.0", result_0_29)
    return review(records, VERDICTS, ["0.28.0", "0.29.0"])


def test_seed_releases_still_report_every_triaged_bug(seeds: Review) -> None:
    """A regression pin: bugs syncscan reported stay reported. Bugs known only from
    review (`reported = false`) are the engine's targets, asserted by `-m sweep`."""
    assert any(release == "0.28.0" for v in VERDICTS for release in v.releases)
    regressions = replace(seeds, lost=tuple((r, v) for r, v in seeds.lost if v.reported))
    assert regressions.lost == (), lost_message(regressions)


def test_seed_releases_have_no_unreviewed_finding(seeds: Review) -> None:
    assert seeds.unreviewed == (), unreviewed_message(seeds)


def test_seed_releases_error_findings_are_mostly_bugs(seeds: Review) -> None:
    share = seeds.error_bug_share
    assert share is not None, "0.28.0 has three known error-level bugs; none was reported"
    assert share >= BUG_SHARE_TARGET


def sweep_review(engine: str, verdicts: list[Verdict]) -> Review:
    """Every release of `engine` checked (one cache each) and matched with its corpus."""
    releases = ENGINES[engine].releases
    with tempfile.TemporaryDirectory(prefix="syncscan-sweep-") as tmp:
        records = [
            record
            for release in releases
            for record in check_tree(release, fetch_release(engine, release), Path(tmp) / release)
        ]
    return review(records, verdicts, releases)


@pytest.fixture(scope="module")
def swept() -> Review:
    return sweep_review("vllm", VERDICTS)


@pytest.mark.sweep
def test_sweep_reports_every_triaged_bug(swept: Review) -> None:
    assert swept.lost == (), lost_message(swept)


@pytest.mark.sweep
def test_sweep_has_no_unreviewed_finding(swept: Review) -> None:
    assert swept.unreviewed == (), unreviewed_message(swept)


@pytest.mark.sweep
def test_sweep_error_findings_are_mostly_bugs(swept: Review) -> None:
    share = swept.error_bug_share
    assert share is None or share >= BUG_SHARE_TARGET


# ---------------------------------------------------------------------------- SGLang
@pytest.fixture(scope="module")
def sglang_subset() -> Review:
    records = [
        record for release in SGLANG_CI for record in records_of(release, analysed_sglang(release))
    ]
    return review(records, SGLANG_VERDICTS, SGLANG_CI)


def test_sglang_subset_still_reports_every_triaged_bug(sglang_subset: Review) -> None:
    assert any(r in v.releases for v in SGLANG_VERDICTS for r in SGLANG_CI)
    assert sglang_subset.lost == (), lost_message(sglang_subset)


def test_sglang_subset_has_no_unreviewed_finding(sglang_subset: Review) -> None:
    assert sglang_subset.unreviewed == (), unreviewed_message(sglang_subset, "sglang")


def test_sglang_subset_error_findings_are_mostly_bugs(sglang_subset: Review) -> None:
    share = sglang_subset.error_bug_share
    assert share is not None, "the subset has triaged error-level bugs; none was reported"
    assert share >= BUG_SHARE_TARGET


@pytest.fixture(scope="module")
def sglang_swept() -> Review:
    return sweep_review("sglang", SGLANG_VERDICTS)


@pytest.mark.sweep
def test_sglang_sweep_reports_every_triaged_bug(sglang_swept: Review) -> None:
    assert sglang_swept.lost == (), lost_message(sglang_swept)


@pytest.mark.sweep
def test_sglang_sweep_has_no_unreviewed_finding(sglang_swept: Review) -> None:
    assert sglang_swept.unreviewed == (), unreviewed_message(sglang_swept, "sglang")


@pytest.mark.sweep
def test_sglang_sweep_error_findings_are_mostly_bugs(sglang_swept: Review) -> None:
    share = sglang_swept.error_bug_share
    assert share is None or share >= BUG_SHARE_TARGET
