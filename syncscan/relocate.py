"""A recorded result carried to files whose read lines moved (moves.py).

Findings, diagnostics and the function headers suppressions look at name
lines of the files they were computed from; where an edit moved those lines
and nothing else the run read, the result is the same with each line put
where it went. Lines appear in structured fields (`path` beside `line`) and
in text as `path:line` (with the root in front where a memory's identity is
its allocation site). Where text names a line without its file (`(line 12)`,
`<buffer@12>`), it cannot be told which file's it is: the result is not
carried (None), and the run analyses afresh. Fingerprints hold no lines
(findings.py), so they stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

from syncscan.index.moves import LineMap

# Text that names a line without its file (host_syncs.py, walk.py, stream_effects.py).
_BARE_LINE = re.compile(r"\(line \d+\)|@\d+")


class _NotCarried(Exception):
    """A line the maps do not cover, or one text names without its file."""


def relocated(
    result: dict[str, Any], moves: dict[str, LineMap], root: str
) -> dict[str, Any] | None:
    """`result` (the run record's data) with every line of the files in
    `moves` (relative path -> line map) where it went; None where a line the
    result names is not covered."""
    moves = {path: lines for path, lines in moves.items() if any(o != n for o, n in lines.items())}
    if not moves:
        return result
    patterns = [
        (re.compile(rf"(?<![\w./-])((?:{re.escape(root)}/)?{re.escape(path)}):(\d+)"), lines)
        for path, lines in moves.items()
    ]

    def text(value: str) -> str:
        if _BARE_LINE.search(value):
            raise _NotCarried(value)
        for pattern, lines in patterns:
            value = pattern.sub(lambda m, lines=lines: f"{m.group(1)}:{_moved(lines, m)}", value)
        return value

    def carried(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [carried(v) for v in value]
        if isinstance(value, dict):
            out = {k: carried(v) for k, v in value.items()}
            lines = moves.get(out.get("path"))  # type: ignore[arg-type]
            if lines is not None and isinstance(out.get("line"), int) and out["line"] != 0:
                out["line"] = _line(lines, out["line"])  # 0: the whole file
            return out
        return value

    try:
        headers = {}
        for function, (path, first, last) in result["lines"].items():
            lines = moves.get(path)
            if lines is not None:
                first, last = _line(lines, first), _line(lines, last)
            headers[function] = [path, first, last]
        return {
            **result,
            "findings": carried(result["findings"]),
            "diagnostics": carried(result["diagnostics"]),
            "notes": carried(result["notes"]),
            "lines": headers,
        }
    except _NotCarried:
        return None


def _line(lines: LineMap, line: int) -> int:
    found = lines.get(line)
    if found is None:
        raise _NotCarried(line)
    return found


def _moved(lines: LineMap, match: re.Match[str]) -> int:
    return _line(lines, int(match.group(2)))
