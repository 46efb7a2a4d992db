"""Suppression comments (`# syncscan: ignore[CODE] reason`) and sanctioned syncs.

A suppression applies on any line of the flagged statement or on the `def`
line (or a decorator line) of the flagged function; one without a reason still
applies but is reported; `--report-unused-ignores` fails the run on comments
that suppress nothing. `# gpu-sync-ok: reason` lines and
`with gpu_sync_allowed():` blocks are recorded in the module summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import BUGGY, FIXED, check_json, copy_project

from syncscan.cli import main
from syncscan.index import ir
from syncscan.index.build import summarise
from syncscan.index.facts import scan
from syncscan.index.summary import summary_from_data, summary_to_data

REASON = "encoder-only steps are serialised upstream"


def messages(data: dict) -> list[str]:
    return [d["message"] for d in data["diagnostics"]]


def edit_line(path: Path, line: int, suffix: str) -> None:
    """Append `suffix` to 1-based `line` of `path`."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + suffix + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def line_of(path: Path, text: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture
def buggy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict]:
    """A copy of the buggy fixture and its one SYNC001 finding (from the JSON report)."""
    project = copy_project(BUGGY, tmp_path / "proj")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    (finding,) = data["findings"]
    assert finding["code"] == "SYNC001"
    return project, finding


