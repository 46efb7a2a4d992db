"""The call graph's visits kept from one run for the next (the cache's crawl.json).

The crawl (callgraph.py) visits each function the step path may reach once,
in breadth-first order, and what it learns there — the calls it resolves, the
attributes the function assigns, its None tests — is a function of the
summary items that visit read (reads.py: memo hits included) and of the packs
(in the record's key). A run keeps each visit with its items; the next run,
where an edit changed some items the recorded run read (reuse.py), takes a
visit none of whose items changed instead of resolving its calls again, and
replays it in the same order, so the graph is the one a fresh crawl builds.

Rows: the context's key, the ids of its items in the document's item table,
and the visit as plain data (None where the function's module has no summary).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from syncscan.index.item_table import ItemTable, changed_ids, named, opened

FORMAT = 2  # 2: contexts named by callgraph.context_key
Row = list[Any]  # key, item ids, visit data


class StoredCrawl:
    """The visits the recorded run kept that no change touched, and those this
    run makes, for the next run."""

    TEXT_FIELD: int | None = None  # a visit is plain data, with no text beside it

    def __init__(self, document: Any, changed: frozenset[str] | None) -> None:
        self._items: list[str] = []
        self._rows: dict[str, Row] = {}  # key -> row, of the recorded run's valid visits
        self._taken: dict[str, Row] = {}  # those of them this run took
        self._made: dict[str, tuple[list[str], list[Any] | None]] = {}  # items, visit
        if changed is not None:
            try:
                self._load(document, changed)
            except (KeyError, TypeError, ValueError, IndexError):
                self._items, self._rows = [], {}  # damaged: start afresh

    def _load(self, document: Any, changed: frozenset[str]) -> None:
        self._items, rows = opened(document, FORMAT)
        touched = changed_ids(self._items, changed)
        self._rows = {r[0]: r for r in rows if _well_formed(r) and touched.isdisjoint(r[1])}

    def take(self, key: str) -> tuple[list[Any] | None] | None:
        """A kept visit of the context `key` that no change touched (its data in
        a 1-tuple; None inside: the function's module had no summary). What it
        read is in `taken_items`."""
        row = self._rows.get(key)
        if row is None:
            return None
        self._taken[key] = row
        return (row[2],)

    def taken_items(self) -> set[str]:
        """What the visits taken so far read (ValueError where an item id is
        not one of the table's: a damaged cache)."""
        ids = set().union(*(row[1] for row in self._taken.values()))
        return set(named(self._items, list(ids)))

    @property
    def taken(self) -> int:
        return len(self._taken)

    def keep(self, key: str, items: Iterable[str], visit: list[Any] | None) -> None:
        """A visit this run made, with what it read."""
        self._made[key] = (sorted(items), visit)

    def forget(self) -> None:
        """Nothing taken holds (the crawl starts again without the store)."""
        self._rows, self._taken, self._made = {}, {}, {}

    def document(self) -> tuple[dict[str, Any], bytes]:
        """The visits of this run, for the next: those it took (as they were:
        the item table only grows, so their ids hold) and those it made; no
        texts beside them (a visit is plain data, index/store_texts.py)."""
        table = ItemTable(self._items)
        rows = list(self._taken.values())
        rows.extend([key, table.ids(names), visit] for key, (names, visit) in self._made.items())
        return {"format": FORMAT, "items": table.items, "rows": rows}, b""


def _well_formed(row: Any) -> bool:
    """A row with the shape `document` writes (a foreign or damaged one is
    dropped); its item ids are checked where it is taken."""
    return (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and isinstance(row[1], list)
        and (row[2] is None or isinstance(row[2], list))
    )
