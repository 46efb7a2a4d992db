"""The command line: exit codes, the JSON contract, subcommands, changed-files mode.

Every run goes through `syncscan.cli.main(argv)` as a user or CI job would
call it, with `--no-cache` so nothing is written next to the fixtures.
Projects that are modified are copied into `tmp_path` first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, FIXTURES, check_json, combined_project, copy_project

from syncscan import runner
from syncscan.cli import main

PEER_CLEAN = FIXTURES / "peer_bounded_mode" / "clean"

TOP_KEYS = {"version", "findings", "diagnostics", "stats", "volatile"}
FINDING_KEYS = {
    "code",
    "name",
    "severity",
    "confidence",
    "message",
    "path",
    "line",
    "column",
    "function",
    "step_root",
    "mode",
    "mode_label",
    "witness",
    "related",
    "remedy",
    "fingerprint",
}
WITNESS_KEYS = {"path", "line", "function", "note"}
STATS_KEYS = {"files", "summarised", "step_roots", "unresolved_calls"}
VOLATILE_KEYS = {"root", "seconds", "parsed", "cache_hits", "read", "findings_reused"}
DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead")


# --------------------------------------------------------------------------- exit codes


def test_fixed_fixture_exits_0() -> None:
    assert main(["check", "--no-cache", str(FIXED)]) == 0


def test_buggy_fixture_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-cache", str(BUGGY)]) == 1
    assert "SYNC001" in capsys.readouterr().out


def test_nonexistent_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no_such_project"
    assert main(["check", "--no-cache", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err
    assert str(missing) in err


def test_two_project_directories_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-cache", str(BUGGY), str(FIXED)]) == 2
    assert "one project directory" in capsys.readouterr().err


def test_no_subcommand_exits_2_and_version_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["--version"]) == 0
    assert "syncscan" in capsys.readouterr().out


def test_explain_unknown_rule_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "SYNC999"]) == 2
    err = capsys.readouterr().err
    assert "unknown rule" in err
    assert "SYNC999" in err


def test_rules_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "SYNC001" in out
    assert "SYNC002" in out


def test_exit_zero_on_buggy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--no-cache", "--exit-zero", str(BUGGY)]) == 0
    assert "SYNC001" in capsys.readouterr().out  # still reported, just not failing


def test_fail_on_follows_configured_severity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    (project / "pyproject.toml").write_text(
        '[tool.syncscan]\npacks = ["step_pack.toml"]\nseverity = {SYNC001 = "warning"}\n',
        encoding="utf-8",
    )
    code, data, _ = check_json(capsys, project)
    assert code == 0  # default --fail-on error: a warning does not fail
    assert [f["severity"] for f in data["findings"]] == ["warning"]
    assert main(["check", "--no-cache", "--fail-on", "warning", str(project)]) == 1
    assert main(["check", "--no-cache", "--fail-on", "note", str(project)]) == 1
    assert main(["check", "--no-cache", "--fail-on", "error", str(project)]) == 0


def test_select_other_rule_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = check_json(capsys, "--select", "SYNC002", BUGGY)
    assert code == 0
    assert data["findings"] == []


def test_select_same_rule_lowercase_still_reports(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = check_json(capsys, "--select", "sync001", BUGGY)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]


def test_ignore_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = check_json(capsys, "--ignore", "SYNC001", BUGGY)
    assert code == 0
    assert data["findings"] == []


def test_select_and_ignore_on_a_project_with_both_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = combined_project(tmp_path / "both")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert sorted(f["code"] for f in data["findings"]) == ["SYNC001", "SYNC002"]
    code, data, _ = check_json(capsys, "--select", "SYNC002", project)
    assert (code, [f["code"] for f in data["findings"]]) == (1, ["SYNC002"])
    code, data, _ = check_json(capsys, "--ignore", "SYNC002", project)
    assert (code, [f["code"] for f in data["findings"]]) == (1, ["SYNC001"])
    code, data, _ = check_json(capsys, "--ignore", "SYNC001,SYNC002", project)
    assert (code, data["findings"]) == (0, [])


def test_select_naming_no_rule_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in --select must not silently turn every rule off (and pass CI)."""
    code = main(["check", "--no-cache", "--select", "SYNC999", str(BUGGY)])
    err = capsys.readouterr().err
    assert code == 2
    assert "SYNC999" in err


