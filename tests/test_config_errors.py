"""Bad configuration: exit 2 with a message naming the key and the file.

One test per kind of mistake, in `[tool.syncscan]`, in a pack file, or on the
command line (`--config`). A configuration problem must never fall back to
defaults silently: with no step roots that would turn every check green.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import BUGGY, check_json, copy_project

from syncscan.cli import main

GOOD_HEAD = '[tool.syncscan]\npacks = ["step_pack.toml"]\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(BUGGY, tmp_path / "proj")


def fails(capsys: pytest.CaptureFixture[str], *args: object, command: str = "check") -> str:
    """Run syncscan, expect exit 2, return stderr."""
    code = main([command, "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    assert code == 2, f"exit {code}\nstdout:\n{out}\nstderr:\n{err}"
    assert "Traceback" not in err
    return err


def set_pyproject(project: Path, text: str) -> Path:
    path = project / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- [tool.syncscan]


@pytest.mark.parametrize("command", ["check", "audit", "config"])
def test_unknown_key(command: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + "colour = 1\n")
    err = fails(capsys, project, command=command)
    assert "colour" in err
    assert str(config) in err
    assert "configuration error" in err


def test_list_expected(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + 'select = "SYNC001"\n')
    err = fails(capsys, project)
    assert "tool.syncscan.select" in err
    assert "list" in err
    assert str(config) in err


def test_list_of_non_strings(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + "exclude = [1, 2]\n")
    err = fails(capsys, project)
    assert "tool.syncscan.exclude" in err
    assert str(config) in err


def test_bad_severity_value(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + 'severity = {SYNC001 = "fatal"}\n')
    err = fails(capsys, project)
    assert "tool.syncscan.severity" in err
    assert str(config) in err


def test_severity_for_an_unknown_rule(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`SYNC01` is a typo: the severity would silently apply to nothing."""
    config = set_pyproject(project, GOOD_HEAD + 'severity = {SYNC01 = "warning"}\n')
    err = fails(capsys, project)
    assert "SYNC01" in err
    assert str(config) in err