def test_reasoned_suppression_on_flagged_line(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"], f"  # syncscan: ignore[SYNC001] {REASON}")
    code, data, err = check_json(capsys, project)
    assert code == 0
    assert data["findings"] == []
    assert not any("no reason" in m for m in messages(data))
    assert main(["check", "--no-cache", str(project)]) == 0


def test_suppression_on_def_line(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    runner = project / finding["path"]
    def_line = line_of(runner, "def execute_model(")
    assert def_line != finding["line"]
    edit_line(runner, def_line, f"  # syncscan: ignore[SYNC001] {REASON}")
    code, data, _ = check_json(capsys, project)
    assert (code, data["findings"]) == (0, [])


@pytest.mark.parametrize(
    "decorators",
    [
        "    @torch.inference_mode()  {comment}\n",
        "    @other([  {comment}\n        1,\n    ])\n    @torch.inference_mode()\n",
    ],
    ids=["one-line", "multi-line-above-another"],
)
def test_suppression_on_decorator_line(
    decorators: str, buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented "or a decorator line" of the flagged function."""
    project, finding = buggy
    runner = project / finding["path"]
    text = runner.read_text(encoding="utf-8")
    comment = f"# syncscan: ignore[SYNC001] {REASON}"
    decorated = text.replace(
        "    def execute_model(self, batch):\n",
        decorators.format(comment=comment) + "    def execute_model(self, batch):\n",
    )
    assert decorated != text
    runner.write_text(decorated, encoding="utf-8")
    code, data, _ = check_json(capsys, "--report-unused-ignores", project)
    assert [f["code"] for f in data["findings"]] == [], "decorator-line suppression ignored"
    assert code == 0


def test_suppression_on_continuation_line_of_flagged_statement(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    runner = project / finding["path"]
    text = runner.read_text(encoding="utf-8")
    split = text.replace(
        "            return EmptyOutput(batch.req_ids)\n",
        "            return EmptyOutput(\n"
        f"                batch.req_ids,  # syncscan: ignore[SYNC001] {REASON}\n"
        "            )\n",
    )
    assert split != text
    runner.write_text(split, encoding="utf-8")
    code, data, _ = check_json(capsys, "--report-unused-ignores", project)
    assert (code, data["findings"]) == (0, [])


def test_suppression_without_reason_applies_but_is_reported(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"], "  # syncscan: ignore[SYNC001]")
    code, data, _ = check_json(capsys, project)
    assert code == 0
    assert data["findings"] == []
    noted = [d for d in data["diagnostics"] if "no reason" in d["message"]]
    assert noted, messages(data)
    assert (noted[0]["path"], noted[0]["line"]) == (finding["path"], finding["line"])
    assert noted[0]["kind"] == "suppression"
    assert "SYNC001" in noted[0]["message"]


@pytest.mark.parametrize(
    ("offset", "comment"),
    [(0, "# syncscan: ignore[SYNC002] other"), (2, f"# syncscan: ignore[SYNC001] {REASON}")],
    ids=["another-code", "unrelated-line"],
)
def test_suppression_that_does_not_apply(
    offset: int, comment: str, buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"] + offset, f"  {comment}")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert [f["fingerprint"] for f in data["findings"]] == [finding["fingerprint"]]


@pytest.mark.parametrize("codes", ["SYNC002, SYNC001", "SYNC"])
def test_suppression_with_several_codes_or_a_prefix(
    codes: str, buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"], f"  # syncscan: ignore[{codes}] {REASON}")
    code, data, _ = check_json(capsys, project)
    assert (code, data["findings"]) == (0, [])


# --------------------------------------------------------------------------- unused suppressions


def test_unused_suppression_is_reported_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_project(FIXED, tmp_path / "fixed")
    runner = project / "engine" / "runner.py"
    def_line = line_of(runner, "def execute_model(")
    edit_line(runner, def_line, "  # syncscan: ignore[SYNC001] left over from the bug")
    assert main(["check", "--no-cache", str(project)]) == 0  # only reported on request
    capsys.readouterr()
    assert main(["check", "--no-cache", "--report-unused-ignores", str(project)]) == 1
    err = "".join(capsys.readouterr())  # the console report, and stderr
    assert "suppresses nothing" in err
    assert f"engine/runner.py:{def_line}" in err
    assert (
        main(["check", "--no-cache", "--report-unused-ignores", "--exit-zero", str(project)]) == 0
    )


def test_used_suppression_is_not_reported_as_unused(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"], f"  # syncscan: ignore[SYNC001] {REASON}")
    code, data, err = check_json(capsys, "--report-unused-ignores", project)
    assert (code, data["findings"]) == (0, [])
    assert "suppresses nothing" not in err


def test_unused_suppression_in_a_module_off_the_step_path_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stale suppression left in a module the step path no longer reaches suppresses nothing."""
    project = copy_project(FIXED, tmp_path / "fixed")
    (project / "engine" / "legacy.py").write_text(
        "def old_step(buf):\n    return buf  # syncscan: ignore[SYNC001] was the slot-pool bug\n",
        encoding="utf-8",
    )
    code = main(["check", "--no-cache", "--report-unused-ignores", str(project)])
    err = "".join(capsys.readouterr())  # the console report, and stderr
    assert "engine/legacy.py:2" in err
    assert "suppresses nothing" in err
    assert code == 1


def test_suppression_syntax_quoted_in_a_docstring_is_not_a_suppression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text inside a string is not a comment: documenting the syntax is not a stale ignore."""
    project = copy_project(FIXED, tmp_path / "fixed")
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    runner.write_text(
        text.replace(
            '"""Model runner: one execute_model call per engine step.\n',
            '"""Model runner. Mute a finding with `# syncscan: ignore[SYNC001] <reason>`.\n',
            1,
        ),
        encoding="utf-8",
    )
    assert runner.read_text(encoding="utf-8") != text
    code = main(["check", "--no-cache", "--report-unused-ignores", str(project)])
    err = "".join(capsys.readouterr())  # the console report, and stderr
    assert "suppresses nothing" not in err
    assert code == 0


# --------------------------------------------------------------------------- summaries

SANCTIONED_SOURCE = """\
import torch

from engine.sync import gpu_sync_allowed


def step(x):
    n = x.sum().item()  # gpu-sync-ok: logged once per step for metrics
    y = x.tolist()
    with gpu_sync_allowed():
        z = x.cpu()
    return n, y, z  # syncscan: ignore[SYNC001, SYNC002] returned to the scheduler
"""


def test_marker_comments_are_recorded_whatever_the_packs_say() -> None:
    """Only comments count (line 8 has none); the packs pick the markers later."""
    summary = summarise(SANCTIONED_SOURCE, "m", "m.py", False)
    assert summary.marker_comments == ((7, "gpu-sync-ok"),)


def test_a_marker_is_a_lower_case_hyphenated_word_before_a_colon() -> None:
    source = (
        "a = 1  # type: ignore\n"
        "b = 2  # noqa: E501\n"
        "c = 3  # my-hook-ok: why\n"
        "# SPDX-License-Identifier: Apache-2.0\n"
        "d = '# gpu-sync-ok: in a string'\n"
    )
    assert summarise(source, "m", "m.py", False).marker_comments == ((3, "my-hook-ok"),)


def test_suppressions_are_recorded_with_codes_and_reason() -> None:
    (item,) = scan(SANCTIONED_SOURCE.encode()).suppressions
    assert item.line == 11
    assert item.codes == ("SYNC001", "SYNC002")
    assert item.reason == "returned to the scheduler"


def test_gpu_sync_allowed_block_is_a_with_of_that_call() -> None:
    summary = summarise(SANCTIONED_SOURCE, "m", "m.py", False)
    (function,) = [f for name, f in summary.functions.items() if name.endswith("step")]
    withs = [s for s in function.body if isinstance(s, ir.With)]
    assert len(withs) == 1
    block = withs[0]
    assert block.line == 9
    (item,) = block.items
    assert isinstance(item.context, ir.Call)
    assert item.context.func == ir.Name("gpu_sync_allowed")
    assert item.target is None
    (inner,) = block.body
    assert isinstance(inner, ir.Assign) and inner.line == 10


def test_comment_records_survive_the_cache_round_trip() -> None:
    summary = summarise(SANCTIONED_SOURCE, "m", "m.py", False)
    again = summary_from_data(json.loads(json.dumps(summary_to_data(summary))))
    assert again.marker_comments == summary.marker_comments
    assert again == summary


def test_function_header_spans_multiline_decorators_but_not_the_body_above() -> None:
    source = (
        "class A:\n"
        "    def a(self):\n"
        "        @inner\n"
        "        def b(): pass\n"
        "        return 1\n"
        "\n"
        "    @torch.inference_mode()\n"
        "    @other([\n"
        "        1,\n"
        "    ])\n"
        "    def step(self):\n"
        "        pass\n"
        "\n"
        "    def plain(self):\n"
        "        pass\n"
    )
    methods = summarise(source, "m", "m.py", False).classes["A"].methods
    assert (methods["step"].header_line, methods["step"].line) == (7, 11)
    assert (methods["plain"].header_line, methods["plain"].line) == (14, 14)
    assert (methods["a"].header_line, methods["a"].line) == (2, 2)


# --------------------------------------------------------------------------- malformed suppressions


@pytest.mark.parametrize(
    ("comment", "says"),
    [
        ("# syncscan: ignore", "blanket ignore"),
        ("# syncscan: ignore  because reasons", "blanket ignore"),
        ("# syncscan: ignore[] why", "blanket ignore"),
        (f"# syncscan: ignore[sync001] {REASON}", "ignore[SYNC001]"),
        (f"# syncscan: ignore[SYNC009] {REASON}", "'SYNC009' names no rule"),
        (f"# syncscan: ignroe[SYNC001] {REASON}", "not a syncscan directive"),
    ],
    ids=["bare", "bare-with-text", "empty-list", "lower-case", "unknown-code", "typo"],
)
def test_malformed_suppression_is_a_warning_with_path_and_line_and_suppresses_nothing(
    comment: str,
    says: str,
    buggy: tuple[Path, dict],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """These were dropped silently: the finding was reported with no word on the comment."""
    project, finding = buggy
    edit_line(project / finding["path"], finding["line"], f"  {comment}")
    code, data, _ = check_json(capsys, project)
    assert code == 1
    assert [f["fingerprint"] for f in data["findings"]] == [finding["fingerprint"]]
    (warning,) = [d for d in data["diagnostics"] if d["kind"] == "suppression"]
    assert (warning["path"], warning["line"]) == (finding["path"], finding["line"])
    assert says in warning["message"]

    monkeypatch.chdir(project)
    assert main(["check", "--no-cache", "--format", "sarif", "."]) == 1
    notifications = json.loads(capsys.readouterr().out)["runs"][0]["invocations"][0][
        "toolExecutionNotifications"
    ]
    (sarif_warning,) = [n for n in notifications if says in n["message"]["text"]]
    region = sarif_warning["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == finding["line"]
    assert main(["check", "--no-cache", "--format", "github", "."]) == 1
    out = capsys.readouterr().out
    assert f"::warning file={finding['path']},line={finding['line']},title=syncscan%3A" in out


def test_unused_suppressions_reach_every_machine_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_project(FIXED, tmp_path / "fixed")
    runner = project / "engine" / "runner.py"
    def_line = line_of(runner, "def execute_model(")
    edit_line(runner, def_line, "  # syncscan: ignore[SYNC001] left over from the bug")
    monkeypatch.chdir(project)
    outputs = {}
    for fmt in ("json", "sarif", "github"):
        code = main(["check", "--no-cache", "--report-unused-ignores", "--format", fmt, "."])
        assert code == 1
        outputs[fmt] = capsys.readouterr().out
    (unused,) = json.loads(outputs["json"])["diagnostics"]
    assert unused == {
        "kind": "unused-suppression",
        "path": "engine/runner.py",
        "line": def_line,
        "message": "ignore[SYNC001] suppresses nothing",
    }
    (notification,) = json.loads(outputs["sarif"])["runs"][0]["invocations"][0][
        "toolExecutionNotifications"
    ]
    assert notification["locations"][0]["physicalLocation"]["region"] == {"startLine": def_line}
    assert f"::warning file=engine/runner.py,line={def_line}," in outputs["github"]


def test_parse_suppression_keeps_codes_as_written() -> None:
    item = scan(b"x = 1  # note  # syncscan: ignore[SYNC001, SYNC002] why not\n").suppressions
    assert [(s.line, s.codes, s.reason, s.problem) for s in item] == [
        (1, ("SYNC001", "SYNC002"), "why not", "")
    ]


# --------------------------------------------------------------------------- --add-ignore


def test_add_ignore_writes_the_suppression_idempotently_and_keeps_every_other_byte(
    buggy: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    project, finding = buggy
    target = project / finding["path"]
    before = target.read_bytes().replace(b"\n", b"\r\n")  # CRLF endings must survive
    target.write_bytes(before)
    assert main(["check", "--no-cache", f"--add-ignore={REASON}", str(project)]) == 0
    assert "added 1 suppression(s) in 1 file(s)" in capsys.readouterr().err
    after = target.read_bytes()
    lines_before, lines_after = before.split(b"\r\n"), after.split(b"\r\n")
    changed = [n for n, (a, b) in enumerate(zip(lines_before, lines_after, strict=True)) if a != b]
    assert changed == [finding["line"] - 1]
    comment = f"  # syncscan: ignore[SYNC001] {REASON}".encode()
    assert lines_after[finding["line"] - 1] == lines_before[finding["line"] - 1] + comment
    code, data, _ = check_json(capsys, project)
    assert (code, data["findings"], data["diagnostics"]) == (0, [], [])
    assert main(["check", "--no-cache", f"--add-ignore={REASON}", str(project)]) == 0
    assert "added 0 suppression(s)" in capsys.readouterr().err
    assert target.read_bytes() == after


def test_add_ignore_extends_an_existing_suppression_and_avoids_unsafe_lines(
    tmp_path: Path,
) -> None:
    from syncscan.rules.base import Finding, Location

    from syncscan.fix.ignores import add_ignores

    source = (
        "def f(x):\n"
        "    y = 1  # syncscan: ignore[SYNC002] paused upstream\n"
        '    return """a\n'
        'b""" + x\n'
        "    z = 2 + \\\n"
        "        3\n"
    )
    (tmp_path / "m.py").write_text(source, encoding="utf-8")

    def finding(line: int) -> Finding:
        return Finding(
            code="SYNC001", name="unbounded-step", severity="error", confidence="high",
            message="m", location=Location("m.py", line, 5, "m.f"), step_root="m.f", mode=(),
            mode_label="", witness=(), remedy="r", related=(), fingerprint="fp",
        )  # fmt: skip

    edits = add_ignores(tmp_path, [finding(2), finding(3), finding(5)], "why")
    assert [(e.line, e.codes) for e in edits] == [
        (2, ("SYNC001",)),
        (4, ("SYNC001",)),
        (6, ("SYNC001",)),
    ]
    lines = (tmp_path / "m.py").read_text(encoding="utf-8").splitlines()
    assert lines[1] == "    y = 1  # syncscan: ignore[SYNC001,SYNC002] paused upstream"
    assert lines[2] == '    return """a'  # inside the string: the comment goes after it
    assert lines[3] == 'b""" + x  # syncscan: ignore[SYNC001] why'
    assert lines[5] == "        3  # syncscan: ignore[SYNC001] why"
    compile("\n".join(lines), "m.py", "exec")
    assert add_ignores(tmp_path, [finding(2), finding(3), finding(5)], "why") == []
