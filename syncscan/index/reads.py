"""What an analysis read of each summary, item by item, and what each callee
walk and memoised value read.

A run reads a few functions of each module it loads: the bodies it walks, the
`self.x = ...` assignments of a class's other methods, some class headers. The
findings depend on those items only, so a changed file whose new summary agrees
with the old on every item the run read leaves them as they were (reuse.py,
moves.py). Items are noted where the summaries hand out their content
(summary.py: each field of a module, class and function, and the one-name
reads of name resolution), so nothing the analysis reads, directly or through
a memo filled earlier in the same run, escapes the log.

An item is `module \\0 kind \\0 qualname`. Of a module: "module" (imports,
module-level names and assignments, marker comments: its own level read as a
whole), "name" (what one name of its own level is bound to, as name
resolution asks: `qualname` is the name), "stars" (its `from m import *`
modules), "markers" (its marker comments). Of a class: "class" (bases,
decorators, class-level names and assignments, line), "methods" (the names of
its methods, where they are iterated), "method" (whether it has the method
`qualname` names), "class-assigned" (what its methods assign through `self`)
and "class-attributes" (the names they use through `self`). Of a function:
"function" (every field but the two below, positions included), "assigned"
(its `self.x = ...` assignments) and "attributes" (the names it reads through
`self`). A module asked for that has no summary (it does not parse) is item
"unsummarised" (no record holds while its file changes: reuse.py). One item
is not a module's: `\\0 defs \\0 method`, a subclass query
for overrides of `method`, which reads every file's class headers and whether
it defines that name.

An item read only for what it says, not where (the type oracle's reads: a type
is a class name and holds no line), is noted in a movable form, its kind marked
`MOVABLE` (`positions_unused`): a change that only moves it leaves it unchanged
for the walks that read it so (moves.py `changes`).

Records nest (`push`, `pop`): a callee walk, or a value a memo table keeps,
records what it read apart, and that counts for the records around it too. A
`Memo` keeps each value with its items and notes them again on every hit, so a
walk that reuses a value another walk made names the items the value came
from: what each walk depends on is known walk by walk.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from functools import wraps
from typing import Generic, ParamSpec, TypeVar

# The items read since `start` (or since the innermost `push`), or None when no
# run is recording.
LOG: set[str] | None = None
NOTHING: frozenset[str] = frozenset()
# The large sets the record under way noted whole (`note_all`: what a memoised
# value or a reused walk read), held by reference (by id: each once, kept
# alive) and merged into LOG once, when the record is handed on (`_merged`).
# SGLang's step reuses walks that read thousands of items thousands of times:
# noting each item again was a fifth of an edit's re-walk.
_SHARED: dict[int, AbstractSet[str]] = {}
_SHARED_AROUND: list[dict[int, AbstractSet[str]]] = []  # the records' around it
# A set noted whole is held from this size on (a smaller one is merged at once).
_SHARED_FROM = 32

# A function's items, in the order summary.py's `_read_items` keeps them, and
# the field each of the last two stands for.
FUNCTION_KINDS = ("function", "assigned", "attributes")
FIELD_OF = {"assigned": "self_assignments", "attributes": "self_attributes"}


def item(module: str, kind: str, qualname: str = "") -> str:
    return f"{module}\0{kind}\0{qualname}"


def _merged() -> set[str]:
    """LOG, with the sets the record under way holds by reference merged in."""
    global _SHARED
    assert LOG is not None
    if _SHARED:
        LOG.update(*_SHARED.values())
        _SHARED = {}
    return LOG


def start() -> None:
    """Record from now on (a fresh log)."""
    global LOG, _SHARED, _SHARED_AROUND
    LOG, _SHARED, _SHARED_AROUND = set(), {}, []


def stop() -> set[str]:
    """The items read since `start`; recording ends."""
    global LOG
    found, LOG = _merged() if LOG is not None else set(), None
    return found


def note(entry: str) -> None:
    """`entry` (an `item`) was read, where a run is recording."""
    if LOG is not None:
        LOG.add(entry)


def note_all(items: AbstractSet[str]) -> None:
    """Every item of `items` was read (a memoised value's, a reused walk's),
    where a run is recording; `items` is never written again."""
    if LOG is None or not items:
        return
    if len(items) < _SHARED_FROM:
        LOG.update(items)
    else:
        _SHARED.setdefault(id(items), items)


def take() -> set[str]:
    """The items read since `start` or the last `take`; recording goes on
    (where it was on)."""
    global LOG
    if LOG is None:
        return set()
    found, LOG = _merged(), set()
    return found


def push() -> set[str] | None:
    """Record what follows apart (a memoised value, one callee walk) until
    `pop(outer)`, handing back the record around it (None: not recording)."""
    global LOG, _SHARED
    outer = LOG
    if outer is not None:
        _SHARED_AROUND.append(_SHARED)
        LOG, _SHARED = set(), {}
    return outer


def pop_apart(outer: set[str]) -> set[str]:
    """The items read since `push` returned `outer`, which they do not count
    for (the caller notes them in a form of its own)."""
    global LOG, _SHARED
    inner = _merged()
    LOG, _SHARED = outer, _SHARED_AROUND.pop()
    return inner


def pop(outer: set[str] | None) -> frozenset[str] | set[str]:
    """The items read since `push` returned `outer`; they count for the record
    around it too. The set handed back is no longer written: keep it as it is."""
    if outer is None:
        return NOTHING
    inner = pop_apart(outer)
    if inner:
        outer |= inner
        return inner
    return NOTHING


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING = object()


class Memo(Generic[K, V]):
    """A memo table that remembers what making each value read, and notes it
    again on every hit: a walk that reuses a value computed by another depends
    on the same items (a persisted walk is valid only while they are unchanged)."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[K, tuple[V, frozenset[str] | set[str]]] = {}

    def __contains__(self, key: K) -> bool:
        return key in self._values

    def made(
        self,
        key: K,
        make: Callable[[], V],
        guard: object = _MISSING,
        fits: Callable[[V], bool] | None = None,
    ) -> V:
        """The value for `key`: remembered, or made now and remembered with
        what making it read. With `guard`, a recursive ask while it is made
        gets `guard` (which then stays where making it fails); with `fits`, a
        remembered value it refuses is made again (a key naming an object by
        its id, now another object's)."""
        found = self._values.get(key, _MISSING)
        if found is not _MISSING and (fits is None or fits(found[0])):  # type: ignore[index]
            value, items = found  # type: ignore[misc]
            note_all(items)
            return value
        if guard is not _MISSING:
            self._values[key] = (guard, NOTHING)  # type: ignore[assignment]
        outer = push()
        try:
            value = make()
        finally:
            items = pop(outer)
        self._values[key] = (value, items)
        return value

    def clear(self) -> None:
        self._values.clear()


