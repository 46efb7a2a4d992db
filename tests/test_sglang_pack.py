"""The SGLang pack (rules/packs/sglang.toml) on real SGLang releases.

CI runs a fast subset: the pack switches on with the `sglang` package; `syncscan
audit` on 0.5.23 lists the step root and the quiescence points it names; on six
older releases whose step walk fits the budget, every row is found where the pack
says it lives (and reported missing where it says it is not); and the facts the
rows encode decide real findings: the release barrier SGLang added in 0.5.4
(PR #12592), the `torch.get_device_module().synchronize()` barrier, the in-place
pause that returns with a forward still queued, the overlap / normal mode labels.

`pytest -m sweep tests/test_sglang_pack.py` does the same for every release in
tests/corpus.py's SGLANG_RELEASES (from 0.5.16 each release takes minutes: the walk of
Scheduler.run_batch completes on 0.5.16-0.5.20 in about 2 min, on 0.5.21 and 0.5.22 in
about 4 and on 0.5.23 in about 8; see the README).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from corpus import SGLANG_RELEASES, version
from engine_trees import fetch_release
from helpers import analysed_sglang

from syncscan.cli import main
from syncscan.runner import RunResult, load_project

RUN_BATCH = "sglang.srt.managers.scheduler.Scheduler.run_batch"
RELEASE_ON_SCHEDULER = "sglang.srt.managers.scheduler.Scheduler.release_memory_occupation"
RELEASE_ON_UPDATER = (
    "sglang.srt.managers.scheduler_components.weight_updater."
    "SchedulerWeightUpdaterManager.release_memory_occupation"
)
PAUSE = "sglang.srt.managers.scheduler.Scheduler.pause_generation"
QUIESCENCE = (RELEASE_ON_SCHEDULER, RELEASE_ON_UPDATER, PAUSE)
SCHEDULER_FILE = "sglang/srt/managers/scheduler.py"

# Releases whose step walk completes in seconds, one per home of each row:
# no release_memory_occupation (0.4.0), the mixin (0.4.10), the last release
# without a barrier before its return and the first with one (0.5.3 / 0.5.4),
# pause_generation with its in-place return (0.5.10), the weight-updater
# component (0.5.13).
FAST = ("0.4.0.post2", "0.4.10.post2", "0.5.3.post3", "0.5.4.post3", "0.5.10.post1", "0.5.13.post1")


def expected_quiescence(release: str) -> set[str]:
    """Where the pack's quiescence rows live in `release` (read from the trees)."""
    v = version(release)
    present = set()
    if (0, 4, 1) <= v < (0, 5, 13):  # Scheduler, then its SchedulerUpdateWeightsMixin
        present.add(RELEASE_ON_SCHEDULER)
    if v >= (0, 5, 13):  # managers/scheduler_components/weight_updater.py
        present.add(RELEASE_ON_UPDATER)
    if v >= (0, 5, 6):  # before, only the TokenizerManager pauses (no device there)
        present.add(PAUSE)
    return present


def analysed(release: str) -> RunResult:
    return analysed_sglang(release)


def quiescence(result: RunResult, function: str):
    assert result.analysis is not None
    return next(q for q in result.analysis.quiescence_results if q.spec.function == function)


def sync002(result: RunResult) -> dict[str, object]:
    return {f.location.function: f for f in result.findings if f.code == "SYNC002"}


def in_place_return_line(tree: Path) -> int:
    """The line of pause_generation's in-place `return` (the first bare return)."""
    lines = (tree / SCHEDULER_FILE).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if "def pause_generation(" in line)
    return next(i + 1 for i in range(start, len(lines)) if re.fullmatch(r"\s+return", lines[i]))


def check_rows(release: str, result: RunResult) -> None:
    """The step root is found (and walked unless over budget); each quiescence row
    is found exactly where the pack's comments say, and reported missing elsewhere."""
    assert result.analysis is not None
    assert "sglang" in result.packs.names
    roots = [r for r in result.analysis.step_results if r.root.name == RUN_BATCH]
    assert len(roots) == 1, [r.root.name for r in result.analysis.step_results]
    assert roots[0].incomplete is not None or roots[0].paths
    assert not any("step root" in note for note in result.notes), result.notes
    present = {q.spec.function for q in result.analysis.quiescence_results if not q.missing}
    assert present == expected_quiescence(release)
    missing = {f for f in QUIESCENCE if f"quiescence point {f} (pack sglang)" in str(result.notes)}
    assert missing == set(QUIESCENCE) - present
    for q in result.analysis.quiescence_results:
        assert q.incomplete is None, (q.spec.function, q.incomplete)
        if not q.missing:
            assert q.sites, f"{q.spec.function}: no completion site found"


# --------------------------------------------------------------------------- activation


def test_pack_activates_only_where_sglang_is(tmp_path: Path) -> None:
    _, packs = load_project(fetch_release("sglang", "0.5.23"))
    assert "sglang" in packs.names
    assert [(r.cls, r.method) for r in packs.step_roots if r.pack == "sglang"] == [
        ("sglang.srt.managers.scheduler.Scheduler", "run_batch")
    ]
    assert {q.function for q in packs.quiescence if q.pack == "sglang"} == set(QUIESCENCE)
    other = tmp_path / "other"
    (other / "engine").mkdir(parents=True)
    (other / "engine" / "__init__.py").write_text("", encoding="utf-8")
    _, packs = load_project(other)
    assert "sglang" not in packs.names
    assert not any(r.pack == "sglang" for r in packs.step_roots)


