"""Bad input never stops a run: unreadable files are skipped and named, the rest is analysed.

A module on the step path that does not parse, is not UTF-8 or cannot be read
becomes a diagnostic (path relative to the root, a one-line reason, no
traceback); findings elsewhere are still reported. Packs naming code that is
not in the tree produce notes, not crashes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, PAUSE_BUGGY, check_json, copy_project

from syncscan.cli import main


def diagnostics_by_path(data: dict) -> dict[str, str]:
    return {d["path"]: d["message"] for d in data["diagnostics"] if d["kind"] == "skipped"}


def notes(data: dict) -> list[str]:
    return [d["message"] for d in data["diagnostics"] if not d["path"]]


def use_on_step_path(project: Path, *modules: str) -> None:
    """Make Runner.execute_model import and call `engine.<m>.helper` for each module."""
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    imports = "".join(f"import engine.{m}\n" for m in modules)
    calls = "".join(f"        engine.{m}.helper(n)\n" for m in modules)
    text = text.replace("import torch\n", f"import torch\n{imports}", 1)
    anchor = "        n = len(batch.token_ids)\n"
    assert anchor in text
    text = text.replace(anchor, anchor + calls, 1)
    runner.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "prefetch"])
def test_unparsable_and_non_utf8_modules_are_skipped_and_named(
    jobs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    (project / "engine" / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    (project / "engine" / "latin.py").write_bytes(
        b'def helper(n):\n    return "caf\xe9 \xff\xfe"\n'
    )
    use_on_step_path(project, "broken", "latin")

    code, data, err = check_json(capsys, "--jobs", jobs, project)
    assert code == 1
    (finding,) = data["findings"]
    assert finding["code"] == "SYNC001"
    assert finding["function"] == "engine.runner.Runner.execute_model"
    skipped = diagnostics_by_path(data)
    assert set(skipped) == {"engine/broken.py", "engine/latin.py"}, data["diagnostics"]
    assert "does not parse" in skipped["engine/broken.py"]
    assert "not UTF-8" in skipped["engine/latin.py"]
    for message in skipped.values():
        assert "\n" not in message
        assert "Traceback" not in message

    assert main(["check", "--no-cache", "--jobs", jobs, str(project)]) == 1
    out = capsys.readouterr().out
    assert "skipped engine/broken.py" in out
    assert "skipped engine/latin.py" in out
    assert "SYNC001" in out


@pytest.mark.parametrize(
    "source",
    [
        b"def helper(n:\n    return n\n",
        b"def helper(n):\n    return n\x00\n",
        b"def helper(n):\n\tif n:\n        return n\n",
        b'def helper(n):\n    print "python 2"\n',
        "def helper(n):\n    return 'x'\n".encode("utf-16"),
        b"def helper(n):\n    return '\xc3\x28'\n",
    ],
    ids=["syntax", "nul-byte", "tabs-and-spaces", "python2", "utf-16", "bad-utf8-sequence"],
)
def test_each_kind_of_bad_module_becomes_one_diagnostic(
    source: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    (project / "engine" / "bad.py").write_bytes(source)
    use_on_step_path(project, "bad")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]
    skipped = diagnostics_by_path(data)
    assert list(skipped) == ["engine/bad.py"], data["diagnostics"]
    assert skipped["engine/bad.py"].strip()


@pytest.mark.parametrize(
    ("on_step_path", "why"),
    [(True, "cannot read"), (False, "skipped by the text scan")],
    ids=["on-the-step-path", "off-the-step-path"],
)
def test_dangling_symlink_module_is_named_once_relative_to_the_root(
    on_step_path: bool, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file is read (the class-header scan): one that cannot be is said, once."""
    project = copy_project(BUGGY, tmp_path / "proj")
    (project / "engine" / "gone.py").symlink_to(tmp_path / "deleted_target.py")
    if on_step_path:
        use_on_step_path(project, "gone")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert len(data["findings"]) == 1
    skipped = diagnostics_by_path(data)
    assert list(skipped) == ["engine/gone.py"], data["diagnostics"]
    assert why in skipped["engine/gone.py"]


def test_locals_assigned_from_each_other_in_a_condition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`a = b; b = a; if a:` is legal code: the mode split must not recurse forever."""
    project = copy_project(BUGGY, tmp_path / "proj")
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    runner.write_text(
        text.replace(
            "        if self.encoder_only:\n",
            "        a = b\n        b = a\n        if a:\n            pass\n"
            "        if self.encoder_only:\n",
            1,
        ),
        encoding="utf-8",
    )
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]


def test_unused_bad_module_does_not_disturb_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(FIXED, tmp_path / "proj")
    (project / "engine" / "scratch.py").write_bytes(b"def (\xff\n")
    code, data, _ = check_json(capsys, project)
    assert (code, data["findings"]) == (0, [])


# --------------------------------------------------------------------------- packs vs. the tree


@pytest.mark.parametrize(
    ("fixture", "old", "new", "named"),
    [
        (BUGGY, '"engine.runner.Runner"', '"engine.runner.Missing"', "engine.runner.Missing"),
        (BUGGY, '"engine.runner.Runner"', '"engine.nowhere.Runner"', "engine.nowhere.Runner"),
        (BUGGY, 'method = "execute_model"', 'method = "no_such_step"', "no_such_step"),
        (PAUSE_BUGGY, "EngineCore.pause", "EngineCore.no_such_pause", "no_such_pause"),
    ],
    ids=["step-root-class", "step-root-module", "step-root-method", "quiescence-point"],
)
def test_user_pack_row_naming_nothing_is_a_configuration_error(
    fixture: Path,
    old: str,
    new: str,
    named: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It was a note and a clean exit: a typo in the user's own pack turned the check green."""
    project = copy_project(fixture, tmp_path / "proj")
    pack = project / "step_pack.toml"
    pack.write_text(pack.read_text(encoding="utf-8").replace(old, new), "utf-8")
    assert main(["check", "--no-cache", str(project)]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err
    assert named in err and str(pack) in err


def test_directory_without_python_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, data, _ = check_json(capsys, empty)
    assert code == 0
    assert data["findings"] == []
    assert any("no step roots" in n for n in notes(data))
