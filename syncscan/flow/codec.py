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
from collections.abc import Callable, Iterable
from functools import cache
from itertools import chain
from operator import attrgetter
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
# The plain types exactly, for a set lookup per item on the hot paths; a
# subclass (an enum of str or int) misses it and takes the isinstance test.
_PLAIN_TYPES = frozenset(_PLAIN)
_DUMPS = json.JSONEncoder(separators=(",", ":"), check_circular=False)


@cache
def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@cache
def _values(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """A dataclass instance's field values in field order, as a tuple, in one
    C call (attrgetter gives a bare value for one name, hence the wrappers)."""
    names = _fields(cls)
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        return lambda item: (getattr(item, names[0]),)
    return lambda item: ()


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
    rows: dict[type, tuple[str, Callable[[Any], tuple[Any, ...]]]] = {}  # class: checked once
    plain = _PLAIN_TYPES

    def form(item: Any) -> Any:
        """`item`'s form: its row, written after those of what it holds, is
        written here. The comprehension building a row calls back only for
        an item neither exactly plain nor written already (so not for the
        commonest by far); `item` is neither, but may be a plain subclass."""
        cls = type(item)
        kind = _CONTAINERS.get(cls)
        values: Iterable[Any] = item
        if kind is None:
            if cls is dict:
                kind, values = "d", chain.from_iterable(item.items())
            else:
                known = rows.get(cls)
                if known is None:
                    if isinstance(item, _PLAIN):  # an enum of str or int, say
                        return item
                    if classes.get(cls.__name__) is not cls:
                        raise TypeError(f"cannot store a {cls.__qualname__}")
                    known = rows[cls] = (cls.__name__, _values(cls))
                kind, values = known[0], known[1](item)
        row = [kind]
        row += [x if type(x) in plain else done.get(id(x)) or form(x) for x in values]
        keep.append(item)
        table.append(row)
        found = done[id(item)] = [base + len(table) - 1]
        return found

    return table, value if type(value) in plain else done.get(id(value)) or form(value)


def _refused(item: Any) -> Any:
    """Raises for an item that is neither plain nor a reference to a row built
    already (decode's comprehension calls it only there)."""
    if isinstance(item, list):
        raise ValueError("a reference to nothing built")
    raise ValueError(f"not a stored value: {type(item).__name__}")


def decode(
    table: Table, top: Any, classes: dict[str, type] = CLASSES, built: list[Any] | None = None
) -> Any:
    """The value `encode` gave (`table`, `top`) for; ValueError where the data
    is not such a form. `built` (empty) is given the object of each row.

    An item is resolved inline, with no call per item: a reference is a list
    of one int (not a bool) >= 0, since a negative one would silently index
    from the end, and one to a row not built yet raises IndexError; anything
    else must be exactly plain or is refused (`_refused`, also for a plain
    subclass, which JSON never gives)."""
    if built is None:
        built = []
    add = built.append
    plain = _PLAIN_TYPES
    try:
        for row in table:
            kind = row[0]  # first: a row that is a dict or empty raises here
            rest = iter(row)  # the items, without the copy row[1:] makes
            next(rest)
            items = [
                built[i]
                if type(x) is list and len(x) == 1 and type(i := x[0]) is int and i >= 0
                else x
                if type(x) in plain
                else _refused(x)
                for x in rest
            ]
            if kind == "t":  # tuples, then frozensets: nearly every row
                add(tuple(items))
            elif kind == "f":
                add(frozenset(items))
            elif (builder := _BUILDERS.get(kind)) is not None:
                add(builder(items))
            elif kind == "d":
                add(dict(zip(items[::2], items[1::2], strict=True)))
            elif kind in classes:
                cls = classes[kind]
                names = _fields(cls)
                if len(names) != len(items):
                    raise ValueError(f"{kind}: {len(items)} fields, not {len(names)}")
                obj = object.__new__(cls)
                obj.__dict__.update(zip(names, items, strict=True))  # as state.py builds them
                add(obj)
            else:
                raise ValueError(f"not a stored kind: {kind!r}")
        if type(top) is list and len(top) == 1 and type(i := top[0]) is int and i >= 0:
            return built[i]
        return top if type(top) in plain else _refused(top)
    except (TypeError, IndexError, KeyError) as exc:
        raise ValueError(f"damaged stored state: {exc}") from exc


def to_text(value: Any, classes: dict[str, type] = CLASSES) -> bytes:
    """`value` encoded, as the JSON text a kept store holds (stored.py,
    stored_units.py)."""
    return _DUMPS.encode(list(encode(value, classes))).encode("utf-8")


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


def after_text(value: Any, written: Written, classes: dict[str, type] = CLASSES) -> bytes | None:
    """`value` as a text that holds the table of the text `written` and appends
    what `value` holds besides the objects decoded from it (a kept walk resumed
    from another: most of what it holds is the other's): the same value
    decodes, written in a fraction of the time; None where the text does not
    end as `to_text` writes a value that is a row."""
    text = written.text
    end = text.rfind(b"],[")
    if end < 0 or not _TOP_ROW.fullmatch(text, end):
        return None
    table, top = encode(value, classes, written.built)
    rows = _DUMPS.encode(table).encode("utf-8")[1:-1]
    head = text[:end]
    if rows and head != b"[[":
        head += b","
    return b"%s%s],%s]" % (head, rows, _DUMPS.encode(top).encode("utf-8"))
