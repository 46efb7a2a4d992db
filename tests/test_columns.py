"""A finding's column is the column of its statement (it was always 1), in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import check_json, combined_project

from syncscan.cli import main


def statement_column(project: Path, path: str, line: int) -> int:
    """1-based column of the first character of the statement on `line`."""
    text = (project / path).read_text(encoding="utf-8").splitlines()[line - 1]
    return len(text) - len(text.lstrip()) + 1


@pytest.fixture
def both(tmp_path: Path) -> Path:
    """One SYNC001 finding (a `return` in a method) and one SYNC002 (in a method too)."""
    return combined_project(tmp_path / "both")


def test_json_columns_are_the_statements_columns(
    both: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, data, _ = check_json(capsys, both)
    assert sorted(f["code"] for f in data["findings"]) == ["SYNC001", "SYNC002"]
    for finding in data["findings"]:
        expected = statement_column(both, finding["path"], finding["line"])
        assert expected > 1  # a statement inside a method body
        assert finding["column"] == expected, finding["code"]


@pytest.mark.parametrize("fmt", ["sarif", "github", "concise", "full"])
def test_every_format_reports_the_column(
    fmt: str, both: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, data, _ = check_json(capsys, both)
    monkeypatch.chdir(both)
    assert main(["check", "--no-cache", "--format", fmt, "--source-root", ".", "."]) == 1
    out = capsys.readouterr().out
    for finding in data["findings"]:
        path, line, column = finding["path"], finding["line"], finding["column"]
        if fmt == "sarif":
            results = json.loads(out)["runs"][0]["results"]
            regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
            assert {"startLine": line, "startColumn": column} in regions
        elif fmt == "github":
            assert f"file={path},line={line},col={column}," in out
        else:
            assert f"{path}:{line}:{column}" in out
