"""The item table of a kept store's document (the crawl's visits, callee walks,
class analyses): each summary item (reads.py) a row read is written once, and
rows name items by their index in the table."""

from __future__ import annotations

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