def test_output_into_missing_directory_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 means "findings"; an unwritable --output must be exit 2 with a message."""
    target = tmp_path / "no_such_dir" / "report.json"
    code = main(["check", "--no-cache", "--format", "json", "--output", str(target), str(FIXED)])
    assert code == 2
    assert str(target) in capsys.readouterr().err


# --------------------------------------------------------------------------- JSON contract


def test_json_has_exactly_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = check_json(capsys, BUGGY)
    assert code == 1
    assert set(data) == TOP_KEYS
    assert data["volatile"]["root"] == str(BUGGY.resolve())
    assert isinstance(data["version"], str) and data["version"]
    assert isinstance(data["diagnostics"], list)
    assert len(data["findings"]) == 1
    finding = data["findings"][0]
    assert set(finding) == FINDING_KEYS, set(finding) ^ FINDING_KEYS
    assert finding["code"] == "SYNC001"
    assert finding["severity"] == "error"
    assert finding["path"] == "engine/runner.py"
    assert isinstance(finding["line"], int) and isinstance(finding["column"], int)
    assert finding["function"] == "engine.runner.Runner.execute_model"
    assert finding["step_root"] == "engine.runner.Runner.execute_model"
    assert finding["mode"] == {"self.encoder_only": True}
    assert finding["mode_label"] == "encoder-only"
    assert isinstance(finding["fingerprint"], str) and finding["fingerprint"]
    assert finding["witness"], "a finding must carry its witness path"
    for step in finding["witness"]:
        assert set(step) == WITNESS_KEYS
        assert isinstance(step["line"], int)
    assert "engine.pool.SlotPool.write" in {step["function"] for step in finding["witness"]}
    assert set(data["stats"]) >= STATS_KEYS, STATS_KEYS - set(data["stats"])
    assert set(data["volatile"]) >= VOLATILE_KEYS, VOLATILE_KEYS - set(data["volatile"])
    assert not set(data["stats"]) & set(data["volatile"])


def stable_part(text: str) -> str:
    """The report up to its `volatile` key, which is last: the bytes that must not vary."""
    data = json.loads(text)
    assert list(data)[-1] == "volatile"
    return text[: text.index('  "volatile": {')]


def test_json_is_byte_stable_across_locations_and_cache_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cold, warm (findings reused) and a copy elsewhere give the same bytes, apart
    from the `volatile` figures (the absolute root, timings, cache counts)."""
    first = combined_project(tmp_path / "one")
    second = combined_project(tmp_path / "elsewhere" / "two")
    texts = []
    for project, cache in ((first, "cache1"), (first, "cache1"), (second, "cache2")):
        args = ["check", "--format", "json", "--cache-dir", str(tmp_path / cache), str(project)]
        assert main(args) == 1
        texts.append(capsys.readouterr().out)
    volatile = [json.loads(text)["volatile"] for text in texts]
    assert volatile[0]["findings_reused"] == 0 and volatile[1]["findings_reused"] == 1
    assert volatile[0]["root"] != volatile[2]["root"]
    assert stable_part(texts[0]) == stable_part(texts[1]) == stable_part(texts[2])
    assert str(tmp_path) not in stable_part(texts[0])


def test_json_output_file_matches_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    assert (
        main(["check", "--no-cache", "--format", "json", "--output", str(report), str(BUGGY)]) == 1
    )
    assert capsys.readouterr().out == ""
    written = json.loads(report.read_text(encoding="utf-8"))
    _, printed, _ = check_json(capsys, BUGGY)
    assert written["findings"] == printed["findings"]


def test_json_findings_are_deterministic_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = combined_project(tmp_path / "both")
    _, first, _ = check_json(capsys, project)
    _, second, _ = check_json(capsys, project)
    assert len(first["findings"]) == 2
    assert first["findings"] == second["findings"]
    assert first["diagnostics"] == second["diagnostics"]


