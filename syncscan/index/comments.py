"""Comments that mean something to syncscan: suppressions and sanctioned syncs.

Only real comments count (tokenize), so a docstring that quotes the syntax
suppresses nothing; text without the markers is not tokenized at all.
Suppressions are read for every file (a stale one anywhere is reported), so
they live in the file facts; sanctioned-sync lines feed the analysis, so they
live in the summary.
"""

from __future__ import annotations

import io
import re
import tokenize

from syncscan.index.summary import Suppression

_SUPPRESSION = re.compile(r"#\s*syncscan:\s*ignore\[([A-Z0-9, ]+)\]\s*(.*)$")
_SANCTIONED = re.compile(r"#\s*gpu-sync-ok:\s*(\S.*)?$")


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
    """`# syncscan: ignore[CODES] reason` comments, by line."""
    if "syncscan:" not in source:
        return ()
    found: list[Suppression] = []
    for number, text in comments(source):
        if match := _SUPPRESSION.search(text):
            codes = tuple(c.strip() for c in match.group(1).split(",") if c.strip())
            found.append(Suppression(number, codes, match.group(2).strip()))
    return tuple(found)


def sanctioned_lines(source: str) -> tuple[int, ...]:
    """Lines of `# gpu-sync-ok: why` comments: host syncs the code means to make."""
    if "gpu-sync-ok" not in source:
        return ()
    return tuple(number for number, text in comments(source) if _SANCTIONED.search(text))
