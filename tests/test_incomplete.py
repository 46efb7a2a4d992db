"""A skipped file the step path needs makes the result incomplete: never a clean exit.

The slot-pool fixture's finding runs through `engine/pool.py`. When that file
does not parse, the finding cannot be seen; the run must say which root is
incomplete and why, in every format with the file's path and line, and exit 1
unless told otherwise (`--allow-incomplete`, `--exit-zero`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, copy_project

from syncscan.cli import main

ROOT = "engine.runner.Runner.execute_model"


def break_pool(project: Path) -> int:
    """Append a line that does not parse to engine/pool.py; its line number."""
    pool = project / "engine" / "pool.py"
    text = pool.read_text(encoding="utf-8")
    pool.write_text(text + "def broken(:\n", encoding="utf-8")
    return len(text.splitlines()) + 1


@pytest.fixture
def broken(tmp_path: Path) -> tuple[Path, int]:
    project = copy_project(BUGGY, tmp_path / "proj")
    return project, break_pool(project)


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_json_names_the_incomplete_root_the_file_and_its_line(
    broken: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    project, line = broken
    code, out, _ = run(capsys, "--format", "json", project)
    data = json.loads(out)
    assert code == 1
    assert data["findings"] == []  # the finding ran through the broken file
    (incomplete,) = [d for d in data["diagnostics"] if d["kind"] == "incomplete"]
    assert (incomplete["path"], incomplete["line"]) == ("engine/pool.py", line)
    assert ROOT in incomplete["message"]
    assert "does not parse" in incomplete["message"]
    assert "imported at engine/" in incomplete["message"]


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("full", "incomplete engine/pool.py:{line}: "),
        ("concise", "engine/pool.py:{line}: error: incomplete: "),
        ("github", "::error file=engine/pool.py,line={line},title=syncscan%3A incomplete::"),
        ("markdown", "**incomplete** `engine/pool.py:{line}`: "),
    ],
)
def test_every_text_format_carries_the_path_and_line(
    fmt: str,
    expected: str,
    broken: tuple[Path, int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project, line = broken
    monkeypatch.chdir(project)  # GitHub paths are relative to the checkout
    code, out, _ = run(capsys, "--format", fmt, project)
    assert code == 1
    assert expected.format(line=line) in out, out


def test_sarif_has_an_error_notification_at_the_line(
    broken: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    project, line = broken
    code, out, _ = run(capsys, "--format", "sarif", "--source-root", project, project)
    assert code == 1
    (invocation,) = json.loads(out)["runs"][0]["invocations"]
    errors = [n for n in invocation["toolExecutionNotifications"] if n["level"] == "error"]
    (notification,) = errors
    where = notification["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "engine/pool.py"
    assert where["region"]["startLine"] == line
    assert ROOT in notification["message"]["text"]


def test_a_flag_relaxes_the_exit_but_not_the_report(
    broken: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    project, line = broken
    code, out, _ = run(capsys, "--allow-incomplete", project)
    assert code == 0
    assert f"incomplete engine/pool.py:{line}" in out
    assert run(capsys, "--exit-zero", project)[0] == 0


def test_reused_findings_keep_the_run_incomplete(
    broken: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = broken
    cache = tmp_path / "cache"
    for reused in (0, 1):
        code = main(["check", "--format", "json", "--cache-dir", str(cache), str(project)])
        data = json.loads(capsys.readouterr().out)
        assert data["volatile"]["findings_reused"] == reused
        assert code == 1
        assert [d["kind"] for d in data["diagnostics"]].count("incomplete") == 1


def test_a_broken_file_off_the_step_path_is_skipped_but_the_run_is_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(FIXED, tmp_path / "fixed")
    (project / "engine" / "unused.py").write_text("def broken(:\n", encoding="utf-8")
    code, out, _ = run(capsys, "--format", "json", project)
    data = json.loads(out)
    assert code == 0
    assert [d["kind"] for d in data["diagnostics"] if d["path"]] == []  # never even read
