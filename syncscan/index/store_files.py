"""A kept store's files: the store as some run wrote it whole (`walks.json`),
and what later runs changed in it (`walks.json.delta`).

An edit takes thousands of a store's rows and changes a few dozen, yet writing
each store whole again after it cost more than any other part of saving (vLLM
0.33.0: 33 MB over four stores, 0.2 s of JSON dumping, for an edit that changed
under a hundred rows). So a run writes, beside the whole store, the rows that
differ from it (with their texts: index/store_texts.py) and the keys of the
store's rows in their order; a later run reads the two as the one document a
whole rewrite would have written. The delta is written whole each time (an
atomic replace, never an append), always against the whole store; once it
outgrows half of it, the store is written whole again and the delta removed
(a quarter wrote the roots' and class analyses' stores whole on every edit to
vLLM 0.33.0's step root: one of their four rows is a quarter of each, and the
24 MB cost 0.06 s a run against 0.01 s for the delta).

A delta names the token of the store it was written against and its own: it
applies only to that store, and only for a record naming its token (reuse.py);
a record naming the whole store's token (a run that stopped between writing a
delta and its record) takes the whole store alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncscan.index.cache import SummaryCache

SUFFIX = ".delta"
# A store's item table (and a delta's new items): written as lines, not JSON
# (cache.py `write_framed`): three tables of 30,000 names a run on vLLM 0.33.0.
ITEMS = "items"
_SHARE = 2  # the store is written whole once the delta outgrows 1/_SHARE of it


@dataclass
class Whole:
    """The whole store a delta is written against, as read."""

    token: str
    document: dict[str, Any]
    rows: dict[str, list[Any]]  # key -> row
    blob: bytes


def read(cache: SummaryCache, name: str, token: str) -> tuple[Any, bytes, Whole | None]:
    """The store's document and texts as the run whose record names `token`
    wrote them (None, b"" where it did not), and the whole store a delta can be
    written against (None where there is none)."""
    document, blob = cache.read_framed(name)
    whole = _whole(document, blob)
    if whole is None:
        return None, b"", None
    if whole.token == token:
        return document, blob, whole
    delta, texts = cache.read_framed(name + SUFFIX)
    try:
        merged = _applied(whole, delta, token)
    except (KeyError, TypeError, ValueError):
        merged = None  # damaged: the stores start afresh
    if merged is None:
        return None, b"", whole
    return merged, blob + texts, whole


def write(
    cache: SummaryCache,
    name: str,
    document: dict[str, Any],
    blob: bytes,
    token: str,
    whole: Whole | None,
    text_field: int | None,
) -> None:
    """The store of this run (`document`, its texts `blob`; `text_field`: the
    row field naming a text, None where rows have none), as a delta against
    `whole` where it is small, else whole."""
    try:
        delta = _delta(whole, document, blob, text_field) if whole is not None else None
    except (TypeError, ValueError):  # a damaged row of the whole store: write it whole
        delta = None
    if delta is None or whole is None:
        cache.write_framed(name, {**document, "token": token}, blob, ITEMS)
        cache.discard(name + SUFFIX)
        return
    header, texts = delta
    cache.write_framed(
        name + SUFFIX, {**header, "whole": whole.token, "token": token}, texts, ITEMS
    )


def _whole(document: Any, blob: bytes) -> Whole | None:
    if not isinstance(document, dict) or not isinstance(document.get("token"), str):
        return None
    rows = document.get("rows")
    if not isinstance(rows, list) or not isinstance(document.get("items"), list):
        return None
    keyed = {
        row[0]: row for row in rows if isinstance(row, list) and row and isinstance(row[0], str)
    }
    return Whole(document["token"], document, keyed, blob)


def _applied(whole: Whole, delta: Any, token: str) -> dict[str, Any] | None:
    """The whole store with `delta` applied, where the delta is the one a run
    wrote against it with `token`."""
    if not isinstance(delta, dict) or delta.get("whole") != whole.token:
        return None
    if delta.get("token") != token:
        return None
    items, order, rows = delta["items"], delta["order"], delta["rows"]
    if not all(isinstance(x, list) for x in (items, order, rows)):
        return None
    changed = {row[0]: row for row in rows}
    return {
        **whole.document,
        "items": whole.document["items"] + items,
        "rows": [changed[key] if key in changed else whole.rows[key] for key in order],
        "token": token,
    }


def _delta(
    whole: Whole, document: dict[str, Any], blob: bytes, text_field: int | None
) -> tuple[dict[str, Any], bytes] | None:
    """What `document` changed in `whole`: the items it added, the order of
    its rows' keys, the rows that differ (their texts after the whole store's);
    None where the document is not the whole store grown (another format or
    configuration, an item table that is not the whole one extended) or the
    delta would be large."""
    before = whole.document
    if any(document.get(k) != before.get(k) for k in document if k not in ("items", "rows")):
        return None
    items, known = document["items"], before["items"]
    if items[: len(known)] != known:
        return None
    texts: list[bytes] = []
    size = 0
    changed = []
    for row in document["rows"]:
        old = whole.rows.get(row[0])
        if old is not None and _same(row, old, blob, whole.blob, text_field):
            continue
        if text_field is not None:
            offset, length = row[text_field]
            texts.append(blob[offset : offset + length])
            row = [*row]
            row[text_field] = [len(whole.blob) + size, length]
            size += length
        changed.append(row)
    if len(changed) * _SHARE > len(whole.rows) or size * _SHARE > len(whole.blob):
        return None
    header = {
        "items": items[len(known) :],
        "order": [row[0] for row in document["rows"]],
        "rows": changed,
    }
    return header, b"".join(texts)


def _same(row: list[Any], old: list[Any], blob: bytes, old_blob: bytes, field: int | None) -> bool:
    """Whether `row` (texts in `blob`) is `old` (texts in `old_blob`)."""
    if field is None:
        return row == old
    if len(row) != len(old) or row[:field] != old[:field] or row[field + 1 :] != old[field + 1 :]:
        return False
    (offset, length), (old_offset, old_length) = row[field], old[field]
    return length == old_length and (
        blob[offset : offset + length] == old_blob[old_offset : old_offset + length]
    )
