"""Summary content with its line numbers made relative, and the lines it holds.

An edit above a function moves it without changing it: its summary differs
only by a constant added to every line. Comparing the relative forms of what a
run read tells such a move from a change (reads.py), and the lines each read
item holds say which lines of the old file the run's result may mention and
where they are now (relocate.py).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

# The fields of IR nodes and summaries that are line numbers (columns do not
# move when lines do).
LINE_FIELDS = frozenset({"line", "end_line", "header_line"})


@cache
def _shape(kind: type) -> tuple[str, tuple[str, ...]]:
    """The dataclass `kind` is or extends (a recorded summary compares as the
    plain one), and its field names."""
    own = next(k for k in kind.__mro__ if "__dataclass_fields__" in vars(k))
    return own.__name__, tuple(f.name for f in fields(own))


def relative(value: Any, base: int) -> Any:
    """`value` (IR nodes, summaries, tuples and dicts of them, plain data) as
    a comparable form with `base` subtracted from every line number in it."""
    if is_dataclass(value) and not isinstance(value, type):
        kind, names = _shape(type(value))
        return (
            kind,
            *(
                getattr(value, name) - base
                if name in LINE_FIELDS
                else relative(getattr(value, name), base)
                for name in names
            ),
        )
    if isinstance(value, tuple | list):
        return tuple(relative(v, base) for v in value)
    if isinstance(value, dict):
        return tuple((k, relative(v, base)) for k, v in sorted(value.items()))
    return value


def lines_in(value: Any, found: set[int]) -> set[int]:
    """Every line number in `value` (IR nodes, summaries, tuples and dicts of
    them), added to `found`."""
    if is_dataclass(value) and not isinstance(value, type):
        for name in _shape(type(value))[1]:
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


def first_line(value: Any) -> int | None:
    """The smallest line number in `value`, None where it holds none."""
    found = lines_in(value, set())
    return min(found) if found else None
