"""Callee walks kept from one run for the next (the data-only cache's walks.json).

A callee walk is a function of its frame, the part of its start it read, the
walker's configuration and the summary items it read (reads.py: every memo
hit included, which tests/test_walk_reads.py holds). A run keeps each walk it
made, unless it or a walk nested in it cut a recursion of a function active
outside it or was cut short by the depth limit (such a walk holds only where
it was made); the next run, where an edit changed some items the recorded run read (reuse.py),
takes a kept walk instead of walking again while none of its items changed,
so an edit re-walks only what read it, and the callers that compose the
rest. The result is the one a fresh walk gives: the walk is the same; taken
in place of a walk, it enters the regions and meets the sync sites walking
it met (SYNC005), and a walk nested in it, met again later in the root, is
used as the memo hit a fresh walk would have; and a root that met the depth
limit or came near the budget with kept walks is walked again without them
(step.py).

A walk's items are many (vLLM 0.33.0: 172 on average, 1.37 M over 8,007
walks), so each is stored as the items it read itself (`extras`) and the keys
of the walks nested in it; an edit invalidates the walks that read a changed
item and every walk holding one of them. States are JSON tables (codec.py),
decoded only when a walk is taken, and held after the document's JSON
(index/store_texts.py): loading parses the rows, not the states. The store is
read when a walk is first looked up: an edit whose root resumes from its kept
walk (root_resume.py) looks up none, and leaves the store as it was kept
(reuse.py `save`; vLLM 0.33.0: 18 MB not read, indexed or written again).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from syncscan.flow.codec import CLASSES, from_text, located, to_text
from syncscan.flow.memo import Assumptions, CalleeWalk
from syncscan.flow.state import PathState
from syncscan.index import reads
from syncscan.index.item_table import (
    IdsMatcher,
    ItemTable,
    changed_ids,
    named,
    opened,
    packed,
    unpacked,
)
from syncscan.index.store_texts import Texts, TextsWriter
from syncscan.relocate import NO_MOVES, Moves, StateCarrier

FORMAT = 4  # 4: a row's item ids packed (item_table.py `packed`)
# A row: key, frame digest, predicates read, the start restricted to them,
# height, work, extras (item ids in the document, item names in transit),
# nested walks' keys, the walk's state table (JSON text: in the document, its
# place among the store's texts), and its function (`context`: qualname and
# `self` class).
Row = list[Any]
KEY = "stored_key"  # set on each walk object kept or taken (not a field: never compared)


def stable_text(value: Any) -> str:
    """A text that names `value` the same in every process (sets sorted)."""
    if isinstance(value, str | int | float | bool | type(None)):
        return repr(value)
    if isinstance(value, tuple | list):
        return "(" + ",".join(stable_text(v) for v in value) + ")"
    if isinstance(value, frozenset | set):
        return "{" + ",".join(sorted(stable_text(v) for v in value)) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = tuple(getattr(value, f.name) for f in dataclasses.fields(value))
        return type(value).__name__ + stable_text(fields)
    raise TypeError(f"no stable text for a {type(value).__name__}")


def _well_formed(row: Any) -> bool:
    """A row with the shape `keep` writes (a foreign or damaged one is dropped,
    and the walks holding it with it). Its item ids are checked where it is
    taken (`_closure`): a run takes few of the thousands it loads. Types are
    compared as tuples built in C: a run loads thousands of rows."""
    return (
        type(row) is list
        and len(row) == 10
        and tuple(map(type, row[:8])) == _ROW_TYPES
        and type(row[9]) is str
        and set(map(type, row[2] + row[7])) <= _STR
    )


# The types of a row's fields up to its text, as JSON gives them back (`_well_formed`).
_ROW_TYPES = (str, str, list, list, int, int, str, list)
_STR = {str}


def _plausible(walk: Any) -> bool:
    """A decoded walk with the shape a walk has (the codec builds only known
    classes, not their fields' types)."""
    return (
        isinstance(walk, CalleeWalk)
        and isinstance(walk.outs, list)
        and all(isinstance(s, PathState) for s in walk.outs)
        and isinstance(walk.inside, list)
        and isinstance(walk.syncs, tuple)
        and isinstance(walk.regions, tuple)
        and isinstance(walk.read, frozenset)
        and isinstance(walk.height, int)
        and isinstance(walk.work, int)
    )


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


class StoredWalks:
    """The walks the recorded run kept that no change touched, and those this
    run makes, for the next run."""

    TEXT_FIELD = 8  # the row field naming its state's text (index/store_files.py)

    def __init__(
        self,
        source: Callable[[], tuple[Any, Texts]],
        changed: frozenset[str] | None,
        config: str,
        moves: Moves = NO_MOVES,
    ) -> None:
        self.config = digest(config)  # the walker's configuration (walk.py), as a digest
        self.taken = 0  # walks taken from the store in this root
        # The store as the cache holds it (its document and texts), read when
        # a walk is first looked up or the store is written: an edit whose
        # root resumes from its kept walk looks up none (`opened`).
        self._source: Callable[[], tuple[Any, Texts]] | None = source
        self._changed, self._moves = changed, moves
        self._texts = Texts()
        self._carrier = StateCarrier(moves, located(CLASSES))
        self._carry: set[str] = set()  # keys of valid walks whose lines moved
        self._carried: dict[str, bytes | None] = {}  # their texts where they went
        self._items: list[str] = []
        self._rows: dict[str, Row] = {}  # key -> row, of the recorded run's valid walks
        self._by_frame: dict[str, list[str]] = {}
        self._closures: dict[str, frozenset[str]] = {}
        self._new: dict[str, Row] = {}  # rows made this run (extras by name)
        self._taken: set[str] = set()  # keys taken since `news` (what the next run needs)
        self._used: set[str] = set()  # keys taken this run, here or in a walk worker
        self._touched: set[str] = set()  # keys made or taken since `touched`
        self._held: set[str] = set()  # walks of class analyses taken whole (stored_units.py)
        # The walks nested in those taken whole in this root: a fresh walk
        # of the root would have them memoised.
        self._within: set[str] = set()
        self._descendants: dict[str, frozenset[str]] = {}
        self._functions: dict[str, frozenset[str]] = {}
        self._frames: dict[tuple, str] = {}  # frame -> digest (a miss digests it, then a keep)

    # ------------------------------------------------------------------ loading
    @property
    def opened(self) -> bool:
        """Whether the store was read: a store never opened holds, for the next
        run, what it held when read last (reuse.py leaves its files as they are)."""
        return self._source is None

    def open(self) -> None:
        """Read the store, where it is not read yet (before walk workers fork:
        each would read it again)."""
        if self._source is None:
            return
        source, self._source = self._source, None
        if self._changed is None:
            return  # the change is not known: nothing kept holds
        document, self._texts = source()
        try:
            self._load(document, self._changed, self._moves.items)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            self._items, self._rows, self._carry = [], {}, set()  # damaged: start afresh
        for key, row in self._rows.items():
            self._by_frame.setdefault(row[1], []).append(key)

    def _load(self, document: Any, changed: frozenset[str], moved: frozenset[str]) -> None:
        self._items, rows = opened(document, FORMAT, self.config)
        by_key = {row[0]: row for row in rows if _well_formed(row) and self._texts.holds(row[8])}
        touched = IdsMatcher(changed_ids(self._items, changed - moved))
        moved_ids = IdsMatcher(changed_ids(self._items, moved))
        parents: dict[str, list[str]] = {}
        bad, carry = [], []
        for key, row in by_key.items():
            if touched.names_any(row[6]) or any(c not in by_key for c in row[7]):
                bad.append(key)
            elif moved_ids.names_any(row[6]):
                carry.append(key)
            for child in row[7]:
                parents.setdefault(child, []).append(key)
        invalid = _above(bad, parents)  # a walk holding an invalid one is invalid too
        self._rows = {k: r for k, r in by_key.items() if k not in invalid}
        # A walk holding one whose lines moved holds them too.
        self._carry = _above(carry, parents) - invalid

    # ------------------------------------------------------------------ taking
    def frame_digest(self, frame: tuple) -> str:
        found = self._frames.get(frame)
        if found is None:
            found = self._frames[frame] = digest(self.config + stable_text(frame))
        return found

    def restart(self) -> None:
        """A new root: nothing is taken in it yet."""
        self.taken = 0
        self._within = set()

    def lookup(self, frame: tuple, start: Assumptions) -> tuple[CalleeWalk, bool] | None:
        """A valid kept walk of this frame for a start that agrees with it on
        what it read, decoded with its items and functions (`took` says where
        it is taken); and whether a walk taken whole earlier in this root holds it."""
        self.open()
        keys = self._by_frame.get(self.frame_digest(frame))
        if not keys:
            return None
        given = dict(start)
        for key in keys:
            row = self._rows[key]
            read = row[2]
            restricted = [[k, given[k]] for k in read if k in given]
            if restricted != row[3]:
                continue
            text = self._text(key)
            if text is None:
                continue  # it names a line the move does not say: walked again
            try:
                walk = from_text(text)
                items = self._closure(key)
            except ValueError:
                continue
            if not _plausible(walk):
                continue
            walk = dataclasses.replace(walk, items=items, functions=self._functions_below(key))
            walk.__dict__[KEY] = key
            return walk, key in self._within
        return None

    def took(self, walk: CalleeWalk) -> None:
        """`walk`, found by `lookup`, stands in for a walk here: the next run
        needs it."""
        key = walk.__dict__[KEY]
        self.taken += 1
        self._taken.add(key)
        self._used.add(key)
        self._touched.add(key)

    def _text(self, key: str) -> bytes | None:
        """The kept walk's state text, its lines where they went."""
        text = self._texts.text(self._rows[key][8])
        if key not in self._carry:
            return text
        if key not in self._carried:
            self._carried[key] = self._carrier(text)
        return self._carried[key]

    def taken_whole(self, walk: CalleeWalk) -> None:
        """`walk` stands in for walking it here: the walks nested in it are
        held from now on in this root."""
        self._within |= self._nested_keys(walk.__dict__[KEY])

    def _functions_below(self, key: str) -> frozenset[str]:
        """The functions the kept walk and the walks nested in it run."""
        found = self._functions.get(key)
        if found is None:
            row = self._rows[key]
            found = frozenset({row[9]}).union(*(self._functions_below(c) for c in row[7]))
            self._functions[key] = found
        return found

    def _nested_keys(self, key: str) -> frozenset[str]:
        found = self._descendants.get(key)
        if found is None:
            children = self._rows[key][7]
            found = frozenset(children).union(*(self._nested_keys(c) for c in children))
            self._descendants[key] = found
        return found

    def _closure(self, key: str) -> frozenset[str]:
        """Every item the kept walk read: its own and its nested walks'."""
        found = self._closures.get(key)
        if found is None:
            row = self._rows[key]
            own = set(named(self._items, unpacked(self._items, row[6])))
            for child in row[7]:
                own |= self._closure(child)
            found = self._closures[key] = frozenset(own)
        return found

    # ------------------------------------------------------------------ keeping
    def keep(
        self,
        frame: tuple,
        start: Assumptions,
        walk: CalleeWalk,
        nested: Iterable[CalleeWalk],
        function: str,
    ) -> bool:
        """A walk this run made, for the next run, where every walk nested in it
        is kept (they are, first): a run taking it holds them all."""
        children: list[str] = []
        covered: set[str] = set()
        for child in nested:
            child_key = child.__dict__.get(KEY)
            if child_key is None:
                return False  # a recursion cut inside it, or a walk cut short by depth
            if child_key not in children:
                children.append(child_key)
                covered |= child.items
        frame_digest = self.frame_digest(frame)
        read = sorted(walk.read)
        given = dict(start)
        restricted = [[k, given[k]] for k in read if k in given]
        key = digest(frame_digest + stable_text((read, restricted)))
        walk.__dict__[KEY] = key
        extras = set(walk.items) - covered
        text = to_text(dataclasses.replace(walk, items=frozenset(), functions=frozenset()))
        row = [key, frame_digest, read, restricted, walk.height, walk.work, sorted(extras)]
        self._new[key] = [*row, children, text, function]
        self._touched.add(key)
        return True

    @staticmethod
    def alias(copy: CalleeWalk, original: CalleeWalk) -> CalleeWalk:
        """`copy` (the walk renamed for a caller) is the kept `original`."""
        key = original.__dict__.get(KEY)
        if key is not None:
            copy.__dict__[KEY] = key
        return copy

    def news(self) -> tuple[list[Row], list[str]]:
        """The rows made and the keys taken since the last call (a walk worker
        sends them back)."""
        found = (list(self._new.values()), sorted(self._taken))
        self._new, self._taken = {}, set()
        return found

    def adopt(self, news: tuple[list[Row], list[str]]) -> None:
        """What a walk worker made and took."""
        rows, taken = news
        for row in rows:
            self._new[row[0]] = row
        self._taken.update(taken)
        self._used.update(taken)

    def touched(self) -> list[str]:
        """The keys of the walks made or taken since the last call (those a class
        analysis relies on)."""
        found, self._touched = sorted(self._touched), set()
        return found

    def push_touched(self) -> set[str]:
        """Note the walks made or taken from here apart until `pop_touched`
        (a root's statement, root_record.py), handing back those noted before."""
        outer, self._touched = self._touched, set()
        return outer

    def pop_touched(self, outer: set[str]) -> set[str]:
        """The walks made or taken since `push_touched` gave `outer`; they count
        as touched around it too."""
        inner, self._touched = self._touched, outer
        outer |= inner
        return inner

    def rely_on(self, keys: Iterable[str]) -> None:
        """Walks a root's statements relied on where another run walked them
        (root_record.py): touched, and kept for the next run."""
        self._touched.update(keys)
        self._held.update(keys)

    def hold(self, keys: Iterable[str]) -> None:
        """Keep these walks for the next run: a class analysis taken whole
        (stored_units.py) relied on them, and will again once it is made anew."""
        self._held.update(keys)

    @property
    def made(self) -> int:
        """How many walks this run made for the next (here or in a walk worker)."""
        return len(self._new)

    @property
    def used(self) -> int:
        """How many kept walks this run took (each counted once)."""
        return len(self._used)

    # ------------------------------------------------------------------ saving
    def document(self) -> tuple[dict[str, Any], bytes]:
        """The walks for the next run, and their texts: those this run made,
        those it took or held, with the walks nested in them (a walk no run
        asks for is dropped)."""
        self.open()
        table = ItemTable(self._items)  # append-only: the rows kept keep their ids
        wanted = [*self._used, *self._held, *(c for row in self._new.values() for c in row[7])]
        kept: set[str] = set()
        while wanted:
            key = wanted.pop()
            if key not in kept and key in self._rows and key not in self._new:
                kept.add(key)
                wanted.extend(self._rows[key][7])
        texts, rows = TextsWriter(), []
        for key, row in self._rows.items():
            text = self._text(key) if key in kept else None
            if text is not None:  # not carried: the walks holding it are dropped next run
                rows.append([*row[:8], texts.add(text), row[9]])
        for row in self._new.values():
            ids = packed(sorted(table.ids(row[6])))
            rows.append([*row[:6], ids, row[7], texts.add(row[8]), row[9]])
        document = {"format": FORMAT, "config": self.config, "items": table.items, "rows": rows}
        return document, texts.blob()


def _above(keys: list[str], parents: dict[str, list[str]]) -> set[str]:
    """`keys` and every walk holding one of them."""
    found: set[str] = set()
    while keys:
        key = keys.pop()
        if key not in found:
            found.add(key)
            keys.extend(parents.get(key, ()))
    return found


@dataclass
class Noted:
    """What a stretch of the walk read and the kept walks it made or took
    (`noted_apart`); `recording`: whether the run records reads at all."""

    items: frozenset[str] | set[str] = reads.NOTHING
    walks: set[str] = field(default_factory=set)
    recording: bool = False


@contextmanager
def noted_apart(stored: StoredWalks | None) -> Iterator[Noted]:
    """Note what the code inside reads (reads.py `push`) and the walks it makes
    or takes (`stored`, where there is one) apart, as a root's statement or a
    class's judging needs them; they count around it too."""
    noted = Noted()
    outer = reads.push()
    touched = stored.push_touched() if stored is not None else None
    try:
        yield noted
    finally:
        noted.items, noted.recording = reads.pop(outer), outer is not None
        if stored is not None and touched is not None:
            noted.walks = stored.pop_touched(touched)
