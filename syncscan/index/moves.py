"""Whether a changed file's new summary agrees with the old on what a run
read, up to lines that moved, and where each line the run could mention went.

An edit above the functions a run walked moves them without changing them,
and a comment or a blank line inside one moves what follows it. Each item read
(reads.py) is compared line for line but for its line numbers (positions.py);
where all agree, the result is a line map, old line -> new line, over every
line the read items hold, kept in order. The run's result mentions no other
line of the file, so the map carries the result to the new file
(relocate.py). Items that hold no positions compare as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from syncscan.index.positions import lines_in, paired
from syncscan.index.reads import FIELD_OF, FUNCTION_KINDS, MOVABLE, kind_of

if TYPE_CHECKING:
    from syncscan.index.summary import ClassSummary, ModuleSummary

LineMap = dict[int, int]


def line_map(before: ModuleSummary, after: ModuleSummary, items: list[str]) -> LineMap | None:
    """Old line -> new line for every line the read `items` hold, where the two
    summaries agree on each item up to a move; None where they differ."""
    from syncscan.index.summary import (
        binding_key,
        find_class,
        find_function,
        markers,
        module_header,
        star_imports,
    )

    moved: LineMap = {}
    markers_read = False
    for entry in items:
        kind, _, qualname = entry.partition("\0")
        kind = kind_of(kind)  # a movable item carries its lines like the other
        if kind == "module":
            old_header, new_header = module_header(before), module_header(after)
            if old_header != new_header:
                return None
            held = lines_in(old_header, set()) | {line for line, _ in markers(before)}
            if not add_pairs(moved, [(line, line) for line in held]):
                return None
        elif kind == "name":
            if not _agree_moved(binding_key(before, qualname), binding_key(after, qualname), moved):
                return None
        elif kind == "stars":
            if star_imports(before) != star_imports(after):
                return None
        elif kind == "markers":
            markers_read = True
        elif kind in _CLASS_KINDS:
            owner = qualname.rsplit(".", 1)[0] if kind == "method" else qualname
            old, new = find_class(before, owner), find_class(after, owner)
            if old is None or new is None or not _class_agrees(kind, qualname, old, new, moved):
                return None
        elif kind in FUNCTION_KINDS:
            old_fn, new_fn = find_function(before, qualname), find_function(after, qualname)
            if old_fn is None or new_fn is None:
                return None
            field = FIELD_OF.get(kind)
            old_value = old_fn if field is None else getattr(old_fn, field)
            new_value = new_fn if field is None else getattr(new_fn, field)
            if not _agree_moved(old_value, new_value, moved):
                return None
        else:
            return None  # a kind this version does not know: a foreign record
    if markers_read and not markers_agree(markers(before), markers(after), moved):
        return None
    return moved if in_order(moved) else None


def shifts(lines: LineMap) -> bool:
    """Whether the map puts any line elsewhere."""
    return any(old != new for old, new in lines.items())


@dataclass(frozen=True)
class Changes:
    """What an edit did to the items a run read of one module.

    `changed`: those that differ, a move included: what read one holds its
    lines, unless it read it only for what it says (reads.py `MOVABLE`).
    `moved`: of those, the ones that only moved, and `lines`: where each line
    of every item that agrees up to a move went. What read only items of
    `moved` and unchanged ones is what it was, with its lines where they went
    (relocate.py `StateCarrier`); `lines` is empty, and `moved` with it, where
    the items' maps disagree or swap lines. `whole`: every item agrees up to
    a move (the marker comments beside their lines): `lines` is then what
    `line_map` gives for them all, the one comparison made once."""

    changed: set[str] = field(default_factory=set)
    moved: set[str] = field(default_factory=set)
    lines: LineMap = field(default_factory=dict)
    whole: bool = False


def changes(before: ModuleSummary, after: ModuleSummary, items: list[str]) -> Changes:
    """The read `items` that changed, those of them that only moved, and where
    the lines of the items that agree up to a move went."""
    from syncscan.index.summary import markers

    found = Changes()
    agree = True
    differs = False  # an item differs beyond a move
    marker_entries = []
    for entry in items:
        kind = entry.partition("\0")[0]
        if kind == "markers":
            marker_entries.append(entry)
            continue
        moved = line_map(before, after, [entry])
        if moved is None:
            found.changed.add(entry)
            differs = True
            continue
        agree = add_pairs(found.lines, list(moved.items())) and agree
        if not kind.endswith(MOVABLE) and shifts(moved):
            found.changed.add(entry)
            found.moved.add(entry)
    # The marker comments changed where they are not beside the lines read as
    # they were, even where the comments themselves stayed (a line added between
    # a marker and the statement below it moves the statement, not the marker).
    old_markers, new_markers = markers(before), markers(after)
    beside = markers_agree(old_markers, new_markers, found.lines)
    for entry in marker_entries:
        if not beside or old_markers != new_markers:
            found.changed.add(entry)
            if beside:
                found.moved.add(entry)
    if not agree or not in_order(found.lines):
        return Changes(found.changed)
    whole = not differs and (beside or not marker_entries)
    return Changes(found.changed, found.moved, found.lines, whole)


def composed(first: dict[str, LineMap], then: dict[str, LineMap]) -> dict[str, LineMap]:
    """Where each line went across two edits, by file (a file the second did
    not change kept its lines; one the first did not change, the second's)."""
    found = dict(first)
    for path, lines in then.items():
        earlier = first.get(path)
        found[path] = (
            lines
            if earlier is None
            else {old: lines[mid] for old, mid in earlier.items() if mid in lines}
        )
    return found


# Items of a class: its header, the set of its methods, one method by name,
# and what its methods assign and name through `self` (summary.py).
_CLASS_KINDS = frozenset({"class", "methods", "method", "class-assigned", "class-attributes"})


def _class_agrees(
    kind: str, qualname: str, old: ClassSummary, new: ClassSummary, moved: LineMap
) -> bool:
    from syncscan.index.summary import class_header, class_self_assignments, class_self_attributes

    if kind == "class":
        return _agree_moved(class_header(old), class_header(new), moved, (old.line, new.line))
    if kind == "methods":
        return tuple(old.methods) == tuple(new.methods)
    if kind == "method":
        name = qualname.rsplit(".", 1)[1]
        old_fn, new_fn = old.methods.get(name), new.methods.get(name)
        return (old_fn is None) == (new_fn is None)  # its content: items of its own
    if kind == "class-attributes":
        return class_self_attributes(old) == class_self_attributes(new)
    old_made, new_made = class_self_assignments(old), class_self_assignments(new)
    if [m.name for m, _ in old_made] != [m.name for m, _ in new_made]:
        return False
    return all(
        _agree_moved(old_assigned, new_assigned, moved)
        for (_, old_assigned), (_, new_assigned) in zip(old_made, new_made, strict=True)
    )


def _agree_moved(old: Any, new: Any, moved: LineMap, *also: tuple[int, int]) -> bool:
    """`old` and `new` equal but for their line numbers; each of their lines
    (and the pairs `also`) joins `moved`."""
    pairs = paired(old, new)
    return pairs is not None and add_pairs(moved, [*pairs, *also])


def add_pairs(moved: LineMap, pairs: Iterable[tuple[int, int]]) -> bool:
    """Each old line -> new line of `pairs`; False where one already went elsewhere."""
    return all(moved.setdefault(old, new) == new for old, new in pairs)


def in_order(moved: LineMap) -> bool:
    """The lines keep their order: an edit that made one line of two, or
    swapped them, is not a move."""
    new_lines = [moved[old] for old in sorted(moved)]
    return all(a < b for a, b in zip(new_lines, new_lines[1:], strict=False))


def markers_agree(
    old: tuple[tuple[int, str], ...], new: tuple[tuple[int, str], ...], moved: LineMap
) -> bool:
    """A walk consults the marker comments on a line it walks and on the line
    above it (walk.py, host_syncs.py): those of each line read are where they
    were, beside the same line."""

    def at(comments: tuple[tuple[int, str], ...]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for line, marker in comments:
            found.setdefault(line, []).append(marker)
        return found

    before, after = at(old), at(new)
    return all(
        (before.get(line - 1), before.get(line)) == (after.get(new - 1), after.get(new))
        for line, new in moved.items()
    )
