"""The triage corpus pins what syncscan reports on real vLLM releases.

CI checks the seeds' releases (0.28.0, 0.29.0, analysed once per session by
conftest): every triaged bug is still reported, every error/warning finding has a
verdict, and most error findings are bugs. `pytest -m sweep` does the same for
every release (`python bench/sweep.py` prints the figures).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from corpus import RELEASES, Record, Review, Verdict, load_triage, record_from, review, toml_entry
from engine_trees import fetch_release
from measure import check_tree

from syncscan.report.json_report import finding_data
from syncscan.runner import RunResult

VERDICTS = load_triage()
BUG_SHARE_TARGET = 0.9


def records_of(release: str, result: RunResult) -> list[Record]:
    return sorted(record_from(release, finding_data(f)) for f in result.findings)


def lost_message(result: Review) -> str:
    return "\n".join(
        f"{release}: triaged bug no longer reported: {v.code} {v.function} [{v.mode}]"
        for release, v in result.lost
    )


def unreviewed_message(result: Review) -> str:
    blocks = "\n".join(toml_entry(r) for r in result.unreviewed)
    return f"unreviewed findings; read the code, then add to tests/triage/vllm.toml:\n\n{blocks}"


def test_entries_do_not_overlap() -> None:
    """A finding matches at most one entry, so its verdict is never ambiguous."""
    seen: dict[tuple[str, str, str, str], Verdict] = {}
    for v in VERDICTS:
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


@pytest.fixture(scope="module")
def swept() -> Review:
    with tempfile.TemporaryDirectory(prefix="syncscan-sweep-") as tmp:
        records = [
            record
            for release in RELEASES
            for record in check_tree(release, fetch_release("vllm", release), Path(tmp) / release)
        ]
    return review(records, VERDICTS, RELEASES)


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
