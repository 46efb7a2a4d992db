"""Step roots' walks kept statement by statement for the next run (the cache's
roots.json; root_record.py says what is kept and how an edited root resumes).

A row is a stored result (stored_results.py) whose items are what the root's
walk read but its own function, which an edit to the root changes and whose
agreement root_record.py `align` checks statement by statement. Its text is
the root's shape (plain JSON, its lines the kept walk's: what a new body is
aligned with), a newline, then the kept walk as a codec table, carried to
where its lines went: the moves of the items it read (relocate.py), and the
root's own lines as the alignment puts them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from syncscan.flow.codec import CLASSES, Written, after_text, from_text, located, to_text
from syncscan.flow.root_record import Alignment, KeptRoot, Segment, Shape
from syncscan.flow.stored_results import Row, StoredResults
from syncscan.flow.walk import Exit, ReturnInfo
from syncscan.index.item_table import KeptIds, checked, named
from syncscan.index.moves import LineMap, add_pairs
from syncscan.index.store_texts import Texts
from syncscan.relocate import NO_MOVES, Moves, StateCarrier

FORMAT = 3  # 2: a kept walk's table may be appended to (KeptRoot.spliced); 3: finals_id
ROOT_CLASSES = {
    **CLASSES,
    **{cls.__name__: cls for cls in (KeptRoot, Segment, Exit, ReturnInfo)},
}


class StoredRoots(StoredResults):
    """The roots' walks the recorded run kept that no change but one to the
    root's own function touched, and those this run makes, for the next run."""

    def __init__(
        self,
        document: Any,
        changed: frozenset[str] | None,
        config: str,
        texts: Texts,
        moves: Moves = NO_MOVES,
    ) -> None:
        super().__init__(document, changed, config, texts, moves, ROOT_CLASSES, FORMAT)
        self._changed = changed or frozenset()
        self._made: list[str] = []  # keys kept since `news`
        # This run's roots by key: the name of the finals each walk kept ended
        # in (KeptRoot.finals_id), and where the own lines of each root resumed
        # from its kept walk went (root_resume.py).
        self.walked: dict[str, str] = {}
        self.realigned: dict[str, tuple[str, LineMap]] = {}

    @property
    def resumed(self) -> int:
        """How many roots resumed from their kept walks (here or in a walk worker)."""
        return len(self.realigned)

    def shape(self, key: str) -> Shape | None:
        """The shape of the root's kept walk, where one is kept for `key`."""
        row = self._rows.get(key)
        if row is None:
            return None
        plain, _, _ = self._texts.text(row[2]).partition(b"\n")
        try:
            shape = Shape(*(_tuples(value) for value in json.loads(plain)))
        except (ValueError, TypeError):
            return None
        return shape if _plausible_shape(shape) else None

    def take_root(
        self, key: str, relpath: str, alignment: Alignment
    ) -> tuple[KeptRoot, list[str], Written] | None:
        """The kept walk of `key`, its lines where they went (the root's own, in
        `relpath`, as `alignment` puts them), the items it read as its segments
        number them, and its text as decoded (what a resumed walk's text is
        written after); None where a line it names is not covered, or it does
        not decode."""
        row = self._rows[key]
        text = self._carried(row, relpath, alignment.lines)
        if text is None:
            return None
        built: list[Any] = []
        try:
            kept = from_text(text, self._classes, built)
            names = named(self._items, row[1])
        except ValueError:
            return None
        if not _plausible(kept, len(names) + len(kept.own)):
            return None
        return kept, [*names, *kept.own], Written(text, built)

    def moved(self, key: str, own: set[str]) -> bool:
        """Whether the kept walk of `key` names lines that may have moved: an
        item it read, or the root's own function (`own`), changed since."""
        return key in self._carry or not own.isdisjoint(self._changed)

    def hold_as_is(self, key: str) -> None:
        """Keep the walk of `key` for the next run as it is (its class analysis
        was taken whole, and nothing it names moved)."""
        row = self._rows.get(key)
        if row is not None:
            self._held(key, row, self._texts.text(row[2]))

    def hold(self, key: str, relpath: str, alignment: Alignment, shape: Shape) -> None:
        """Keep the walk of `key` for the next run as it is, its lines where they
        went (its class analysis was taken whole: nothing in it changed)."""
        row = self._rows.get(key)
        if row is None:
            return
        text = self._carried(row, relpath, alignment.lines)
        if text is not None:
            self._held(key, row, _joined(shape, text))

    def _held(self, key: str, row: Row, text: bytes) -> None:
        """Keep `row` with `text`, its items as read (a damaged row is dropped:
        made again when its class is)."""
        try:
            ids = KeptIds(checked(self._items, row[1]))
        except ValueError:
            return
        self._kept[key] = [key, ids, text, row[3]]

    def _carried(self, row: Row, relpath: str, lines: LineMap) -> bytes | None:
        _, _, text = self._texts.text(row[2]).partition(b"\n")
        carrier = realigned_carrier(self._moves, [(relpath, lines)], self._classes)
        return carrier(text) if carrier is not None else None

    def keep_root(
        self,
        key: str,
        shape: Shape,
        kept: KeptRoot,
        names: list[str],
        walks: list[str],
        resumed: Written | None = None,
    ) -> None:
        """A root's walk this run made (or resumed from the kept text `resumed`,
        where its table is appended to: `KeptRoot.spliced`), with what it read
        but its own function (`names`, in the order its segments number them)."""
        text = None
        if resumed is not None and kept.spliced:
            text = after_text(kept, resumed, self._classes)
        if text is None:
            text = to_text(dataclasses.replace(kept, spliced=0), self._classes)
        text = _joined(shape, text)
        self._kept[key] = [key, names, text, walks]
        self._made.append(key)

    def news(self) -> tuple[list[Row], dict[str, tuple[str, LineMap]]]:
        """The rows kept and the roots resumed since the last call (a walk
        worker sends them back)."""
        found = ([self._kept[key] for key in self._made if key in self._kept], self.realigned)
        self._made, self.realigned = [], {}
        return found

    def adopt(self, news: tuple[list[Row], dict[str, tuple[str, LineMap]]]) -> None:
        """What a walk worker kept and resumed."""
        rows, realigned = news
        for row in rows:
            self._kept[row[0]] = row
        self.realigned.update(realigned)