# An item read only for what it says, not where: `positions_unused` notes it
# with its kind so marked, and a change that only moves it leaves it unchanged
# (moves.py). Only kinds whose content holds positions have such a form.
MOVABLE = "~"
_MOVABLE_KINDS = frozenset({"module", "name", "class", "class-assigned", "function", "assigned"})
_movable: dict[str, str] = {}
_unplaced = False  # inside a `positions_unused` function
P = ParamSpec("P")
R = TypeVar("R")


def movable(entry: str) -> str:
    """The form of `entry` that a move leaves unchanged (itself where its kind
    holds no positions)."""
    found = _movable.get(entry)
    if found is None:
        module, kind, qualname = entry.split("\0", 2)
        found = entry
        if kind in _MOVABLE_KINDS:
            found = f"{module}\0{kind}{MOVABLE}\0{qualname}"
        _movable[entry] = found
    return found


def kind_of(kind: str) -> str:
    """An item's kind, whichever form it was read in."""
    return kind.removesuffix(MOVABLE)


def positions_unused(function: Callable[P, R]) -> Callable[P, R]:
    """`function`'s result names no position of what it reads (the type
    oracle's class names): what it reads is noted in the form a move leaves
    unchanged, so a walk that asked a type is not made again because a line
    above an assignment it read moved. Memo tables keep the items as read:
    a value made here and reused elsewhere names them as they were read."""

    @wraps(function)
    def unplaced(*args: P.args, **kwargs: P.kwargs) -> R:
        global _unplaced
        if _unplaced or LOG is None:
            return function(*args, **kwargs)
        outer = push()
        _unplaced = True
        try:
            return function(*args, **kwargs)
        finally:
            inner, _unplaced = pop_apart(outer), False
            outer.update(movable(entry) for entry in inner)

    return unplaced


def add(items: set[str]) -> None:
    """Items read elsewhere for this run (a walk worker's, parallel.py)."""
    if LOG is not None:
        LOG.update(items)


@contextmanager
def paused() -> Iterator[None]:
    """Reads made inside are not the analysis's (the cache encoding a summary)."""
    global LOG
    held, LOG = LOG, None
    try:
        yield
    finally:
        LOG = held


def by_module(items: set[str]) -> dict[str, list[str]]:
    """`module -> sorted "kind\\0qualname"` for the run record."""
    grouped: dict[str, list[str]] = {}
    for entry in items:
        module, rest = entry.split("\0", 1)
        grouped.setdefault(module, []).append(rest)
    return {module: sorted(rest) for module, rest in sorted(grouped.items())}


def defs_item(method: str) -> str:
    """A subclass query for overrides of `method`: which files define a
    function of that name is read, whoever defines it (reuse.py's headers)."""
    return item("", "defs", method)


DEFS_PREFIX = defs_item("")  # what every subclass query's item begins with


def methods_asked(items: AbstractSet[str]) -> set[str]:
    """The method names of the `defs_item`s among a run's items."""
    start = len(DEFS_PREFIX)
    return {entry[start:] for entry in items if entry.startswith(DEFS_PREFIX)}
