"""Plain output never wraps mid-sentence; a narrow terminal never cuts the location.

Before: messages broke at 80 columns on a non-terminal stderr, at 160 on piped
stdout and at 120 in `--output`, and the panel title (which held the location)
was cut off in a narrow terminal.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BUGGY
from rich.console import Console

from syncscan.report import console
from syncscan.runner import run


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    """syncscan as CI runs it: stdout and stderr are pipes, no COLUMNS set."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "syncscan", *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def whole_on_one_line(sentence: str, output: str) -> bool:
    return any(sentence in line for line in output.splitlines())


def test_piped_full_report_keeps_each_sentence_on_one_line() -> None:
    proc = piped("check", "--no-cache", "--format", "json", str(BUGGY))
    (finding,) = json.loads(proc.stdout)["findings"]
    proc = piped("check", "--no-cache", str(BUGGY))
    assert proc.returncode == 1, proc.stderr
    assert len(finding["message"]) > 160  # long enough that any wrapping would show
    assert whole_on_one_line(finding["message"], proc.stdout), proc.stdout
    assert whole_on_one_line(finding["remedy"], proc.stdout)
    for step in finding["witness"]:
        assert whole_on_one_line(step["note"], proc.stdout)


def test_piped_stderr_keeps_a_long_message_on_one_line(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 4) / "project"
    deep.mkdir(parents=True)
    (deep / "pyproject.toml").write_text("[tool.syncscan]\ncolour = 1\n", encoding="utf-8")
    proc = piped("check", "--no-cache", str(deep))
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert str(deep / "pyproject.toml") in line and "colour" in line


def test_output_file_keeps_each_sentence_on_one_line(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    proc = piped("check", "--no-cache", "--output", str(report), str(BUGGY))
    assert proc.returncode == 1
    text = report.read_text(encoding="utf-8")
    result = run(BUGGY, use_cache=False)
    (finding,) = result.findings
    assert whole_on_one_line(finding.message, text)
    assert whole_on_one_line(finding.remedy, text)


@pytest.mark.parametrize("width", [40, 80])
def test_a_narrow_terminal_never_cuts_the_location(width: int) -> None:
    result = run(BUGGY, use_cache=False)
    (finding,) = result.findings
    buffer = io.StringIO()
    terminal = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    console.render(terminal, result, result.findings)
    text = buffer.getvalue()
    loc = finding.location
    assert f"{loc.path}:{loc.line}:{loc.column}" in text
    assert f"{finding.code} {finding.name}" in text
    assert "…" not in text.splitlines()[0]  # the title is whole