# --------------------------------------------------------------------------- 0.5.23 audit


def test_audit_on_0_5_23_lists_the_root_and_quiescence_points(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = fetch_release("sglang", "0.5.23")
    assert main(["audit", "-v", str(tree)]) == 0  # -v: each site with its evidence
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert f"step root {RUN_BATCH}" in out
    assert "statement visits" not in out  # the walk of run_batch completes (session 10)
    for function in (RELEASE_ON_UPDATER, PAUSE):
        assert f"quiescence point {function}\n" in out
    # Scheduler lost release_memory_occupation to the weight-updater component in 0.5.13.
    assert f"quiescence point {RELEASE_ON_SCHEDULER} (pack sglang) is not in the tree" in out
    release = out[out.index(f"quiescence point {RELEASE_ON_UPDATER}\n") :]
    release = release[: release.index(f"quiescence point {PAUSE}")]
    assert "torch.get_device_module.synchronize" in release  # the return is covered
    assert "no device barrier" not in release
    pause = out[out.index(f"quiescence point {PAUSE}\n") :]
    site = f"{SCHEDULER_FILE}:{in_place_return_line(tree)} "
    row = next(line for line in pause.splitlines() if site in line)
    assert "no device barrier" in row


# --------------------------------------------------------------------------- rows per release


@pytest.mark.parametrize("release", FAST)
def test_rows_are_found_where_the_pack_says(release: str) -> None:
    result = analysed(release)
    check_rows(release, result)
    root = next(r for r in result.analysis.step_results if r.root.name == RUN_BATCH)
    assert root.incomplete is None and root.paths  # these releases fit the walk's budget


@pytest.mark.sweep
@pytest.mark.parametrize("release", SGLANG_RELEASES)
def test_rows_on_every_release(release: str) -> None:
    result = analysed(release)
    check_rows(release, result)
    v = version(release)
    found = sync002(result)
    # No device barrier before the release returns until PR #12592 (0.5.4).
    assert (RELEASE_ON_SCHEDULER in found) == ((0, 4, 1) <= v < (0, 5, 4))
    assert RELEASE_ON_UPDATER not in found
    if v >= (0, 5, 10):  # the in-place pause returns at once
        line = in_place_return_line(fetch_release("sglang", release))
        pause = quiescence(result, PAUSE)
        assert any(s.line == line and s.lacking for s in pause.sites), pause.sites


# --------------------------------------------------------------------------- facts that decide


def test_release_returns_without_a_device_barrier_until_0_5_4() -> None:
    """0.4.10 and 0.5.3 reply after a gloo barrier only; 0.5.4 synchronizes first
    (sgl-project/sglang PR #12592, after slime #579 worked around the early return)."""
    for release in ("0.4.10.post2", "0.5.3.post3"):
        result = analysed(release)
        finding = sync002(result)[RELEASE_ON_SCHEDULER]
        assert finding.severity == "error"
        q = quiescence(result, RELEASE_ON_SCHEDULER)
        assert [s.lacking for s in q.sites] == [True]
        assert any("torch.distributed.barrier" in b.note for b in q.cpu_barriers)
    result = analysed("0.5.4.post3")
    assert RELEASE_ON_SCHEDULER not in sync002(result)
    q = quiescence(result, RELEASE_ON_SCHEDULER)
    assert q.sites and not any(s.lacking for s in q.sites)


def test_get_device_module_synchronize_is_the_release_barrier() -> None:
    """0.5.10's only device barrier is `torch.get_device_module().synchronize()`
    (the pack's full_device_waits row): without it the return would be unguarded."""
    result = analysed("0.5.10.post1")
    assert RELEASE_ON_SCHEDULER not in sync002(result)
    q = quiescence(result, RELEASE_ON_SCHEDULER)
    assert q.sites and not any(s.lacking for s in q.sites)
    for site in q.sites:
        assert site.barrier is not None
        assert "torch.get_device_module.synchronize" in site.barrier[-1].note


def test_in_place_pause_returns_with_the_last_forward_unwaited() -> None:
    result = analysed("0.5.10.post1")
    finding = sync002(result)[PAUSE]
    assert finding.severity == "error"
    line = in_place_return_line(fetch_release("sglang", "0.5.10.post1"))
    pause = quiescence(result, PAUSE)
    in_place = [s for s in pause.sites if s.line == line]
    assert len(in_place) == 1 and in_place[0].lacking
    assert in_place[0].path == SCHEDULER_FILE


def test_mode_labels_name_the_schedules() -> None:
    result = analysed("0.5.10.post1")
    root = next(r for r in result.analysis.step_results if r.root.name == RUN_BATCH)
    labels = {result.packs.labels_text(p.state.assumptions) for p in root.paths}
    assert {"overlap schedule", "normal schedule"} <= {
        part for text in labels for part in text.split(", ")
    }
    # Only the overlap schedule leaves the result's device-to-host copies pending
    # (run_batch's copy_to_cpu; process_batch_result waits one iteration later).
    for path in root.paths:
        overlap = dict(path.state.assumptions).get("self.enable_overlap")
        if path.state.pending:
            assert overlap is True, path.state.assumptions
