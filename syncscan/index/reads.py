"""What an analysis read of each summary, item by item.

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
`self`). One item is not a module's: `\\0 defs \\0 method`, a subclass query
for overrides of `method`, which reads every file's class headers and whether
it defines that name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# The items read since `start`, or None when no run is recording.
LOG: set[str] | None = None

# A function's items, in the order summary.py's `_read_items` keeps them, and
# the field each of the last two stands for.
FUNCTION_KINDS = ("function", "assigned", "attributes")
FIELD_OF = {"assigned": "self_assignments", "attributes": "self_attributes"}


def item(module: str, kind: str, qualname: str = "") -> str:
    return f"{module}\0{kind}\0{qualname}"


def start() -> None:
    """Record from now on (a fresh log)."""
    global LOG
    LOG = set()


def stop() -> set[str]:
    """The items read since `start`; recording ends."""
    global LOG
    found, LOG = LOG or set(), None
    return found


def note(entry: str) -> None:
    """`entry` (an `item`) was read, where a run is recording."""
    if LOG is not None:
        LOG.add(entry)


def take() -> set[str]:
    """The items read since `start` or the last `take`; recording goes on
    (where it was on)."""
    global LOG
    if LOG is None:
        return set()
    found, LOG = LOG, set()
    return found


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


def methods_asked(by_module_items: dict[str, list[str]]) -> set[str]:
    """The method names of the `defs_item`s in a run record's items."""
    found = set()
    for entry in by_module_items.get("", ()):
        kind, _, method = entry.partition("\0")
        if kind == "defs":
            found.add(method)
    return found
