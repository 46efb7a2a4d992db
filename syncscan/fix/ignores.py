"""`--add-ignore[=REASON]`: write `# syncscan: ignore[CODE] REASON` where each finding is.

Like ruff's `--add-noqa`. The comment goes at the end of the finding's line
(any line of the flagged statement suppresses it). When that line cannot take
a comment (it ends inside a string or with a backslash), it goes at the end of
the statement instead. A line that already carries a suppression gets the code
added to its list; one that already covers the code is left alone, so running
it twice changes nothing. Only the comment is written: every other byte of the
file, line endings included, stays as it was. The placement reads the token
stream (where a line ends outside a string), which is what decides where a
comment may go; the file is replaced atomically like a fix's.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from syncscan.fix.files import write_atomically
from syncscan.index.comments import parse_suppression
from syncscan.rules.base import Finding

_DIRECTIVE = re.compile(r"#\s*syncscan\s*:\s*(.*)$")
_CODE_LIST = re.compile(r"(ignore\s*\[)([^\]]*)(\])")


@dataclass(frozen=True)
class IgnoreEdit:
    """A suppression written (or extended) at a line."""

    path: str
    line: int
    codes: tuple[str, ...]


def add_ignores(root: Path, findings: list[Finding], reason: str) -> list[IgnoreEdit]:
    """Suppress every finding in its file; the edits made, in path and line order."""
    wanted: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        loc = finding.location
        wanted.setdefault(loc.path, {}).setdefault(loc.line, set()).add(finding.code)
    edits: list[IgnoreEdit] = []
    for path, lines in sorted(wanted.items()):
        edits.extend(_edit_file(root, path, lines, " ".join(reason.split())))
    return edits


def _edit_file(root: Path, path: str, wanted: dict[int, set[str]], reason: str) -> list[IgnoreEdit]:
    target = root / path
    try:
        source = target.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    lines = source.splitlines(keepends=True)
    ends, comments = _line_facts(source)
    placed: dict[int, set[str]] = {}
    for line, codes in sorted(wanted.items()):
        at = next((end for end in ends if end >= line), None)
        if at is None or at > len(lines):
            continue
        placed.setdefault(at, set()).update(codes)
    edits: list[IgnoreEdit] = []
    for at, codes in sorted(placed.items()):
        text, added = _with_ignore(lines[at - 1], comments.get(at), sorted(codes), reason)
        if added:
            lines[at - 1] = text
            edits.append(IgnoreEdit(path, at, tuple(added)))
    if edits:
        write_atomically(target, "".join(lines))
    return edits


def _line_facts(source: str) -> tuple[list[int], dict[int, str]]:
    """Lines that end outside any string and without a backslash (they hold a NEWLINE
    or NL token: a comment may go at their end), and each line's comment."""
    ends: list[int] = []
    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                ends.append(token.start[0])
            elif token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return sorted(set(ends)), comments


def _with_ignore(
    text: str, comment: str | None, codes: list[str], reason: str
) -> tuple[str, list[str]]:
    """`text` (one line, with its ending) carrying a suppression of `codes`, and the
    codes it newly suppresses ([] when it already did)."""
    body = text.rstrip("\r\n")
    ending = text[len(body) :]
    if comment is not None and (directive := _DIRECTIVE.search(comment)):
        existing = parse_suppression(0, directive.group(1).strip())
        if not existing.problem:
            missing = [c for c in codes if not any(c.startswith(e) for e in existing.codes)]
            if not missing:
                return text, []
            merged = ",".join(sorted({*existing.codes, *missing}))
            start = body.rindex(comment)
            updated = _CODE_LIST.sub(lambda m: f"{m.group(1)}{merged}{m.group(3)}", comment, 1)
            return body[:start] + updated + ending, missing
    suffix = f"# syncscan: ignore[{','.join(codes)}]" + (f" {reason}" if reason else "")
    return f"{body.rstrip()}  {suffix}{ending}", codes
