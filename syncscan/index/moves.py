"""Whether a changed file's new summary agrees with the old on what a run
read, up to lines that moved, and where each line the run could mention went.

An edit above the functions a run walked moves them without changing them:
every line number in them grows by the same amount. Each item read (reads.py)
is compared in a form relative to its own first line (positions.py); where
all agree, the result is a line map, old line -> new line, over every line the
read items hold. The run's result mentions no other line of the file, so the
map carries the result to the new file (relocate.py). Items that hold no
positions compare as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from syncscan.index.positions import first_line, lines_in, relative
from syncscan.index.reads import FIELD_OF, FUNCTION_KINDS

if TYPE_CHECKING:
    from syncscan.index.summary import ClassSummary, ModuleSummary

LineMap = dict[int, int]
# The lines of a function read whole, old first and last, and how far it moved.
Span = tuple[int, int, int]


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
    spans: list[Span] = []
    markers_read = False
    for entry in items:
        kind, _, qualname = entry.partition("\0")
        if kind == "module":
            old_header, new_header = module_header(before), module_header(after)
            if old_header != new_header:
                return None
            held = lines_in(old_header, set()) | {line for line, _ in markers(before)}
            if not _add(moved, held, 0):
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
            old_base, new_base = old_fn.header_line, new_fn.header_line
            if field is None:
                if relative(old_fn, old_base) != relative(new_fn, new_base):
                    return None
                shift = new_base - old_base
                spans.append((old_base, old_fn.end_line, shift))
                if not _add(moved, range(old_base, old_fn.end_line + 1), shift):
                    return None
            elif not _agree_moved(
                getattr(old_fn, field), getattr(new_fn, field), moved, old_base, new_base
            ):
                return None
        else:
            return None  # a kind this version does not know: a foreign record
    if markers_read and not _markers_agree(markers(before), markers(after), spans):
        return None
    return moved


# Items of a class: its header, the set of its methods, one method by name,
# and what its methods assign and name through `self` (summary.py).
_CLASS_KINDS = frozenset({"class", "methods", "method", "class-assigned", "class-attributes"})


def _class_agrees(
    kind: str, qualname: str, old: ClassSummary, new: ClassSummary, moved: LineMap
) -> bool:
    from syncscan.index.summary import class_header, class_self_assignments, class_self_attributes

    if kind == "class":
        return _agree_moved(class_header(old), class_header(new), moved, old.line, new.line)
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
        _agree_moved(old_assigned, new_assigned, moved, old_fn.header_line, new_fn.header_line)
        for (old_fn, old_assigned), (new_fn, new_assigned) in zip(old_made, new_made, strict=True)
    )


def _agree_moved(
    old: Any, new: Any, moved: LineMap, old_base: int | None = None, new_base: int | None = None
) -> bool:
    """`old` and `new` equal up to a move (relative to the given first lines,
    else to the first line each holds); their lines join `moved`."""
    if old_base is None or new_base is None:
        old_base, new_base = first_line(old), first_line(new)
    if old_base is None or new_base is None:
        return old == new  # nothing in them moves
    if relative(old, old_base) != relative(new, new_base):
        return False
    return _add(moved, lines_in(old, set()) | {old_base}, new_base - old_base)


def _add(moved: LineMap, lines: Any, shift: int) -> bool:
    """Each of `lines` moved by `shift`; False where one already moved elsewhere."""
    return all(moved.setdefault(line, line + shift) == line + shift for line in lines)


def _markers_agree(
    old: tuple[tuple[int, str], ...], new: tuple[tuple[int, str], ...], spans: list[Span]
) -> bool:
    """The marker comments inside the functions read moved with them: a walk
    consults them only at the lines it walks (walk.py, host_syncs.py)."""

    def inside(line: int, after: bool) -> int | None:
        for first, last, shift in spans:
            offset = shift if after else 0
            if first + offset <= line <= last + offset:
                return line - offset
        return None

    kept_old = {(line, marker) for line, marker in old if inside(line, False) is not None}
    kept_new = set()
    for new_line, marker in new:
        old_line = inside(new_line, True)
        if old_line is not None:
            kept_new.add((old_line, marker))
    return kept_old == kept_new
