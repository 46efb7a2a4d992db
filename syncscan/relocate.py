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

The states the cache keeps beside the record (kept callee walks and class
analyses, as codec JSON: flow/codec.py) are carried the same way, as text
(`StateCarrier`): a kept state names a line as the `path` and `line` that
open a row of a located class (WitnessStep, ReturnInfo), as a tuple
`(path, line)` or `(path, line, flag)` (a sanctioned region and a sync site
in it), or as `path:line` in a string. A state that names a line any other
way is not carried; tests/test_stored.py holds every form a fixture's walks
make to this list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, AnyStr, Generic

from syncscan.index.moves import LineMap, shifts

# Text that names a line without its file (none made now: an older store's, or a
# future text's that forgot its file): never carried.
_BARE_LINES = (r"\(line \d+\)", r"@\d+")
_BARE_LINE = re.compile("|".join(_BARE_LINES))


@dataclass(frozen=True)
class Moves:
    """What an edit moved without changing it: the lines of each file (its
    relative path -> line map) under `root`, and the items read that only
    moved (module-qualified, as reuse.py names them)."""

    lines: dict[str, LineMap] = field(default_factory=dict)
    root: str = ""
    items: frozenset[str] = frozenset()


NO_MOVES = Moves()


class _NotCarried(Exception):
    """A line the maps do not cover, or one text names without its file."""


def relocated(
    result: dict[str, Any], moves: dict[str, LineMap], root: str
) -> dict[str, Any] | None:
    """`result` (the run record's data) with every line of the files in
    `moves` (relative path -> line map) where it went; None where a line the
    result names is not covered."""
    moves = {path: lines for path, lines in moves.items() if shifts(lines)}
    if not moves:
        return result
    in_text = _PathLines(root, moves, str)

    def text(value: str) -> str:
        if _BARE_LINE.search(value):
            raise _NotCarried(value)
        return in_text.sub(value, lambda path, line: str(_line(moves[path], line)))

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


class _PathLines(Generic[AnyStr]):
    """`path:line` in text (str or bytes, as `kind` says), the root in front or
    not, not inside a longer path. The pattern opens with the paths, so the
    scan skips to them, and a match is then checked to open a path: a pattern
    opening with the optional root behind a look-behind is tried at every
    character (three quarters of carrying a kept root's walk, 3.7 MB)."""

    def __init__(self, root: str, paths: Iterable[str], kind: type[AnyStr]) -> None:
        alternatives = "|".join(re.escape(path) for path in paths)
        self._pattern = re.compile(_as(kind, f"({alternatives}):(\\d+)"))
        self._rooted = _as(kind, root + "/")
        self._colon = _as(kind, ":")
        self._inside = re.compile(_as(kind, r"[\w./-]"))
        self._kind = kind

    def sub(self, text: AnyStr, line: Callable[[AnyStr, int], str]) -> AnyStr:
        """`text` with the line of each `path:line` as `line(path, line)` says."""

        def carried(match: re.Match[AnyStr]) -> AnyStr:
            path, found = match.group(1), match.group(2)
            start = match.start()
            rooted = len(self._rooted)
            if start >= rooted and text.startswith(self._rooted, start - rooted):
                start -= rooted
            if start > 0 and self._inside.match(text, start - 1):
                return match.group(0)  # the end of a longer path
            return path + self._colon + _as(self._kind, line(path, int(found)))

        return self._pattern.sub(carried, text)


class StateCarrier:
    """Carries a kept state's codec JSON text (flow/codec.py) to where its
    lines went; `located`: the classes whose rows open with a path and a line."""

    def __init__(self, moves: Moves, located: Iterable[str]) -> None:
        # Paths and names as they stand inside the text's JSON strings.
        moved = {_json(path): lines for path, lines in moves.lines.items() if shifts(lines)}
        self._lines = {path.encode(): lines for path, lines in moved.items()}
        paths = b"|".join(re.escape(p) for p in self._lines)
        classes = b"|".join(re.escape(f'"{_json(name)}"'.encode()) for name in sorted(located))
        root = re.escape(_json(moves.root).encode())
        # A located row's path and line; a region's tuple, or a sync site's.
        self._located = re.compile(rb"(\[(?:" + classes + rb'),"(' + paths + rb')",)(\d+)(?=,)')
        self._tuples = re.compile(rb'(\["t","(' + paths + rb')",)(\d+)(?=\]|,(?:true|false)\])')
        self._text = _PathLines(_json(moves.root), moved, bytes)
        # A line named without its file; or `path:line` right after a character
        # JSON escapes (a newline, a non-ASCII one), which the text pattern
        # cannot tell from a longer path's. One pattern each: each opens with a
        # literal the scan skips to, where their alternation was tried at every
        # character (vLLM 0.33.0's kept roots, 10 MB: 8.9 ms against 30.8).
        escaped = rb"\\(?:[bfnrt]|u[0-9a-fA-F]{4})(?:" + root + rb"/)?(?:" + paths + rb"):\d"
        self._refused = [re.compile(p.encode()) for p in _BARE_LINES] + [re.compile(escaped)]

    def __call__(self, text: bytes) -> bytes | None:
        """`text` with each line of the moved files where it went; None where
        it names a line the maps do not cover, or one without its file."""
        if not self._lines:
            return text
        if any(refused.search(text) for refused in self._refused):
            return None
        try:
            text = self._located.sub(self._field, text)
            text = self._tuples.sub(self._field, text)
            return self._text.sub(text, self._in_text)
        except _NotCarried:
            return None

    def _field(self, match: re.Match[bytes]) -> bytes:
        lines = self._lines[match.group(2)]
        return match.group(1) + str(_line(lines, int(match.group(3)))).encode()

    def _in_text(self, path: bytes, line: int) -> str:
        return str(_line(self._lines[path], line))


def _json(text: str) -> str:
    """`text` as it stands inside a JSON string (json.dumps' escapes: ASCII)."""
    return json.dumps(text)[1:-1]


def _as(kind: type[AnyStr], text: str) -> AnyStr:
    """`text` as a `kind` (a pattern or piece of text for str or bytes)."""
    return text if kind is str else text.encode()  # type: ignore[return-value]
