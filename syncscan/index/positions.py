"""Summary content compared but for its line numbers, and the lines it holds.

An edit above a function moves it without changing it, and a comment or a
blank line added inside it moves what follows: the summary differs only in its
line numbers. Comparing what a run read line for line, each old line number
beside the new one in its place, tells such a move from a change (moves.py),
and says where each line the run's result may mention is now (relocate.py).
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any

# The fields of IR nodes and summaries that are line numbers (columns do not
# move when lines do).
LINE_FIELDS = frozenset({"line", "end_line", "header_line"})


@cache
def _shape(kind: type) -> tuple[str, tuple[str, ...]] | None:
    """The IR node kind or the dataclass `kind` is or extends (a recorded
    summary compares as the plain one), and its field names; None for
    anything else (a node is a tuple, but not one to compare item by item)."""
    # The IR loads with the first summary compared: a check whose findings
    # are reused compares none (start-up time).
    from syncscan.index.ir import Node

    if issubclass(kind, Node):
        return kind.__name__, kind._fields
    own = next((k for k in kind.__mro__ if "__dataclass_fields__" in vars(k)), None)
    return None if own is None else (own.__name__, tuple(f.name for f in fields(own)))


def paired(old: Any, new: Any) -> list[tuple[int, int]] | None:
    """Where `old` and `new` (IR nodes, summaries, tuples and dicts of them,
    plain data) are equal but for their line numbers, each line number of `old`
    beside the one in its place in `new`; None where they differ otherwise."""
    pairs: list[tuple[int, int]] = []
    return pairs if _pair(old, new, pairs) else None


def _pair(old: Any, new: Any, pairs: list[tuple[int, int]]) -> bool:
    shape = _shape(type(old))
    if shape is not None:
        kind, names = shape
        other = _shape(type(new))
        if other is None or other[0] != kind:
            return False
        for name in names:
            before, after = getattr(old, name), getattr(new, name)
            if name in LINE_FIELDS:
                pairs.append((before, after))
            elif not _pair(before, after, pairs):
                return False
        return True
    if isinstance(old, tuple | list):
        return (
            isinstance(new, tuple | list)
            and len(old) == len(new)
            and all(_pair(a, b, pairs) for a, b in zip(old, new, strict=True))
        )
    if isinstance(old, dict):
        return (
            isinstance(new, dict)
            and list(old) == list(new)
            and all(_pair(old[k], new[k], pairs) for k in old)
        )
    return type(old) is type(new) and old == new


def lines_in(value: Any, found: set[int]) -> set[int]:
    """Every line number in `value` (IR nodes, summaries, tuples and dicts of
    them), added to `found`."""
    shape = _shape(type(value))
    if shape is not None:
        for name in shape[1]:
            field = getattr(value, name)
            if name in LINE_FIELDS:
                found.add(field)
            else:
                lines_in(field, found)
    elif isinstance(value, tuple | list):
        for v in value:
            lines_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            lines_in(v, found)
    return found


def layout(value: Any) -> tuple[str, list[int]]:
    """`value` (as `paired` takes it) as text but for its line numbers, and those
    line numbers in order: two values of the same text are equal but for their
    lines, which pair in order as `paired` pairs them. A digest of the text
    stands for what a value says, where the value itself is not kept."""
    parts: list[str] = []
    lines: list[int] = []
    _lay(value, parts, lines)
    return "".join(parts), lines


def _lay(value: Any, parts: list[str], lines: list[int]) -> None:
    shape = _shape(type(value))
    if shape is not None:
        kind, names = shape
        parts.append(f"{kind}(")
        for name in names:
            field = getattr(value, name)
            if name in LINE_FIELDS:
                lines.append(field)
                parts.append("#,")
            else:
                _lay(field, parts, lines)
                parts.append(",")
        parts.append(")")
    elif isinstance(value, tuple | list):
        parts.append("[")
        for item in value:
            _lay(item, parts, lines)
            parts.append(",")
        parts.append("]")
    elif isinstance(value, dict):
        parts.append("{")
        for key, item in value.items():
            _lay(key, parts, lines)
            parts.append(":")
            _lay(item, parts, lines)
            parts.append(",")
        parts.append("}")
    else:
        parts.append(f"{type(value).__name__}:{value!r}")
