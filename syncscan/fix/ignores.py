"""`--add-ignore[=REASON]`: write `# syncscan: ignore[CODE] REASON` where each finding is.

Like ruff's `--add-noqa`. The comment goes at the end of the finding's line
(any line of the flagged statement suppresses it). When that line cannot take
a comment (it ends inside a string or with a backslash), it goes at the end of
the statement instead. A line that already carries a suppression gets the code
added to its list; one that already covers the code is left alone, so running
it twice changes nothing. Only the comment is written: every other byte of the
file, line endings included, stays as it was: the comment is set on libcst's
node for the line's end, and libcst writes every other byte back as it read
it. The file is replaced atomically, like a fix's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from syncscan.findings import Finding
from syncscan.fix.files import write_atomically
from syncscan.index.comments import parse_suppression

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
        wrapper = MetadataWrapper(cst.parse_module(source))
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
        return []
    slots = _line_ends(wrapper)
    ends = sorted(slots)
    placed: dict[int, set[str]] = {}
    for line, codes in sorted(wanted.items()):
        at = next((end for end in ends if end >= line), None)
        if at is not None:
            placed.setdefault(at, set()).update(codes)
    changes: dict[int, cst.TrailingWhitespace] = {}
    edits: list[IgnoreEdit] = []
    for at, codes in sorted(placed.items()):
        slot = slots[at]
        comment, added = _with_ignore(slot.comment, sorted(codes), reason)
        if added:
            whitespace = slot.whitespace if slot.comment else cst.SimpleWhitespace("  ")
            changes[id(slot)] = slot.with_changes(whitespace=whitespace, comment=comment)
            edits.append(IgnoreEdit(path, at, tuple(added)))
    if edits:
        write_atomically(target, wrapper.module.visit(_Commenter(changes)).code)
    return edits


def _line_ends(wrapper: MetadataWrapper) -> dict[int, cst.TrailingWhitespace]:
    """The end of every line that may take a comment (it ends outside any string
    and without a backslash: libcst holds a TrailingWhitespace there), by line."""
    positions = wrapper.resolve(PositionProvider)
    return {
        pos.start.line: node
        for node, pos in positions.items()
        if isinstance(node, cst.TrailingWhitespace)
    }


class _Commenter(cst.CSTTransformer):
    def __init__(self, changes: dict[int, cst.TrailingWhitespace]) -> None:
        super().__init__()
        self.changes = changes

    def leave_TrailingWhitespace(
        self, original: cst.TrailingWhitespace, updated: cst.TrailingWhitespace
    ) -> cst.TrailingWhitespace:
        return self.changes.get(id(original), updated)


def _with_ignore(
    comment: cst.Comment | None, codes: list[str], reason: str
) -> tuple[cst.Comment, list[str]]:
    """A line's comment carrying a suppression of `codes`, and the codes it newly
    suppresses ([] when it already did). Another comment is kept before it."""
    text = comment.value if comment is not None else ""
    if directive := _DIRECTIVE.search(text):
        existing = parse_suppression(0, directive.group(1).strip())
        if not existing.problem:
            missing = [c for c in codes if not any(c.startswith(e) for e in existing.codes)]
            if not missing:
                return cst.Comment(text), []
            merged = ",".join(sorted({*existing.codes, *missing}))
            updated = _CODE_LIST.sub(lambda m: f"{m.group(1)}{merged}{m.group(3)}", text, 1)
            return cst.Comment(updated), missing
    suffix = f"# syncscan: ignore[{','.join(codes)}]" + (f" {reason}" if reason else "")
    return cst.Comment(f"{text}  {suffix}" if text else suffix), codes
