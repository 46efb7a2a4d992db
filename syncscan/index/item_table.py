"""The item table of a kept store's document (the crawl's visits, callee walks,
class analyses): each summary item (reads.py) a row read is written once, and
rows name items by their index in the table."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class ItemTable:
    """A table being written: `ids` names items by index, adding new ones."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self.items: list[str] = list(items)
        self._index: dict[str, int] = {item: n for n, item in enumerate(self.items)}

    def of(self, items: Iterable[str] | KeptIds) -> list[int]:
        """The row's item ids in this table: `ids` of names; kept ids as they are."""
        return items.ids if isinstance(items, KeptIds) else self.ids(items)

    def ids(self, names: Iterable[str]) -> list[int]:
        found = []
        for item in names:
            at = self._index.get(item)
            if at is None:
                at = self._index[item] = len(self.items)
                self.items.append(item)
            found.append(at)
        return found


def opened(document: Any, fmt: int, config: str | None = None) -> tuple[list[str], list[Any]]:
    """The item table and the rows of a kept store's `document`, where it has
    this format (and the walker configuration `config`); none where it has not."""
    if not isinstance(document, dict) or document.get("format") != fmt:
        return [], []
    if document.get("config") != config:
        return [], []
    items, rows = document["items"], document["rows"]
    if not isinstance(items, list) or not isinstance(rows, list):
        return [], []
    return [str(i) for i in items], rows


def changed_ids(items: list[str], changed: frozenset[str]) -> set[int]:
    """The indices of the `changed` items in the table."""
    return {n for n, item in enumerate(items) if item in changed}


def named(table: list[str], ids: Any) -> list[str]:
    """The items `ids` name in `table` (ValueError where one is not an index
    into it: a damaged cache)."""
    return [table[i] for i in checked(table, ids)]


def checked(table: list[str], ids: Any) -> list[int]:
    """`ids`, each an index into `table` (ValueError where one is not: a
    damaged cache)."""
    if not isinstance(ids, list) or (
        ids and (set(map(type, ids)) != {int} or min(ids) < 0 or max(ids) >= len(table))
    ):
        raise ValueError("an item id outside the table")
    return ids


@dataclass(frozen=True)
class KeptIds:
    """A row's items as the store's loaded table numbers them, for a row kept as
    it was read: the table a run writes only grows from the loaded one, so the
    ids hold there, with no names to look up and number again (`ItemTable.of`)."""

    ids: list[int]


def packed(ids: Iterable[int]) -> str:
    """A row's item ids as one string (",3,17,42,"): a store's document parses
    a string far faster than as many numbers (vLLM 0.33.0's callee walks: 0.7
    million ids, two thirds of reading the store), and most rows are read for
    their ids only where a change may name one (`IdsMatcher`)."""
    return ",".join(("", *map(str, ids), ""))


_PACKED = re.compile(r",(?:[0-9]+,)*")
# Past this many ids, a matcher reads each row's ids instead of searching them
# (an alternation is tried id by id at each comma).
_ALTERNATIVES = 64


def unpacked(table: list[str], text: Any) -> list[int]:
    """The ids `packed` wrote, each an index into `table` (ValueError where the
    text is not such a string, or an id is outside the table: a damaged cache)."""
    return checked(table, _ids_of(text))


def _ids_of(text: Any) -> list[int]:
    if not isinstance(text, str) or not _PACKED.fullmatch(text):
        raise ValueError("not a row's item ids")
    return [int(i) for i in text[1:-1].split(",")] if len(text) > 1 else []


class IdsMatcher:
    """Whether a row's packed ids name any of `ids`: a search of the string
    for a few, a read of it for many."""

    def __init__(self, ids: set[int]) -> None:
        self._ids = ids
        self._pattern = None
        if 0 < len(ids) <= _ALTERNATIVES:
            self._pattern = re.compile(",(?:" + "|".join(map(str, sorted(ids))) + "),")

    def names_any(self, text: str) -> bool:
        """Whether the packed `text` names one of the ids (ValueError where it
        is not a row's ids, and the ids are many)."""
        if not self._ids:
            return False
        if self._pattern is not None:
            return self._pattern.search(text) is not None
        return not self._ids.isdisjoint(_ids_of(text))
