"""What the reports say: plurals, mode and root labels, audit reasons, the CLI's options."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import combined_project
from rich.console import Console

from syncscan.cli import main
from syncscan.report import audit
from syncscan.report.audit_model import build
from syncscan.runner import RunResult


@pytest.fixture
def both(tmp_path: Path) -> Path:
    """One SYNC001 finding (a mode) and one SYNC002 finding (a quiescence point)."""
    return combined_project(tmp_path / "both")


def test_counts_agree_with_their_nouns(both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-cache", str(both)]) == 1
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith("2 errors · 1 step root · 1 quiescence point · "), summary


def test_quiescence_findings_are_labelled_as_such_and_modes_read_plainly(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--no-cache", "--select", "SYNC002", str(both)]) == 1
    out = capsys.readouterr().out
    assert "quiescence point: engine.core.EngineCore.pause" in out
    assert "step root:" not in out
    assert "mode: all modes" in out
    assert "(all modes)" not in out
    assert main(["check", "--no-cache", "--select", "SYNC001", str(both)]) == 1
    out = capsys.readouterr().out
    assert "mode: encoder-only (self.encoder_only=true)" in out
    assert "step root: engine.runner.Runner.execute_model" in out


@pytest.mark.parametrize("command", ["audit", "config"])
def test_audit_and_config_refuse_select(
    command: str, both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit --select` was accepted and ignored: every root is audited."""
    assert main([command, "--no-cache", "--select", "SYNC001", str(both)]) == 2
    assert "--select" in capsys.readouterr().err


def test_version_answers_without_importing_the_analysis() -> None:
    probe = (
        "import sys, time; t = time.perf_counter(); from syncscan.cli import main; "
        "code = main(['--version']); "
        "heavy = [m for m in ('rich', 'syncscan.runner', 'syncscan.rules.base') "
        "if m in sys.modules]; print(code, heavy)"
    )
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - started
    assert proc.stdout.splitlines() == ["syncscan 0.1.0", "0 []"], proc.stdout + proc.stderr
    assert elapsed < 5  # generous: the point is what is imported, checked above


def test_audit_reasons_read_as_sentences(result_0_28: RunResult) -> None:
    """Each path is bounded by what happens on it: a no-work step says why, and
    no path borrows another path's wait (the old "the mode's other steps")."""
    buffer = io.StringIO()
    audit.render(Console(file=buffer, width=400, color_system=None), build(result_0_28))
    text = buffer.getvalue()
    assert "the step has no work scheduled (pack)" in text
    assert "returns AsyncOutput, whose get_output() waits on the host" in text
    assert "other steps" not in text and "are waits inline" not in text