def test_select_naming_no_rule(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`select = ["SNYC001"]` would silently disable every rule and pass CI."""
    config = set_pyproject(project, GOOD_HEAD + 'select = ["SNYC001"]\n')
    err = fails(capsys, project)
    assert "SNYC001" in err
    assert str(config) in err


def test_cache_dir_not_a_string(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + "cache_dir = 3\n")
    err = fails(capsys, project)
    assert "tool.syncscan.cache_dir" in err
    assert str(config) in err


def test_tool_syncscan_not_a_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, "[tool]\nsyncscan = 1\n")
    err = fails(capsys, project)
    assert "[tool.syncscan] must be a table" in err  # the message, not eaten as markup
    assert str(config) in err


def test_inline_pack_rows_keep_any_text(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows in [tool.syncscan] are read as data: text TOML accepts is kept as written."""
    label = 'encoder \\ only "😀"'
    set_pyproject(
        project,
        GOOD_HEAD
        + '[[tool.syncscan.mode]]\npredicate = "self.encoder_only"\nvalue = true\n'
        + f"label = '{label}'\n",
    )
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert [f["mode_label"] for f in data["findings"]] == [label]


def test_inline_pack_rows_not_an_array(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(
        project, GOOD_HEAD + '[tool.syncscan.step_root]\nclass = "a.B"\nmethod = "m"\n'
    )
    err = fails(capsys, project)
    assert "tool.syncscan.step_root" in err
    assert str(config) in err


def test_inline_step_root_without_class(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + '[[tool.syncscan.step_root]]\nmethod = "m"\n')
    err = fails(capsys, project)
    assert "'class'" in err
    assert str(config) in err


def test_invalid_toml_in_pyproject(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, '[tool.syncscan]\npacks = ["step_pack.toml"\n')
    err = fails(capsys, project)
    assert str(config) in err
    assert "cannot read configuration" in err


def test_pyproject_not_utf8(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = project / "pyproject.toml"
    config.write_bytes(b'[tool.syncscan]\npacks = ["step_pack.toml"]\n# caf\xe9\n')
    err = fails(capsys, project)
    assert str(config) in err


# --------------------------------------------------------------------------- packs


def test_packs_entry_naming_a_missing_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = set_pyproject(project, '[tool.syncscan]\npacks = ["missing_pack.toml"]\n')
    err = fails(capsys, project)
    assert "missing_pack.toml" in err
    assert "pack" in err
    assert str(config) in err


def test_pack_with_unknown_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = project / "step_pack.toml"
    pack.write_text(pack.read_text(encoding="utf-8") + "\n[colour]\nred = 1\n", encoding="utf-8")
    err = fails(capsys, project)
    assert "colour" in err
    assert str(pack) in err


def test_pack_step_root_missing_class(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = project / "step_pack.toml"
    text = pack.read_text(encoding="utf-8")
    without = text.replace('class = "engine.runner.Runner"\n', "")
    assert without != text
    pack.write_text(without, encoding="utf-8")
    err = fails(capsys, project)
    assert "'class'" in err
    assert str(pack) in err


def test_pack_without_a_name(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = project / "step_pack.toml"
    text = pack.read_text(encoding="utf-8")
    pack.write_text(
        text.replace('name = "fixture-slot_pool_mode_without_wait"\n', ""), encoding="utf-8"
    )
    err = fails(capsys, project)
    assert "a pack needs [pack] with a name" in err  # the message, not eaten as markup
    assert str(pack) in err


def test_pack_invalid_toml(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = project / "step_pack.toml"
    pack.write_text(pack.read_text(encoding="utf-8") + "\n[[step_root]\n", encoding="utf-8")
    err = fails(capsys, project)
    assert "not valid TOML" in err
    assert str(pack) in err


def test_pack_mode_value_of_wrong_type(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = project / "step_pack.toml"
    text = pack.read_text(encoding="utf-8")
    wrong = text.replace("value = true", 'value = "true"')
    assert wrong != text
    pack.write_text(wrong, encoding="utf-8")
    err = fails(capsys, project)
    assert "'value'" in err
    assert str(pack) in err


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("subclasses = true", 'subclasses = "yes"', "subclasses"),
        ('continuation = ["sample_tokens"]', "continuation = [1]", "continuation"),
        (
            "[[resolution]]",
            '[[rpc]]\nmethod = "call"\nname_argument = "first"\n'
            'receivers = ["engine.runner.Runner"]\n\n[[resolution]]',
            "name_argument",
        ),
    ],
    ids=["bool", "list-of-strings", "int"],
)
def test_pack_optional_field_of_wrong_type(
    old: str, new: str, key: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Optional fields are checked like required ones: a clear error, never a traceback."""
    pack = project / "step_pack.toml"
    text = pack.read_text(encoding="utf-8")
    wrong = text.replace(old, new, 1)
    assert wrong != text
    pack.write_text(wrong, encoding="utf-8")
    err = fails(capsys, project)
    assert f"'{key}'" in err
    assert str(pack) in err


# --------------------------------------------------------------------------- --config


@pytest.mark.parametrize("command", ["check", "config"])
def test_config_option_naming_a_missing_file(
    command: str, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An explicit --config that does not exist must not silently mean "defaults"."""
    missing = tmp_path / "no_such_config.toml"
    err = fails(capsys, "--config", missing, project, command=command)
    assert str(missing) in err


def test_config_option_with_a_bad_key(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "syncscan.toml"
    config.write_text('packs = ["step_pack.toml"]\nunknown_thing = true\n', encoding="utf-8")
    err = fails(capsys, "--config", config, project)
    assert "unknown_thing" in err
    assert str(config) in err


def test_config_option_bare_toml_is_used(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The positive case: a bare syncscan TOML given by --config configures the run."""
    config = tmp_path / "syncscan.toml"
    shutil.copy(project / "step_pack.toml", tmp_path / "step_pack.toml")
    config.write_text('packs = ["step_pack.toml"]\n', encoding="utf-8")
    (project / "pyproject.toml").unlink()
    assert main(["check", "--no-cache", "--config", str(config), str(project)]) == 1
    assert "SYNC001" in capsys.readouterr().out


# ------------------------------------------------------- pack entries that match nothing


def edit_pack(project: Path, old: str, new: str) -> Path:
    pack = project / "step_pack.toml"
    text = pack.read_text(encoding="utf-8")
    assert old in text
    pack.write_text(text.replace(old, new, 1), encoding="utf-8")
    return pack


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ('class = "engine.runner.Runner"', 'class = "engine.runner.Runer"', "not in the project"),
        ('method = "execute_model"', 'method = "execute_modle"', "has no method 'execute_modle'"),
    ],
    ids=["class", "method"],
)
def test_user_step_root_that_does_not_exist_is_a_configuration_error(
    old: str, new: str, why: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a note and `0 step roots`, exit 0: a typo turned the check green."""
    pack = edit_pack(project, old, new)
    err = fails(capsys, project)
    assert str(pack) in err
    assert new.split(" = ")[1].strip('"') in err  # the entry, as written
    assert why in err


def test_inline_step_root_that_does_not_exist_names_the_pyproject(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = set_pyproject(
        project,
        GOOD_HEAD + '[[tool.syncscan.step_root]]\nclass = "engine.nope.Runner"\nmethod = "step"\n',
    )
    err = fails(capsys, project)
    assert str(config) in err
    assert "engine.nope.Runner" in err


def test_user_quiescence_point_that_does_not_exist_is_a_configuration_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    set_pyproject(
        project,
        GOOD_HEAD + '[[tool.syncscan.quiescence]]\nfunction = "engine.runner.Runner.pawse"\n',
    )
    err = fails(capsys, project)
    assert "engine.runner.Runner.pawse" in err
    assert "pyproject.toml" in err


def test_misspelt_pack_key_is_named_as_unknown(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = edit_pack(project, 'class = "engine', 'clas = "engine')
    err = fails(capsys, project)
    assert "unknown key 'clas'" in err
    assert "did you mean 'class'" in err
    assert "must be a str" not in err
    assert str(pack) in err


def test_disable_packs_naming_no_pack(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = set_pyproject(project, GOOD_HEAD + 'disable_packs = ["nope"]\n')
    err = fails(capsys, project)
    assert "'nope'" in err and "disable_packs" in err
    assert str(config) in err


def test_built_in_entries_absent_from_the_tree_say_so_loudly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A built-in pack entry may be absent from an older release (a note), but a run
    that analysed nothing at all says so on stderr, and fails under --strict."""
    tree = tmp_path / "old_release"
    (tree / "vllm").mkdir(parents=True)
    (tree / "vllm" / "__init__.py").write_text("", encoding="utf-8")  # activates the vllm pack
    (tree / "vllm" / "engine.py").write_text("def step():\n    return None\n", encoding="utf-8")
    code = main(["check", "--no-cache", str(tree)])
    out, err = capsys.readouterr()
    assert code == 0
    assert "nothing was analysed" in err
    assert "vllm" in err
    assert "0 step roots" in out
    assert main(["check", "--no-cache", "--strict", str(tree)]) == 2
    assert "nothing was analysed" in capsys.readouterr().err
