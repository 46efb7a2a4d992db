"""The output habits ruff users have: --output-format concise|full, --statistics, -q / -v."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXED, check_json, combined_project

from syncscan.cli import main


@pytest.fixture
def both(tmp_path: Path) -> Path:
    return combined_project(tmp_path / "both")


def findings_of(capsys: pytest.CaptureFixture[str], project: Path) -> list[dict]:
    return check_json(capsys, project)[1]["findings"]


def check(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_concise_is_one_line_per_finding(both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    findings = findings_of(capsys, both)
    code, out, _ = check(capsys, "--output-format", "concise", both)
    assert code == 1
    lines = out.splitlines()
    expected = [
        f"{f['path']}:{f['line']}:{f['column']}: {f['code']} {f['message']}" for f in findings
    ]
    assert lines[: len(expected)] == expected
    assert lines[-1] == "Found 2 findings."


def test_full_is_the_default_and_format_is_an_alias(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = check(capsys, both)[1]
    full = check(capsys, "--output-format", "full", both)[1]
    alias = check(capsys, "--format", "full", both)[1]
    strip = [line for line in default.splitlines() if not line.endswith("s")]  # timing line
    assert strip == [line for line in full.splitlines() if not line.endswith("s")]
    assert [line for line in alias.splitlines() if not line.endswith("s")] == strip
    assert "witness path:" in default and "remedy:" in default


def test_statistics_counts_findings_per_rule(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = check(capsys, "--statistics", both)
    assert code == 1
    assert out.splitlines() == [
        "1  SYNC001  unbounded-step",
        "1  SYNC002  completion-without-barrier",
    ]
    code, out, _ = check(capsys, "--statistics", FIXED)
    assert (code, out) == (0, "No findings.\n")


def test_quiet_keeps_findings_and_drops_the_rest(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = both / "engine" / "runner.py"
    runner.write_text(runner.read_text(encoding="utf-8") + "# syncscan: ignore\n", encoding="utf-8")
    code, out, _ = check(capsys, "-q", "--output-format", "concise", both)
    assert code == 1
    assert [line.split(": ")[1].split()[0] for line in out.splitlines()] == ["SYNC002", "SYNC001"]
    code, loud, _ = check(capsys, "--output-format", "concise", both)
    assert "blanket ignore" in loud and "Found 2 findings." in loud


def test_verbose_prints_the_run_figures(both: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = check(capsys, "-v", "--format", "json", both)
    assert code == 1
    data = json.loads(out)
    assert f"files={data['stats']['files']}" in err and "seconds=" in err


def test_quiet_and_verbose_together_are_a_usage_error(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check(capsys, "-q", "-v", both)[0] == 2
