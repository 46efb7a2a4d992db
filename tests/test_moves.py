"""A changed file's new summary agrees with the old on what a run read, up to
lines that moved (syncscan/index/moves.py), and the line map says where each
line the run could mention went."""

from __future__ import annotations

from helpers import SUMMARY_SOURCE as SOURCE

from syncscan.index import reads
from syncscan.index.build import summarise
from syncscan.index.moves import changes, line_map
from syncscan.index.summary import ModuleSummary, recorded

STEP = "function\0pkg.mod.Runner.step"


def _summary(source: str) -> ModuleSummary:
    return recorded(summarise(source, "pkg.mod", "pkg/mod.py", False))


def test_summaries_agree_on_what_was_read_and_differ_elsewhere() -> None:
    before = _summary(SOURCE)
    after = _summary(SOURCE.replace("return inner()", "return inner() + 0"))
    kept = line_map(before, after, ["module\0", "class\0pkg.mod.Runner", "name\0torch"])
    assert kept is not None and all(old == new for old, new in kept.items())
    assert line_map(before, after, ["assigned\0pkg.mod.Runner.step"]) is not None
    assert line_map(before, after, [STEP]) is None
    assert line_map(before, after, ["function\0pkg.mod.Runner.gone"]) is None
    assert line_map(before, after, ["unknown\0x"]) is None


def test_names_agree_where_their_bindings_do() -> None:
    before = _summary(SOURCE)
    after = _summary(
        SOURCE + "\n\nfrom other import *\nLIMIT = 5\n\ndef torch():\n    pass\n",
    )
    assert line_map(before, after, ["name\0Runner", "name\0missing"]) is not None
    assert line_map(before, after, ["name\0torch"]) is None  # now a function first
    assert line_map(before, after, ["name\0LIMIT"]) is None  # another value
    assert line_map(before, after, ["stars\0"]) is None
    assert line_map(before, after, ["module\0"]) is None


def test_what_moved_whole_agrees_and_the_map_says_where_it_went() -> None:
    before = _summary(SOURCE)
    after = _summary(SOURCE.replace("class Runner(Base):", "# a comment\n\nclass Runner(Base):"))
    step = before.classes["Runner"].methods["step"]
    items = [STEP, "assigned\0pkg.mod.Runner.other", "class\0pkg.mod.Runner", "markers\0"]
    moved = line_map(before, after, items)
    assert moved is not None
    assert moved[step.header_line] == step.header_line + 2
    assert moved[step.end_line] == step.end_line + 2
    assert moved[before.classes["Runner"].line] == before.classes["Runner"].line + 2
    # The module's own level, read whole, holds its positions: they did not move
    # here, and a move there differs.
    assert line_map(before, after, ["module\0"]) == {2: 2}  # `import torch`
    assert line_map(before, _summary("\n" + SOURCE), ["module\0"]) is None


def test_a_line_added_inside_a_function_moves_what_follows_it() -> None:
    before = _summary(SOURCE)
    inside = _summary(
        SOURCE.replace("        return inner()\n", "        # why\n        return inner()\n")
    )
    step = before.classes["Runner"].methods["step"]
    moved = line_map(before, inside, [STEP])
    assert moved is not None
    assert moved[step.line] == step.line  # above the comment: in place
    assert moved[step.end_line] == step.end_line + 1  # `return inner()`, below it
    changed = _summary(SOURCE.replace("return inner()", "return inner() + 1"))
    assert line_map(before, changed, [STEP]) is None
    assert line_map(before, changed, ["function\0pkg.mod.Runner.other"]) is not None


def test_functions_that_swapped_places_are_not_a_move() -> None:
    """Each is the same, but the lines no longer keep their order: findings
    ordered by line could come out in another order, so it is a change."""
    before = _summary(SOURCE)
    step = SOURCE[SOURCE.index("    @property") : SOURCE.index("    def other")]
    other = SOURCE[SOURCE.index("    def other") :]
    swapped = _summary(SOURCE.replace(step + other, other + "\n" + step.rstrip("\n") + "\n"))
    items = [STEP, "function\0pkg.mod.Runner.other"]
    assert line_map(before, swapped, items[:1]) is not None
    assert line_map(before, swapped, items[1:]) is not None
    assert line_map(before, swapped, items) is None


