"""Results kept by key from one run for the next: the class analyses
(stored_units.py, units.json) and the quiescence points (quiescence.py,
quiescence.json).

Such a result is a function of its key (what it is of: the roots of a class, a
quiescence point), its walker's configuration and the summary items it read
(reads.py: memo hits included). A run keeps each result with its items; the
next run, where an edit changed some items the recorded run read (reuse.py),
takes a result none of whose items changed instead of making it again. A result
whose items only moved is taken with its lines where they went (relocate.py),
as a walk is.

Rows: the key, the ids of its items in the document's item table, the result as
a codec table (JSON text, held after the document's JSON:
index/store_texts.py), and the keys of the callee walks it relied on (stored.py
keeps them for the next run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from syncscan.flow.codec import from_text, located, to_text
from syncscan.flow.stored import Row, digest
from syncscan.index.item_table import ItemTable, KeptIds, changed_ids, named, opened
from syncscan.index.store_texts import Texts, TextsWriter
from syncscan.relocate import Moves, StateCarrier

# A result taken: its value, the items it read, the walks it relied on.
Taken = tuple[Any, list[str], list[str]]


class StoredResults:
    """The results the recorded run kept that no change touched, and those this
    run takes or makes, for the next run."""

    TEXT_FIELD = 2  # the row field naming its result's text (index/store_files.py)
    EXTRA = 0  # the fields a subclass's rows hold after the four every row holds

    def __init__(
        self,
        document: Any,
        changed: frozenset[str] | None,
        config: str,
        texts: Texts,
        moves: Moves,
        classes: dict[str, type],
        fmt: int,
    ) -> None:
        self.config = digest(config)  # the walker's configuration, as stored.py names it
        self.taken = 0
        self._format = fmt
        self._classes = classes
        self._texts = texts
        self._moves = moves
        self._carrier = StateCarrier(moves, located(classes))
        self._carry: set[str] = set()  # keys of valid results whose lines moved
        self._items: list[str] = []
        self._rows: dict[str, list[Any]] = {}  # key -> row, of the recorded run's valid results
        # key -> row of this run, its items by name (or as read: KeptIds)
        self._kept: dict[str, list[Any]] = {}
        if changed is not None:
            try:
                self._load(document, changed, moves.items)
            except (KeyError, TypeError, ValueError, IndexError):
                self._items, self._rows, self._carry = [], {}, set()  # damaged: start afresh

    def _load(self, document: Any, changed: frozenset[str], moved: frozenset[str]) -> None:
        self._items, rows = opened(document, self._format, self.config)
        touched = changed_ids(self._items, changed - moved)
        moved_ids = changed_ids(self._items, moved)
        formed = [r for r in rows if self._well_formed(r) and self._texts.holds(r[2])]
        self._rows = {r[0]: r for r in formed if touched.isdisjoint(r[1])}
        self._carry = {k for k, r in self._rows.items() if not moved_ids.isdisjoint(r[1])}
        self._loaded(formed, touched)

    def _loaded(self, rows: list[Row], touched: set[int]) -> None:
        """A subclass's look at the well-formed rows read, and the ids of the
        items changed (not only moved) since."""

    def _well_formed(self, row: Any) -> bool:
        """A row with the shape `document` writes (a foreign or damaged one is
        dropped); its item ids are checked where it is taken."""
        return (
            isinstance(row, list)
            and len(row) == 4 + self.EXTRA
            and isinstance(row[0], str)
            and isinstance(row[1], list)
            and isinstance(row[3], list)
            and all(isinstance(k, str) for k in row[3])
        )

    def holds(self, key: str) -> bool:
        """Whether a result of `key` is kept that no change touched (`take`
        may still refuse it: damaged, or naming a line the moves do not say)."""
        return key in self._rows

    def take(self, key: str, plausible: Callable[[Any], bool]) -> Taken | None:
        """The kept result of `key` that no change touched, where it decodes to
        a value `plausible` accepts (the codec builds only known classes, not
        their fields' types)."""
        row = self._rows.get(key)
        if row is None:
            return None
        text = self._texts.text(row[2])
        if key in self._carry:
            text = self._carrier(text)
        decoded = self._decoded(text, row[1], plausible)
        if decoded is None:
            return None
        self.taken += 1
        self._kept[key] = [key, KeptIds(row[1]), text, row[3], *self._extra_kept(row)]
        return decoded[0], decoded[1], row[3]

    def _decoded(
        self, text: bytes | None, ids: Any, plausible: Callable[[Any], bool]
    ) -> tuple[Any, list[str]] | None:
        """A kept text's value, and the items `ids` name, where it decodes to a
        value `plausible` accepts and the ids name items of the table; None
        otherwise, and where `text` is None (it names a line the move does not
        say: made again)."""
        if text is None:
            return None
        try:
            value = from_text(text, self._classes)
            names = named(self._items, ids)
        except ValueError:
            return None
        return (value, names) if plausible(value) else None

    def _extra_kept(self, row: Row) -> list[Any]:
        """A row's extra fields as kept for the next run where it is taken."""
        return row[4:]

    def keep(
        self,
        key: str,
        value: Any,
        items: Iterable[str],
        walks: list[str],
        extra: Iterable[Any] = (),
        text: bytes | None = None,
    ) -> None:
        """A result this run made, with what it read and the walks it relied on
        (and a subclass's `extra` fields; `text`: the value's, where at hand)."""
        if text is None:
            text = to_text(value, self._classes)
        self._kept[key] = [key, sorted(items), text, walks, *extra]

    def rows_news(self) -> tuple[dict[str, list[Any]], int]:
        """The rows kept and how many results were taken (a forked process
        that made them sends them back: parallel.py `Apart`)."""
        return dict(self._kept), self.taken

    def adopt_rows(self, news: tuple[dict[str, list[Any]], int]) -> None:
        """What `rows_news` gave in the process that made them."""
        rows, taken = news
        self._kept.update(rows)
        self.taken += taken

    def document(self) -> tuple[dict[str, Any], bytes]:
        """The results of this run, for the next, and their texts: those it took
        and those it made (the item table only grows, so the ids of those it
        took hold: index/store_files.py writes what changed)."""
        table, texts = ItemTable(self._items), TextsWriter()
        rows = [
            [key, table.of(items), texts.add(text), walks, *self._extra_written(table, extra)]
            for key, items, text, walks, *extra in self._kept.values()
        ]
        document = {
            "format": self._format,
            "config": self.config,
            "items": table.items,
            "rows": rows,
        }
        return document, texts.blob()

    def _extra_written(self, table: ItemTable, extra: list[Any]) -> list[Any]:
        """A row's extra fields as the document holds them (`table` numbers items)."""
        return extra
