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
from functools import cache
from typing import Any

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


def encode(value: Any, classes: dict[str, type] = CLASSES) -> tuple[Table, Any]:
    """(the table, the value's own form: plain, or `[index]` into the table)."""
    table: Table = []
    done: dict[int, list[int]] = {}
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
        found = done[id(item)] = [len(table) - 1]
        return found

    return table, form(value)


def decode(table: Table, top: Any, classes: dict[str, type] = CLASSES) -> Any:
    """The value `encode` gave (`table`, `top`) for; ValueError where the data
    is not such a form."""
    built: list[Any] = []

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


def from_text(text: bytes, classes: dict[str, type] = CLASSES) -> Any:
    """The value `to_text` gave `text` for; ValueError where it is not such a
    text (a damaged cache: not JSON, not a table and its top, or a damaged table)."""
    try:
        data = json.loads(text)
    except RecursionError as exc:  # json recurses per level of nesting
        raise ValueError("a stored table nested too deeply") from exc
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], list)):
        raise ValueError("not a stored table")
    return decode(data[0], data[1], classes)
