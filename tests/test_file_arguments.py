"""A file argument names its project: the root comes from the file, not from the
current directory (the way ruff and pytest find theirs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, copy_project

from syncscan.cli import main
from syncscan.project import project_root_of


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An unrelated project as the current directory: its own pyproject and package."""
    cwd = tmp_path / "unrelated"
    (cwd / "pkg").mkdir(parents=True)
    (cwd / "pyproject.toml").write_text("[tool.syncscan]\n", encoding="utf-8")
    (cwd / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(cwd)
    return cwd


def test_a_file_from_another_directory_is_analysed_in_its_own_project(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(BUGGY, tmp_path / "checkout")
    runner = project / "engine" / "runner.py"
    code = main(["check", "--format", "json", str(runner)])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]
    assert data["volatile"]["root"] == str(project.resolve())
    assert not (elsewhere / ".syncscan_cache").exists()  # nothing written where we stand
    assert (project / ".syncscan_cache").is_dir()


def test_a_relative_file_argument_from_a_parent_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_project(BUGGY, tmp_path / "checkout")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache", "checkout/engine/pool.py"]) == 1
    assert "SYNC001" in capsys.readouterr().out


def test_files_of_two_projects_are_refused_with_both_named(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = copy_project(BUGGY, tmp_path / "one")
    two = copy_project(FIXED, tmp_path / "two")
    first, second = one / "engine" / "runner.py", two / "engine" / "runner.py"
    code = main(["check", "--no-cache", str(first), str(second)])
    err = capsys.readouterr().err
    assert code == 2
    assert "different projects" in err
    assert str(one.resolve()) in err and str(two.resolve()) in err


def test_the_root_is_the_nearest_pyproject_then_the_vcs_root_then_the_top_package(
    tmp_path: Path,
) -> None:
    inner = tmp_path / "repo" / "src" / "top" / "sub"
    inner.mkdir(parents=True)
    for package in (inner, inner.parent):
        (package / "__init__.py").write_text("", encoding="utf-8")
    module = inner / "mod.py"
    module.write_text("", encoding="utf-8")
    assert project_root_of(module) == tmp_path / "repo" / "src"  # above the top package
    (tmp_path / "repo" / ".git").mkdir()
    assert project_root_of(module) == tmp_path / "repo"
    (tmp_path / "repo" / "src" / "pyproject.toml").write_text("", encoding="utf-8")
    assert project_root_of(module) == tmp_path / "repo" / "src"
