"""`syncscan check --diff / --fix`: the reference remedies as codemods, kept only
when re-analysis of the patched tree proves them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FIXTURES, analyse

from syncscan.cli import main
from syncscan.fix import plan_fixes
from syncscan.fix.codemods import CODEMODS, Proposal
from syncscan.fix.edits import Before, EditError, MoveIntoWith, apply
from syncscan.runner import RunResult, run


def _buggy(code: str | None = None) -> list[str]:
    """Fixture shapes whose buggy project has a finding of `code` (any code: None)."""
    found = []
    for shape in sorted(FIXTURES.iterdir()):
        expect = shape / "expect.toml"
        if expect.is_file():
            buggy = tomllib.loads(expect.read_text()).get("buggy", {})
            if "code" in buggy and (code is None or buggy["code"] == code):
                found.append(shape.name)
    return found


FIXABLE = [s for s in _buggy() if (FIXTURES / s / "fix.diff").is_file()]
DESIGN_CHOICES = [s for s in _buggy() if s not in FIXABLE]


def _copy(shape: str, variant: str, into: Path) -> Path:
    root = into / variant
    shutil.copytree(
        FIXTURES / shape / variant, root, ignore=shutil.ignore_patterns(".syncscan_cache")
    )
    return root


def _check(root: Path, *flags: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(["check", str(root), "--no-cache", *flags])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _sources(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_every_sync001_and_sync002_fixture_has_an_expected_fix() -> None:
    """SYNC001 and SYNC002 always have a fix; SYNC003 where the write sits right
    before its guarded region (write_before_guard_wait); SYNC004 never."""
    assert set(_buggy("SYNC001") + _buggy("SYNC002")) < set(FIXABLE)
    assert set(FIXABLE) - set(_buggy("SYNC001") + _buggy("SYNC002")) == {"write_before_guard_wait"}
    assert set(_buggy("SYNC004")) <= set(DESIGN_CHOICES)


@pytest.mark.parametrize("shape", FIXABLE)
def test_the_fix_is_the_expected_diff_and_leaves_a_clean_tree(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(shape, "buggy", tmp_path)
    before = _sources(root)
    status, diff, err = _check(root, "--diff", capsys=capsys)
    assert status == 1, err
    assert diff == (FIXTURES / shape / "fix.diff").read_text(), err
    assert "fix (unsafe fix: it changes what the code waits for)" in err
    assert _sources(root) == before  # --diff writes nothing

    _check(root, "--fix", capsys=capsys)
    assert analyse(root).findings == []
    fixed = _sources(root)
    assert fixed != before
    status, _, _ = _check(root, "--fix", capsys=capsys)
    assert status == 0
    assert _sources(root) == fixed  # a second --fix changes nothing


@pytest.mark.parametrize("shape", FIXABLE)
def test_a_formatted_file_stays_formatted_after_its_fix(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(shape, "buggy", tmp_path)
    (root / "ruff.toml").write_text("line-length = 100\n")
    ruff = [sys.executable, "-m", "ruff", "format"]
    subprocess.run([*ruff, "-q", str(root)], check=True)
    _check(root, "--fix", capsys=capsys)
    assert analyse(root).findings == []
    checked = subprocess.run([*ruff, "--check", str(root)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize("shape", DESIGN_CHOICES)
def test_a_design_choice_gets_no_diff_and_says_why(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(shape, "buggy", tmp_path)
    status, diff, err = _check(root, "--diff", capsys=capsys)
    assert (status, diff) == (0, "")
    assert "no automatic fix" in err and "design choice" in err


def test_a_fix_that_does_not_remove_its_finding_is_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verification: a codemod whose edit leaves the finding is not applied."""

    def useless(finding, ctx) -> Proposal:
        loc = finding.location
        return Proposal(finding, (Before(loc.path, loc.line, "pass\n"),))

    monkeypatch.setitem(CODEMODS, "SYNC002", useless)
    root = _copy("pause_returns_after_launch", "buggy", tmp_path)
    before = _sources(root)
    status, _, err = _check(root, "--fix", capsys=capsys)
    assert status == 1  # the finding is still reported
    assert "fix dropped: re-analysis still reports SYNC002" in err
    assert _sources(root) == before