def test_marker_comments_count_inside_the_functions_read() -> None:
    before = _summary(SOURCE)
    inside = _summary(
        SOURCE.replace("self.count = len(batch)", "self.count = len(batch)  # gpu-sync-ok: why")
    )
    outside = _summary(SOURCE.replace("LIMIT = 4", "LIMIT = 4  # gpu-sync-ok: why"))
    assert line_map(before, inside, [STEP, "markers\0"]) is None
    assert line_map(before, outside, [STEP, "markers\0"]) is not None
    assert line_map(before, inside, ["function\0pkg.mod.Runner.other", "markers\0"]) is not None
    # On a line of its own above a statement, it counts for that statement.
    statement = "        self.count = len(batch)\n"
    above = _summary(SOURCE.replace(statement, "        # gpu-sync-ok: why\n" + statement))
    plain = _summary(SOURCE.replace(statement, "        # why\n" + statement))
    assert line_map(before, above, [STEP, "markers\0"]) is None
    assert line_map(before, plain, [STEP, "markers\0"]) is not None


def test_a_class_read_member_by_member_agrees_where_its_members_do() -> None:
    before = _summary(SOURCE)
    added = _summary(SOURCE + "\n    def describe(self):\n        return self.count\n")
    items = ["methods\0pkg.mod.Runner", "method\0pkg.mod.Runner.step"]
    assert line_map(before, added, items[1:]) is not None
    assert line_map(before, added, items[:1]) is None  # the set of methods grew
    assert line_map(before, added, ["method\0pkg.mod.Runner.describe"]) is None
    assert line_map(before, added, ["class-assigned\0pkg.mod.Runner"]) is not None
    assert line_map(before, added, ["class-attributes\0pkg.mod.Runner"]) is not None
    assigning = _summary(SOURCE + "\n    def reset(self):\n        self.count = 0\n")
    assert line_map(before, assigning, ["class-assigned\0pkg.mod.Runner"]) is None
    naming = _summary(SOURCE + "\n    def other_name(self):\n        return self.size\n")
    assert line_map(before, naming, ["class-attributes\0pkg.mod.Runner"]) is None


def test_assignments_through_self_move_with_their_method() -> None:
    before = _summary(SOURCE)
    moved_down = _summary(
        SOURCE.replace("    @property\n", "    def first(self):\n        pass\n\n    @property\n")
    )
    step = before.classes["Runner"].methods["step"]
    assignment_line = step.header_line + 2  # `self.count = len(batch)`
    moved = line_map(before, moved_down, ["class-assigned\0pkg.mod.Runner"])
    assert moved is not None and moved[assignment_line] == assignment_line + 3


def test_an_item_read_only_for_what_it_says_is_unchanged_by_a_move() -> None:
    """A walk that asked the type of `self.count` read the class's assignments
    for what they say (reads.py `MOVABLE`): moved, they are unchanged for it;
    read as they are (a buffer's allocation line), they changed."""
    before = _summary(SOURCE)
    moved_down = _summary(
        SOURCE.replace("    @property\n", "    def first(self):\n        pass\n\n    @property\n")
    )
    # A module's items, as the run record lists them: "kind \0 qualname".
    read = "class-assigned\0pkg.mod.Runner"
    unplaced = reads.movable(f"pkg.mod\0{read}").partition("\0")[2]
    assert unplaced != read and reads.kind_of(unplaced.split("\0")[0]) == "class-assigned"
    assert changes(before, moved_down, [read]).changed == {read}
    assert changes(before, moved_down, [unplaced]).changed == set()
    rewritten = _summary(SOURCE.replace("self.count = len(batch)", "self.count = 0"))
    assert changes(before, rewritten, [unplaced]).changed == {unplaced}  # what it says changed


def test_changes_tell_what_only_moved_from_what_changed() -> None:
    """A line added inside `step` changes it and moves `other` below it: what
    read `other` and nothing changed is carried (relocate.py) by the map of
    the items that agree up to a move; `step`'s own lines are not in it."""
    before = _summary(SOURCE)
    after = _summary(
        SOURCE.replace("        return inner()\n", "        x = 1\n        return inner()\n")
    )
    other = "function\0pkg.mod.Runner.other"
    found = changes(before, after, [STEP, other, "module\0", "markers\0"])
    assert found.changed == {STEP, other}
    assert found.moved == {other}
    old_other = before.classes["Runner"].methods["other"]
    assert found.lines[old_other.line] == old_other.line + 1
    assert found.lines[2] == 2  # `import torch`: the module level, read, in place
    assert before.classes["Runner"].methods["step"].end_line not in found.lines
    # Marker comments: moved with the lines read, they only moved.
    marked = SOURCE.replace("return 2", "return 2  # gpu-sync-ok: why")
    moved_marker = changes(_summary(marked), _summary("# top\n" + marked), [other, "markers\0"])
    assert moved_marker.moved == moved_marker.changed == {other, "markers\0"}


