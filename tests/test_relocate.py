"""A recorded result carried to where its lines went (syncscan/relocate.py)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from syncscan.relocate import Moves, StateCarrier, relocated

ROOT = "/src/project"
MOVES = {"engine/runner.py": {10: 12, 11: 13, 20: 22}}


def _result(message: str, line: int = 10, path: str = "engine/runner.py") -> dict:
    step = {"path": path, "line": line, "function": "f", "note": message}
    return {
        "findings": [
            {"message": message, "location": {"path": path, "line": line}, "witness": [step]}
        ],
        "diagnostics": [{"path": path, "message": "whole file", "line": 0, "kind": "skipped"}],
        "notes": [message],
        "stats": {"files": 1},
        "lines": {"engine.runner.f": [path, 10, 11], "engine.other.g": ["engine/other.py", 10, 11]},
    }


def test_lines_in_fields_and_in_text_go_where_they_moved() -> None:
    message = (
        "written (engine/runner.py:20) while it is read (engine/other.py:20); "
        f"allocated at {ROOT}/engine/runner.py:11:4"
    )
    out = relocated(_result(message), MOVES, ROOT)
    assert out is not None
    finding = out["findings"][0]
    assert finding["location"]["line"] == 12 and finding["witness"][0]["line"] == 12
    expected = (
        "written (engine/runner.py:22) while it is read (engine/other.py:20); "
        f"allocated at {ROOT}/engine/runner.py:13:4"
    )
    assert finding["message"] == finding["witness"][0]["note"] == out["notes"][0] == expected
    assert out["diagnostics"][0]["line"] == 0  # the whole file
    assert out["lines"] == {
        "engine.runner.f": ["engine/runner.py", 12, 13],
        "engine.other.g": ["engine/other.py", 10, 11],
    }
    assert out["stats"] == {"files": 1}


def test_a_line_the_maps_do_not_cover_is_not_carried() -> None:
    assert relocated(_result("x", line=15), MOVES, ROOT) is None
    assert relocated(_result("read at engine/runner.py:15"), MOVES, ROOT) is None


def test_a_line_named_without_its_file_is_not_carried() -> None:
    assert relocated(_result("marked gpu-sync-ok (line 10)"), MOVES, ROOT) is None
    assert relocated(_result("reads <call@10>"), MOVES, ROOT) is None
    # Nothing moved: the result is the record's, whatever its text says.
    same = _result("marked gpu-sync-ok (line 10)")
    assert relocated(same, {"engine/runner.py": {10: 10}}, ROOT) is same


def test_another_file_whose_path_ends_alike_is_left_alone() -> None:
    out = relocated(
        _result("see lib/engine/runner.py:10", path="lib/engine/runner.py"), MOVES, ROOT
    )
    assert out is not None
    assert out["findings"][0]["message"] == "see lib/engine/runner.py:10"
    assert out["findings"][0]["location"]["line"] == 10
    # The root in front counts as the path's; a longer path holding it does not.
    message = f"at x{ROOT}/engine/runner.py:10 and {ROOT}/engine/runner.py:10"
    out = relocated(_result(message), MOVES, ROOT)
    assert out is not None
    assert out["notes"][0] == f"at x{ROOT}/engine/runner.py:10 and {ROOT}/engine/runner.py:12"
    texts = ["see lib/engine/runner.py:10", f"x{ROOT}/engine/runner.py:10", "engine/runner.py:10"]
    carried = CARRIER(_state(["l", *texts]))
    assert carried is not None
    assert json.loads(carried)[0][0] == ["l", *texts[:2], "engine/runner.py:12"]


# f-strings that write a line into text the run record never holds, by file:
# fresh.py compares an allocation site's suffix; build.py names the line of a
# syntax error (a file that does not parse has no summary: never carried).
NOT_RECORDED = {"syncscan/flow/fresh.py", "syncscan/index/build.py"}
# Where text is made for people at output time, from the fields, not recorded.
OUTPUT_LAYERS = ("syncscan/report/", "syncscan/cli.py", "syncscan/fix/")


def _line_texts(path: Path) -> list[tuple[str, str]]:
    """(text before, text after) each line number an f-string in `path` writes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        values = node.values
        for i, value in enumerate(values):
            if not isinstance(value, ast.FormattedValue):
                continue
            source = ast.unparse(value.value)
            if not (source == "line" or source.endswith((".line", ".lineno", "_line"))):
                continue
            before = ast.unparse(values[i - 2].value) + _text(values[i - 1]) if i >= 2 else ""
            if i == 1:
                before = _text(values[0])
            after = _text(values[i + 1]) if i + 1 < len(values) else ""
            found.append((before, after))
    return found


