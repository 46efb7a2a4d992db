"""Comments that mean something to syncscan: suppressions and marker comments.

Only real comments count (tokenize), so a docstring that quotes the syntax
suppresses nothing; text without the markers is not tokenized at all.
Suppressions are read for every file (a stale one anywhere is reported), so
they live in the file facts; marker comments feed the analysis, so they live in
the summary. A marker is any lower-case hyphenated word before a colon (`#
gpu-sync-ok: why`, as pre-commit hooks spell their escape hatches): the index records them
all, and the packs decide which mean a sanctioned sync, so a cached summary
does not depend on the packs.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass


@dataclass(frozen=True)
class Suppression:
    line: int
    codes: tuple[str, ...]  # as written
    reason: str
    problem: str = ""  # why the comment is malformed (it then suppresses nothing)


_DIRECTIVE = re.compile(r"#\s*syncscan\s*:\s*(.*)$")
_IGNORE = re.compile(r"ignore\b\s*(?:\[([^\]]*)\])?\s*(.*)$")
_CODE = re.compile(r"[A-Z]+[0-9]*")
_FORM = "write `# syncscan: ignore[SYNC001] <reason>`"
# `# word-word: reason`, lower case as hooks spell their escape hatches (not
# `# SPDX-License-Identifier:`, atop nearly every file: tokenizing each file
# that has one made a cold run of vLLM 0.33.0 5 s slower). The pre-filter runs
# on the raw text before tokenizing.
_MARKER = re.compile(r"#\s*([a-z0-9_]+(?:-[a-z0-9_]+)+)\s*:")
_MARKER_TEXT = re.compile(r"#[ \t]*[a-z0-9_]+(?:-[a-z0-9_]+)+[ \t]*:")


def comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment token in `source`."""
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def suppressions(source: str) -> tuple[Suppression, ...]:
    """`# syncscan: ignore[CODES] reason` comments, by line.

    Every `# syncscan:` comment is kept: a malformed one (no codes, lower-case
    codes, not an `ignore`) carries its problem, so it is reported rather than
    dropped.
    """
    if "syncscan" not in source:
        return ()
    found: list[Suppression] = []
    for number, text in comments(source):
        if directive := _DIRECTIVE.search(text):
            found.append(parse_suppression(number, directive.group(1).strip()))
    return tuple(found)


def parse_suppression(line: int, directive: str) -> Suppression:
    """One `syncscan:` directive (the text after the colon)."""
    match = _IGNORE.match(directive)
    if match is None:
        return Suppression(line, (), "", f"not a syncscan directive: {_FORM}")
    listed, reason = match.group(1), match.group(2).strip()
    if listed is None and reason.startswith("["):
        return Suppression(line, (), reason, f"unclosed code list: {_FORM}")
    codes = tuple(c.strip() for c in (listed or "").split(",") if c.strip())
    if not codes:
        problem = f"blanket ignore: name the rule codes ({_FORM}); it suppresses nothing"
        return Suppression(line, (), reason, problem)
    bad = [c for c in codes if not _CODE.fullmatch(c)]
    if bad:
        fixed = ",".join(c.upper() for c in codes)
        problem = (
            f"malformed code {bad[0]!r}: codes are upper case, e.g. ignore[{fixed}]; "
            "it suppresses nothing"
        )
        return Suppression(line, codes, reason, problem)
    return Suppression(line, codes, reason)


def marker_comments(source: str) -> tuple[tuple[int, str], ...]:
    """(line, marker) of every `# some-marker: why` comment, in line order."""
    if _MARKER_TEXT.search(source) is None:
        return ()
    found: list[tuple[int, str]] = []
    for number, text in comments(source):
        found.extend((number, marker) for marker in _MARKER.findall(text))
    return tuple(found)