def test_check_without_a_fix_flag_never_imports_libcst() -> None:
    code = (
        "import sys\n"
        "from syncscan.cli import main\n"
        f"main(['check', {str(FIXTURES / 'pause_returns_after_launch' / 'buggy')!r}, "
        "'--no-cache', '-q'])\n"
        "assert 'libcst' not in sys.modules, 'libcst imported'\n"
        "import syncscan.fix\n"
        "assert 'libcst' in sys.modules\n"  # the check above can fail
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_seed_findings_of_vllm_0_28_are_fixed_like_upstream(
    result_0_28: RunResult, vllm_0_28: Path
) -> None:
    """SYNC001: one event attribute, one wait, one record (vLLM's fix); SYNC002:
    the worker barrier through collective_rpc on every pause path, and a
    trailing barrier in wake_up. The patched tree reports neither, and its
    SYNC003 findings are the ones it had."""

    def rerun(copy: Path) -> RunResult:
        return run(copy, cache_dir=vllm_0_28 / ".syncscan_cache")

    outcome = plan_fixes(result_0_28, rerun)
    seeds = sorted(f.code for f in result_0_28.findings if f.code in ("SYNC001", "SYNC002"))
    assert sorted(p.finding.code for p in outcome.fixed) == seeds
    assert seeds == ["SYNC001", "SYNC002", "SYNC002"]
    assert outcome.after is not None
    left = sorted((f.code, f.fingerprint) for f in outcome.after.findings)
    # SYNC003 and SYNC005 findings stay as they were: the fix's wait carries vLLM's
    # `# gpu-sync-ok: <reason>` marker, so it adds no hidden-host-sync finding.
    kept = sorted(
        (f.code, f.fingerprint) for f in result_0_28.findings if f.code in ("SYNC003", "SYNC005")
    )
    assert left == kept
    diff = outcome.diff()
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+ ")]
    runner = "vllm/v1/worker/gpu/model_runner.py"
    assert sorted(outcome.files) == [
        "vllm/v1/engine/core.py",
        runner,
        "vllm/v1/worker/gpu_worker.py",
        "vllm/v1/worker/worker_base.py",
    ]
    runner_lines = outcome.files[runner][1].count("\n") - outcome.files[runner][0].count("\n")
    assert runner_lines <= 9  # attribute (wrapped), wait, record
    assert sum("torch.cuda.Event()" in line for line in added) == 1
    waits = [line for line in added if ".synchronize()  # gpu-sync-ok: " in line]
    assert len(waits) == 1 and "reuse_event" in waits[0], added
    assert sum(line.endswith(".record()") for line in added) == 1
    assert sum(line == 'self.collective_rpc("synchronize_device")' for line in added) == 3
    assert "def synchronize_device(self) -> None:" in added


def test_one_barrier_goes_before_every_site_of_a_function_in_the_block_holding_them() -> None:
    source = (
        "def pause(self, clear):\n"
        "    self.paused = True\n"
        "    if clear:\n"
        "        self.reset()  # releases memory\n"
        "    return None\n"
    )
    edits = [Before("m.py", 4, "sync()\n", "pause"), Before("m.py", 5, "sync()\n", "pause")]
    assert apply(source, edits) == source.replace("    if clear:", "    sync()\n    if clear:")
    # Without a shared key each site gets its own barrier.
    apart = [Before("m.py", 4, "sync()\n"), Before("m.py", 5, "sync()\n")]
    assert apply(source, apart).count("sync()") == 2


def test_a_statement_moves_into_the_guard_only_when_the_guard_does_not_read_it() -> None:
    moves = "def step(self):\n    self.stage(b)\n    with self.guard():\n        run()\n"
    assert apply(moves, [MoveIntoWith("m.py", 2)]) == (
        "def step(self):\n    with self.guard():\n        self.stage(b)\n        run()\n"
    )
    reads = "def step(self):\n    n = self.stage(b)\n    with self.guard(n):\n        run()\n"
    with pytest.raises(EditError):
        apply(reads, [MoveIntoWith("m.py", 2)])
    apart = moves.replace("    with", "    other()\n    with")
    with pytest.raises(EditError):
        apply(apart, [MoveIntoWith("m.py", 2)])


def test_a_fix_its_rule_marks_safe_is_labelled_safe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = CODEMODS["SYNC002"]

    def marked(finding, ctx) -> Proposal:
        return replace(original(finding, ctx), safe=True)

    monkeypatch.setitem(CODEMODS, "SYNC002", marked)
    root = _copy("pause_returns_after_launch", "buggy", tmp_path)
    status, _, err = _check(root, "--fix", capsys=capsys)
    assert status == 0
    assert "SYNC002: fixed (safe fix)" in err