def _text(value: ast.expr) -> str:
    return value.value if isinstance(value, ast.Constant) else "{}"


def test_every_line_the_analysis_writes_into_text_is_in_a_form_relocation_knows() -> None:
    """A line in recorded text is `path:line` (carried to where it went) or
    `(line N)` / `@N` (a result holding one is not carried once a line moved):
    a new form would let a carried result name a line that moved."""
    repo = Path(__file__).resolve().parent.parent
    sources = sorted((repo / "syncscan").rglob("*.py")) + sorted((repo / "rules").rglob("*.py"))
    seen = 0
    for path in sources:
        rel = path.relative_to(repo).as_posix()
        if rel in NOT_RECORDED or rel.startswith(OUTPUT_LAYERS):
            continue
        for before, after in _line_texts(path):
            seen += 1
            path_form = before.endswith(":") and "path" in before
            bare_form = before.endswith("@") or (
                before.endswith("(line ") and after.startswith(")")
            )
            assert path_form or bare_form, f"{rel}: a line written as {before!r}{{line}}{after!r}"
    assert seen >= 8  # the forms listed in relocate.py are found


def _state(*rows: list) -> bytes:
    """A kept state's text as the codec writes it (flow/codec.py)."""
    return json.dumps([list(rows), [0]], separators=(",", ":")).encode()


CARRIER = StateCarrier(Moves(MOVES, ROOT), ["WitnessStep"])


def test_a_kept_state_is_carried_where_it_names_lines() -> None:
    state = _state(
        ["WitnessStep", "engine/runner.py", 10, "f", "read at engine/runner.py:20", "", None, 4],
        ["WitnessStep", "engine/other.py", 10, "g", "", "", None, 1],
        ["t", "engine/runner.py", 11],
        ["t", "engine/runner.py", 20, True],
        ["t", "engine/runner.py", 3, 4, 5],  # not a region's shape: not a line
        ["f", f"{ROOT}/engine/runner.py:11:4@self.buf", "engine/runner.py:10"],
    )
    carried = CARRIER(state)
    assert carried is not None
    assert json.loads(carried) == json.loads(
        _state(
            [
                "WitnessStep",
                "engine/runner.py",
                12,
                "f",
                "read at engine/runner.py:22",
                "",
                None,
                4,
            ],
            ["WitnessStep", "engine/other.py", 10, "g", "", "", None, 1],
            ["t", "engine/runner.py", 13],
            ["t", "engine/runner.py", 22, True],
            ["t", "engine/runner.py", 3, 4, 5],
            ["f", f"{ROOT}/engine/runner.py:13:4@self.buf", "engine/runner.py:12"],
        )
    )


def test_a_kept_state_naming_a_line_it_cannot_carry_is_not_carried() -> None:
    assert CARRIER(_state(["WitnessStep", "engine/runner.py", 15, "f", "", "", None, 1])) is None
    assert CARRIER(_state(["t", "engine/runner.py", 15])) is None
    assert CARRIER(_state(["l", "written at engine/runner.py:15"])) is None
    assert CARRIER(_state(["l", "host waits on event <event@10>.synchronize()"])) is None
    assert CARRIER(_state(["l", "marked gpu-sync-ok (line 10)"])) is None
    # After a character JSON escapes, the text cannot say where a path starts.
    assert CARRIER(_state(["l", "first\nengine/runner.py:10"])) is None
    assert CARRIER(_state(["l", "\u2192engine/runner.py:10"])) is None
    # Nothing moved: the text is the kept one, whatever it says.
    unmoved = StateCarrier(Moves({"engine/runner.py": {10: 10}}, ROOT), ["WitnessStep"])
    state = _state(["l", "marked gpu-sync-ok (line 10)"])
    assert unmoved(state) is state
