"""Baselines: accept today's findings by fingerprint, report only new ones.

`--write-baseline FILE` records the current findings and exits 0;
`--baseline FILE` hides the recorded ones, reports the rest, and lists entries
that no longer match any finding. A baseline that cannot be read is a
configuration error (exit 2), never an empty baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, PAUSE_BUGGY, check_json, combined_project, copy_project

from syncscan.cli import main


def write_baseline(capsys: pytest.CaptureFixture[str], target: Path, *args: object) -> str:
    code = main(["check", "--no-cache", "--write-baseline", str(target), *map(str, args)])
    err = capsys.readouterr().err
    assert code == 0, err
    return err


def entries(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["syncscan_baseline"] == 1
    return data["findings"]


def test_write_baseline_then_accept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, before, _ = check_json(capsys, BUGGY)
    (finding,) = before["findings"]
    baseline = tmp_path / "baseline.json"
    err = write_baseline(capsys, baseline, BUGGY)
    assert "1 finding" in err
    recorded = entries(baseline)
    assert [e["fingerprint"] for e in recorded] == [finding["fingerprint"]]
    assert recorded[0]["code"] == "SYNC001"
    assert recorded[0]["path"] == "engine/runner.py"

    code, data, _ = check_json(capsys, "--baseline", baseline, BUGGY)
    assert code == 0
    assert data["findings"] == []
    assert not any("no longer matches" in d["message"] for d in data["diagnostics"])
    assert main(["check", "--no-cache", "--baseline", str(baseline), str(BUGGY)]) == 0


def test_baseline_of_a_clean_project_is_empty_and_accepts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "baseline.json"
    write_baseline(capsys, baseline, FIXED)
    assert entries(baseline) == []
    assert main(["check", "--no-cache", "--baseline", str(baseline), str(BUGGY)]) == 1


def test_baseline_survives_lines_moving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = copy_project(BUGGY, tmp_path / "proj")
    baseline = tmp_path / "baseline.json"
    write_baseline(capsys, baseline, project)
    _, before, _ = check_json(capsys, project)
    for rel in ("engine/runner.py", "engine/pool.py", "engine/inputs.py"):
        path = project / rel
        path.write_text("# a licence header\n# added later\n\n" + path.read_text(), "utf-8")
    code, data, _ = check_json(capsys, "--baseline", baseline, project)
    assert (code, data["findings"]) == (0, [])
    code, data, _ = check_json(capsys, project)
    moved = before["findings"][0]["line"] + 3
    assert code == 1 and data["findings"][0]["line"] == moved  # it moved, and is still accepted


def test_stale_entry_is_listed_and_new_finding_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "sync002.json"
    write_baseline(capsys, baseline, PAUSE_BUGGY)
    (stale,) = entries(baseline)
    assert stale["code"] == "SYNC002"

    code, data, _ = check_json(capsys, "--baseline", baseline, BUGGY)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]
    listed = [d["message"] for d in data["diagnostics"] if "no longer matches" in d["message"]]
    assert len(listed) == 1
    assert stale["fingerprint"] in listed[0]
    assert "SYNC002" in listed[0]


def test_baseline_hides_only_the_accepted_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = combined_project(tmp_path / "both")
    baseline = tmp_path / "sync002.json"
    write_baseline(capsys, baseline, PAUSE_BUGGY)
    code, data, _ = check_json(capsys, "--baseline", baseline, project)
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]
    assert not any("no longer matches" in d["message"] for d in data["diagnostics"])


def test_refreshing_a_baseline_keeps_its_accepted_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--baseline B --write-baseline B2` records every current finding, accepted ones too.

    Otherwise refreshing a baseline drops the findings it accepted, and the next
    CI run with the refreshed file fails on them.
    """
    project = combined_project(tmp_path / "both")
    old = tmp_path / "old.json"
    write_baseline(capsys, old, PAUSE_BUGGY)
    refreshed = tmp_path / "refreshed.json"
    write_baseline(capsys, refreshed, "--baseline", old, project)
    codes = sorted(e["code"] for e in entries(refreshed))
    assert codes == ["SYNC001", "SYNC002"]
    assert main(["check", "--no-cache", "--baseline", str(refreshed), str(project)]) == 0


@pytest.mark.parametrize(
    "content",
    [
        '{"syncscan_baseline": 1, "findings": [',  # truncated JSON
        "\x00\x01 not json",
        "[]",  # JSON, but not a baseline
        '{"syncscan_baseline": 2, "findings": []}',  # another format
        '{"syncscan_baseline": 1, "findings": {"a": 1}}',
        '{"syncscan_baseline": 1, "findings": [{"code": "SYNC001"}]}',  # no fingerprint
    ],
    ids=["truncated", "binary", "list", "format2", "findings-dict", "no-fingerprint"],
)
def test_corrupt_baseline_exits_2(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(content, encoding="utf-8")
    code = main(["check", "--no-cache", "--baseline", str(baseline), str(BUGGY)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(baseline) in err
    assert "Traceback" not in err


def test_missing_baseline_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "never_written.json"
    assert main(["check", "--no-cache", "--baseline", str(baseline), str(FIXED)]) == 2
    assert str(baseline) in capsys.readouterr().err


def test_write_baseline_into_missing_directory_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no_such_dir" / "baseline.json"
    code = main(["check", "--no-cache", "--write-baseline", str(target), str(BUGGY)])
    assert code == 2
    assert str(target) in capsys.readouterr().err