def test_a_statement_moved_away_from_its_marker_changes_the_markers() -> None:
    """A line added between a marker comment and the statement it marks moves
    the statement, not the comment: the markers read changed, though the
    comments did not (what read them is walked again, not carried)."""
    statement = "        self.count = len(batch)\n"
    marked = SOURCE.replace(statement, "        # gpu-sync-ok: why\n" + statement)
    apart = marked.replace(statement, "        # a note\n" + statement)
    found = changes(_summary(marked), _summary(apart), [STEP, "markers\0"])
    assert found.changed == {STEP, "markers\0"}
    assert found.moved == {STEP}
    # Moved together with the statement, they only moved.
    together = changes(_summary(marked), _summary("# top\n" + marked), [STEP, "markers\0"])
    assert together.moved == together.changed == {STEP, "markers\0"}


def test_changes_carry_nothing_where_the_items_maps_disagree() -> None:
    before = _summary(SOURCE)
    step = SOURCE[SOURCE.index("    @property") : SOURCE.index("    def other")]
    other = SOURCE[SOURCE.index("    def other") :]
    swapped = _summary(SOURCE.replace(step + other, other + "\n" + step.rstrip("\n") + "\n"))
    found = changes(before, swapped, [STEP, "function\0pkg.mod.Runner.other"])
    assert found.changed == {STEP, "function\0pkg.mod.Runner.other"}
    assert found.moved == set() and found.lines == {}


def test_changes_agree_whole_exactly_where_line_map_gives_the_map() -> None:
    """`Changes.whole` (every item agrees up to a move) and its lines are
    `line_map`'s answer for all the items, in one comparison (reuse.py asks
    once): over the edits above, on every subset of items they read."""
    marked = SOURCE.replace("return 2", "return 2  # gpu-sync-ok: why")
    statement = "        self.count = len(batch)\n"
    inner = "        return inner()\n"
    marked_statement = SOURCE.replace(statement, "        # gpu-sync-ok: why\n" + statement)
    step = SOURCE[SOURCE.index("    @property") : SOURCE.index("    def other")]
    other = SOURCE[SOURCE.index("    def other") :]
    edits = [
        (SOURCE, SOURCE),
        (SOURCE, SOURCE.replace("return inner()", "return inner() + 0")),
        (SOURCE, "\n" + SOURCE),
        (SOURCE, SOURCE.replace("class Runner(Base):", "# a comment\n\nclass Runner(Base):")),
        (SOURCE, SOURCE.replace(inner, "        x = 1\n" + inner)),
        (SOURCE, SOURCE + "\n\nfrom other import *\nLIMIT = 5\n\ndef torch():\n    pass\n"),
        (SOURCE, SOURCE.replace(step + other, other + "\n" + step.rstrip("\n") + "\n")),
        (marked, "# top\n" + marked),
        (marked_statement, marked_statement.replace(statement, "        # a note\n" + statement)),
    ]
    items = [
        STEP,
        "function\0pkg.mod.Runner.other",
        "assigned\0pkg.mod.Runner.step",
        "class\0pkg.mod.Runner",
        "module\0",
        "name\0torch",
        "markers\0",
        "function\0pkg.mod.Runner.gone",
    ]
    wholes = 0
    for old_source, new_source in edits:
        before, after = _summary(old_source), _summary(new_source)
        for mask in range(1 << len(items)):
            chosen = [item for n, item in enumerate(items) if mask >> n & 1]
            found = changes(before, after, chosen)
            expected = line_map(before, after, chosen)
            assert found.whole == (expected is not None), (new_source[:40], chosen)
            if found.whole:
                wholes += 1
                assert found.lines == expected
    assert 0 < wholes < len(edits) << len(items)  # both answers met