def test_json_findings_are_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    project = combined_project(tmp_path / "both")
    runs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "syncscan", "check", "--no-cache", "--format", "json",
             str(project)],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        runs.append(json.loads(proc.stdout))
    assert [f["code"] for f in runs[0]["findings"]] == ["SYNC002", "SYNC001"]  # path order
    for other in runs[1:]:
        assert other["findings"] == runs[0]["findings"]
        assert other["diagnostics"] == runs[0]["diagnostics"]


# --------------------------------------------------------------------------- subcommands


@pytest.mark.parametrize("code", ["SYNC001", "SYNC002"])
def test_explain_prints_the_four_headings_and_remedy(
    code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", code]) == 0
    out = capsys.readouterr().out
    assert code in out
    for heading in DOC_HEADINGS:
        assert heading in out, heading
    assert "Reference remedy" in out
    positions = [out.index(h) for h in (*DOC_HEADINGS, "Reference remedy")]
    assert positions == sorted(positions), "headings out of order"


def test_config_prints_step_root_and_pack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--no-cache", str(BUGGY)]) == 0
    out = capsys.readouterr().out
    assert "engine.runner.Runner" in out
    assert "execute_model" in out
    assert "fixture-slot_pool_mode_without_wait" in out
    assert str(BUGGY / "pyproject.toml") in out


def test_config_on_missing_directory_exits_2(tmp_path: Path) -> None:
    assert main(["config", str(tmp_path / "nope")]) == 2


def test_audit_shows_peer_bounded_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--no-cache", str(PEER_CLEAN)]) == 0
    out = capsys.readouterr().out
    assert "bounded by peer" in out
    assert "engine.runner.Runner.execute_model" in out


# --------------------------------------------------------------------------- changed files


def test_changed_only_without_files_exits_0_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_analysis(*args: object, **kwargs: object) -> None:
        raise AssertionError("--changed-only with no files must not analyse anything")

    monkeypatch.setattr(runner, "run", no_analysis)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--changed-only", "--no-cache"]) == 0
    assert list(tmp_path.iterdir()) == []


def test_changed_only_reports_findings_whose_witness_touches_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    _, full, _ = check_json(capsys, project)
    (finding,) = full["findings"]
    touched = {finding["path"]} | {step["path"] for step in finding["witness"]}
    assert finding["path"] != "engine/pool.py"  # pool.py only lies on the witness
    assert "engine/pool.py" in touched
    assert "engine/uva.py" not in touched

    monkeypatch.chdir(project)
    assert main(["check", "--changed-only", "--no-cache", "engine/pool.py"]) == 1
    assert "SYNC001" in capsys.readouterr().out
    assert main(["check", "--changed-only", "--no-cache", "engine/uva.py"]) == 0
    # A deleted file is a changed file too; it touches nothing.
    assert main(["check", "--changed-only", "--no-cache", "engine/deleted.py"]) == 0
    capsys.readouterr()
    code, data, _ = check_json(capsys, "--changed-only", "engine/uva.py", "engine/runner.py")
    assert code == 1
    assert [f["fingerprint"] for f in data["findings"]] == [finding["fingerprint"]]


def test_changed_only_from_a_subdirectory_finds_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    monkeypatch.chdir(project / "engine")
    assert main(["check", "--changed-only", "--no-cache", "pool.py"]) == 1
    assert main(["check", "--changed-only", "--no-cache", "uva.py"]) == 0


def test_config_prints_unread_modes_and_dummy_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pack's `unread_mode` rows and a root whose output is discarded are part of
    the effective configuration a reader must see."""
    project = copy_project(BUGGY, tmp_path / "p")
    pack = project / "step_pack.toml"
    pack.write_text(
        pack.read_text(encoding="utf-8")
        + '\n[[step_root]]\nclass = "engine.runner.Runner"\nmethod = "sample_tokens"\n'
        "discards_output = true\n"
        '\n[[unread_mode]]\npredicate = "self.encoder_only"\nvalue = true\n'
        'reason = "an encoder-only step uses no uploaded input"\n',
        encoding="utf-8",
    )
    assert main(["config", "--no-cache", str(project)]) == 0
    out = capsys.readouterr().out
    assert "unread: an encoder-only step uses no uploaded input" in out
    assert "discarded" in out