def realigned_carrier(
    moves: Moves, roots: Iterable[tuple[str, LineMap]], classes: dict[str, type]
) -> StateCarrier | None:
    """What carries a kept state of `classes` by `moves` and the lines of each
    root's own function (in its file, the relative path) where an alignment put
    them; None where the two disagree."""
    maps = dict(moves.lines)
    for relpath, lines in roots:
        merged = dict(maps.get(relpath, {}))
        if not add_pairs(merged, lines.items()):
            return None
        maps[relpath] = merged
    return StateCarrier(Moves(maps, moves.root, moves.items), located(classes))


def _joined(shape: Shape, text: bytes) -> bytes:
    plain = json.dumps(dataclasses.astuple(shape), separators=(",", ":"))
    return plain.encode("utf-8") + b"\n" + text


def _tuples(value: Any) -> Any:
    """JSON lists back as the tuples a shape holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _plausible_shape(shape: Shape) -> bool:
    """A shape as `_joined` writes it, field by field (a damaged one is not
    aligned with)."""
    count = len(shape.statements)
    return (
        isinstance(shape.header, str)
        and _all(shape.header_lines, int)
        and _all(shape.statements, str)
        and len(shape.statement_lines) == len(shape.bound) == count
        and all(_all(lines, int) for lines in shape.statement_lines)
        and all(_all(names, str) for names in shape.bound)
        and all(_pair(marker, int, str) for marker in shape.markers)
        and all(_pair(fresh, str, str) for fresh in shape.fresh)
    )


def _all(values: Any, kind: type) -> bool:
    return isinstance(values, tuple) and all(
        isinstance(v, kind) and not isinstance(v, bool) for v in values
    )


def _pair(value: Any, first: type, second: type) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], first)
        and isinstance(value[1], second)
    )


def _plausible(kept: Any, items: int) -> bool:
    """A decoded walk with the shape `keep_root` writes, its segments numbering
    `items` items (the codec builds only known classes, not their fields' types)."""
    if not (
        isinstance(kept, KeptRoot)
        and isinstance(kept.own, tuple)
        and type(kept.spliced) is int
        and isinstance(kept.finals_id, str)
        and len(kept.at) == len(kept.states_at) == len(kept.segments)
        and all(isinstance(k, int) for k in kept.at)
        and all(isinstance(s, Segment) for s in (*kept.segments, kept.tail))
    ):
        return False
    ids = [i for s in (*kept.segments, kept.tail) for i in s.items]
    return all(isinstance(i, int) and 0 <= i < items for i in ids)
