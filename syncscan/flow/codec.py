"""Analysis states as plain JSON data, and back, for the data-only cache.

A callee walk's outcome (memo.py `CalleeWalk`) and a class's step analysis
(step.py `StepPath`s) are what a later run reuses where nothing they read
changed (stored.py, stored_units.py); the cache is JSON and never pickle
(cache.py), so they need a form of their own. States share structure heavily (a
callee's outcome is composed into many caller states, which share their stream
facts), so the form is a table: each
tuple, list, set, frozenset, dict and dataclass instance is written once,
after what it holds, and referred to as `[index]` wherever it occurs again.
Strings, numbers, booleans and None are written as they are. Decoding builds
objects only of the classes it is given (`CLASSES` unless the caller names
more; anything else is refused with ValueError), and gives back equal objects
that share what the originals shared.
"""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cache
from typing import Any, NamedTuple

from syncscan.findings import WitnessStep
from syncscan.flow.host_syncs import HostSync
from syncscan.flow.memo import CalleeWalk
from syncscan.flow.state import PathState
from syncscan.flow.streams import Hazard, StreamFacts

Table = list[list[Any]]

# Every class a stored walk may hold, by the name its rows carry.
CLASSES: dict[str, type] = {
    cls.__name__: cls for cls in (CalleeWalk, HostSync, Hazard, PathState, StreamFacts, WitnessStep)
}
_CONTAINERS = {tuple: "t", list: "l", frozenset: "f", set: "s"}
_BUILDERS = {"t": tuple, "l": list, "f": frozenset, "s": set}
_PLAIN = (str, int, float, bool, type(None))


@cache
def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def located(classes: dict[str, type]) -> frozenset[str]:
    """The classes whose rows open with a path and a line: where a kept state
    names a line (relocate.py `StateCarrier`)."""
    return frozenset(name for name, cls in classes.items() if _fields(cls)[:2] == ("path", "line"))


def encode(
    value: Any, classes: dict[str, type] = CLASSES, after: list[Any] | None = None
) -> tuple[Table, Any]:
    """(the table, the value's own form: plain, or `[index]` into the table).
    `after`: the objects a table was decoded into (`decode`'s `built`): the
    rows are those after it, and an object of it is named by its row there."""
    table: Table = []
    base = len(after) if after is not None else 0
    done: dict[int, list[int]] = {id(obj): [n] for n, obj in enumerate(after or ())}
    keep: list[Any] = []  # holds every object encoded, so no id is reused meanwhile

    def form(item: Any) -> Any:
        if isinstance(item, _PLAIN):
            return item
        found = done.get(id(item))
        if found is not None:
            return found
        kind = _CONTAINERS.get(type(item))
        if kind is not None:
            row = [kind, *(form(x) for x in item)]
        elif type(item) is dict:
            row = ["d", *(form(x) for pair in item.items() for x in pair)]
        else:
            name = type(item).__name__
            if classes.get(name) is not type(item):
                raise TypeError(f"cannot store a {type(item).__qualname__}")
            row = [name, *(form(getattr(item, f)) for f in _fields(type(item)))]
        keep.append(item)
        table.append(row)
        found = done[id(item)] = [base + len(table) - 1]
        return found

    return table, form(value)


def decode(
    table: Table, top: Any, classes: dict[str, type] = CLASSES, built: list[Any] | None = None
) -> Any:
    """The value `encode` gave (`table`, `top`) for; ValueError where the data
    is not such a form. `built` (empty) is given the object of each row."""
    if built is None:
        built = []

    def value(item: Any) -> Any:
        if isinstance(item, list):
            if len(item) != 1 or not isinstance(item[0], int) or not 0 <= item[0] < len(built):
                raise ValueError("a reference to nothing built")
            return built[item[0]]
        if not isinstance(item, _PLAIN):
            raise ValueError(f"not a stored value: {type(item).__name__}")
        return item

    try:
        for row in table:
            kind, items = row[0], [value(x) for x in row[1:]]
            builder = _BUILDERS.get(kind)
            if builder is not None:
                built.append(builder(items))
            elif kind == "d":
                built.append(dict(zip(items[::2], items[1::2], strict=True)))
            elif kind in classes:
                names = _fields(classes[kind])
                if len(names) != len(items):
                    raise ValueError(f"{kind}: {len(items)} fields, not {len(names)}")
                obj = object.__new__(classes[kind])
                obj.__dict__.update(zip(names, items, strict=True))  # as state.py builds them
                built.append(obj)
            else:
                raise ValueError(f"not a stored kind: {kind!r}")
        return value(top)
    except (TypeError, IndexError, KeyError) as exc:
        raise ValueError(f"damaged stored state: {exc}") from exc


def to_text(value: Any, classes: dict[str, type] = CLASSES) -> bytes:
    """`value` encoded, as the JSON text a kept store holds (stored.py,
    stored_units.py)."""
    return json.dumps(list(encode(value, classes)), separators=(",", ":")).encode("utf-8")


def from_text(
    text: bytes, classes: dict[str, type] = CLASSES, built: list[Any] | None = None
) -> Any:
    """The value `to_text` gave `text` for; ValueError where it is not such a
    text (a damaged cache: not JSON, not a table and its top, or a damaged
    table). `built`: as `decode` says."""
    try:
        data = json.loads(text)
    except RecursionError as exc:  # json recurses per level of nesting
        raise ValueError("a stored table nested too deeply") from exc
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], list)):
        raise ValueError("not a stored table")
    return decode(data[0], data[1], classes, built)


class Written(NamedTuple):
    """A text `from_text` decoded, and the object of each row of its table."""

    text: bytes
    built: list[Any]


# How a text whose top is a row ends: the table's close, the top, the pair's close.
_TOP_ROW = re.compile(rb"\],\[\d+\]\]")


def after_text(
    value: Any, text: bytes, built: list[Any], classes: dict[str, type] = CLASSES
) -> bytes | None:
    """`value` as a text that holds `text`'s table and appends what `value`
    holds besides the objects `built` from it (a kept walk resumed from
    another: most of what it holds is the other's): the same value decodes,
    written in a fraction of the time; None where `text` does not end as
    `to_text` writes a value that is a row."""
    end = text.rfind(b"],[")
    if end < 0 or not _TOP_ROW.fullmatch(text, end):
        return None
    table, top = encode(value, classes, built)
    rows = json.dumps(table, separators=(",", ":")).encode("utf-8")[1:-1]
    head = text[:end]
    if rows and head != b"[[":
        head += b","
    return b"%s%s],%s]" % (head, rows, json.dumps(top).encode("utf-8"))
