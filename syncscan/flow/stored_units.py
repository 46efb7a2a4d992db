"""Class analyses kept from one run for the next (the cache's units.json).

The unit of the step analysis is the roots of one class (step.py
`analyse_class`: their walks, then each path's verdict against the class's
next steps). Its result is a function of the roots, the walker's
configuration and the summary items it read (reads.py: memo hits included;
parallel.py relies on the same to run units in any process and order). A run
keeps each unit's result with its items; the next run, where an edit changed
some items the recorded run read (reuse.py), takes the result of a unit none
of whose items changed instead of analysing it again — an edit to one engine
class re-analyses that class, not the others. A unit taken asks for what
analysing it asked (its modules and class headers, `Program.adopt_read`) and
holds the callee walks it relied on for the next run (stored.py). A unit
whose items only moved is taken with its lines where they went, as a walk is.

Rows: the unit's key, the ids of its items in the document's item table, its
result as a codec table (JSON text, held after the document's JSON:
index/store_texts.py), and the keys of the walks it relied on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from syncscan.flow.codec import CLASSES, from_text, located, to_text
from syncscan.flow.state import PathState
from syncscan.flow.step import Outcome, StepPath, StepRoot
from syncscan.flow.stored import digest
from syncscan.flow.walk import ReturnInfo
from syncscan.index.item_table import ItemTable, changed_ids, named, opened
from syncscan.index.store_texts import Texts, TextsWriter
from syncscan.relocate import NO_MOVES, Moves, StateCarrier

FORMAT = 2
_UNIT_CLASSES = {**CLASSES, "StepPath": StepPath, "ReturnInfo": ReturnInfo}


def unit_key(roots: list[StepRoot]) -> str:
    """The roots of a unit by name (what else they are is in the record's key)."""
    return json.dumps(
        [[r.self_class, r.function.qualname, r.spec.cls, r.spec.method] for r in roots]
    )


class StoredUnits:
    """The class analyses the recorded run kept that no change touched, and
    those this run makes, for the next run."""

    def __init__(
        self,
        document: Any,
        changed: frozenset[str] | None,
        config: str,
        texts: Texts,
        moves: Moves = NO_MOVES,
    ) -> None:
        self.config = digest(config)  # the walker's configuration, as stored.py names it
        self._texts = texts
        self._carrier = StateCarrier(moves, located(_UNIT_CLASSES))
        self._carry: set[str] = set()  # keys of valid units whose lines moved
        self._items: list[str] = []
        self._rows: dict[str, list[Any]] = {}  # key -> row, of the recorded run's valid units
        self._kept: dict[str, list[Any]] = {}  # key -> row of this run, item names in place of ids
        self.taken = 0
        if changed is not None:
            try:
                self._load(document, changed, moves.items)
            except (KeyError, TypeError, ValueError, IndexError):
                self._items, self._rows, self._carry = [], {}, set()  # damaged: start afresh

    def _load(self, document: Any, changed: frozenset[str], moved: frozenset[str]) -> None:
        self._items, rows = opened(document, FORMAT, self.config)
        touched = changed_ids(self._items, changed - moved)
        moved_ids = changed_ids(self._items, moved)
        self._rows = {
            r[0]: r
            for r in rows
            if _well_formed(r) and self._texts.holds(r[2]) and touched.isdisjoint(r[1])
        }
        self._carry = {k for k, r in self._rows.items() if not moved_ids.isdisjoint(r[1])}

    def take(self, roots: list[StepRoot]) -> tuple[list[Outcome], list[str], list[str]] | None:
        """The kept result of the unit of `roots` that no change touched: each
        root's outcome, the items it read and the walks it relied on."""
        key = unit_key(roots)
        row = self._rows.get(key)
        if row is None:
            return None
        text = self._texts.text(row[2])
        if key in self._carry:
            text = self._carrier(text)
            if text is None:
                return None  # it names a line the move does not say: analysed again
        try:
            outcomes = from_text(text, _UNIT_CLASSES)
            names = named(self._items, row[1])
        except ValueError:
            return None
        if not _plausible(outcomes, len(roots)):
            return None
        self.taken += 1
        self._kept[key] = [key, names, text, row[3]]
        return outcomes, names, row[3]

    def keep(
        self,
        roots: list[StepRoot],
        outcomes: list[Outcome],
        items: Iterable[str],
        walks: list[str],
    ) -> None:
        """A unit this run analysed, with what it read and the walks it relied on."""
        key = unit_key(roots)
        self._kept[key] = [key, sorted(items), to_text(outcomes, _UNIT_CLASSES), walks]

    def document(self) -> tuple[dict[str, Any], bytes]:
        """The units of this run, for the next, and their texts: those it took
        and those it made."""
        table, texts = ItemTable(), TextsWriter()
        rows = [
            [key, table.ids(names), texts.add(text), walks]
            for key, names, text, walks in self._kept.values()
        ]
        document = {"format": FORMAT, "config": self.config, "items": table.items, "rows": rows}
        return document, texts.blob()


def _well_formed(row: Any) -> bool:
    """A row with the shape `document` writes (a foreign or damaged one is
    dropped); its item ids are checked where it is taken."""
    return (
        isinstance(row, list)
        and len(row) == 4
        and isinstance(row[0], str)
        and isinstance(row[1], list)
        and isinstance(row[3], list)
        and all(isinstance(k, str) for k in row[3])
    )


def _plausible(outcomes: Any, roots: int) -> bool:
    """Decoded outcomes with the shape a unit's have (the codec builds only
    known classes, not their fields' types)."""
    return (
        isinstance(outcomes, list)
        and len(outcomes) == roots
        and all(
            isinstance(o, tuple)
            and len(o) == 4
            and isinstance(o[0], list)
            and all(isinstance(p, StepPath) and isinstance(p.state, PathState) for p in o[0])
            and (o[1] is None or isinstance(o[1], str))
            and isinstance(o[2], tuple)
            and isinstance(o[3], dict)
            for o in outcomes
        )
    )
