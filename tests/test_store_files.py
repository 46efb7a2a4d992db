"""A kept store's files (syncscan/index/store_files.py): a run that changed a
few rows writes them beside the whole store, and the next run reads the two as
the document a whole rewrite would have written; a large change, another
configuration or a damaged file writes the store whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import combined_project
from test_reuse import checked
from test_stored import _insert_statement, _same_as_fresh

from syncscan.index import store_files
from syncscan.index.cache import SummaryCache
from syncscan.index.store_texts import Texts, TextsWriter

NAME = "walks.json"
DELTA = NAME + store_files.SUFFIX


def _store(rows: dict[str, str], items: list[str], config: str = "c") -> tuple[dict, bytes]:
    """A store of rows [key, item ids, text ref, note] whose texts are `rows`' values."""
    texts = TextsWriter()
    made = [[key, [0], texts.add(text.encode()), key.upper()] for key, text in rows.items()]
    return {"format": 1, "config": config, "items": items, "rows": made}, texts.blob()


def _as_read(document: Any, blob: bytes) -> list[tuple]:
    """A store's rows with their texts in place of their references."""
    texts = Texts(blob)
    return [(r[0], r[1], texts.text(r[2]), r[3]) for r in document["rows"]]


def _whole(cache: SummaryCache, token: str) -> store_files.Whole | None:
    return store_files.read(cache, NAME, token)[2]


ROWS = {f"k{n}": f"text of row {n}" for n in range(12)}


def test_a_few_rows_changed_are_written_beside_the_whole_store(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    first, blob = _store(ROWS, ["a", "b"])
    store_files.write(cache, NAME, first, blob, "t1", None, 2)
    whole_bytes = (tmp_path / NAME).read_bytes()

    rows = {k: v for k, v in ROWS.items() if k != "k3"}  # one dropped
    rows["k5"] = "text of row 5, carried"  # one changed
    rows["new"] = "a new row"  # one made
    rows = {"k7": rows.pop("k7"), **rows}  # and another order
    second, blob2 = _store(rows, ["a", "b", "c"])
    store_files.write(cache, NAME, second, blob2, "t2", _whole(cache, "t1"), 2)
    assert (tmp_path / NAME).read_bytes() == whole_bytes  # the whole store is left as it was
    assert (tmp_path / DELTA).stat().st_size < len(whole_bytes)

    document, texts, whole = store_files.read(cache, NAME, "t2")
    assert whole is not None and whole.token == "t1"
    assert document["items"] == ["a", "b", "c"]
    assert document["config"] == "c" and document["token"] == "t2"
    assert _as_read(document, texts) == _as_read(second, blob2)


def test_the_delta_is_always_written_against_the_whole_store(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    store_files.write(cache, NAME, *_store(ROWS, ["a"]), "t1", None, 2)
    rows = dict(ROWS)
    for n, token in enumerate(["t2", "t3"]):
        rows[f"k{n}"] = f"changed in run {n}"
        document, blob = _store(rows, ["a"])
        previous = "t1" if n == 0 else "t2"
        store_files.write(cache, NAME, document, blob, token, _whole(cache, previous), 2)
    found, texts, whole = store_files.read(cache, NAME, "t3")
    assert whole is not None and whole.token == "t1"
    assert _as_read(found, texts) == _as_read(*_store(rows, ["a"]))


def test_a_large_change_writes_the_store_whole(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    store_files.write(cache, NAME, *_store(ROWS, ["a"]), "t1", None, 2)
    rows = dict(ROWS)
    rows["k1"] = "changed"
    store_files.write(cache, NAME, *_store(rows, ["a"]), "t2", _whole(cache, "t1"), 2)
    assert (tmp_path / DELTA).exists()
    rows.update({f"k{n}": "changed again" for n in range(2, 6)})  # 5 of 12: under half
    store_files.write(cache, NAME, *_store(rows, ["a"]), "t3", _whole(cache, "t1"), 2)
    assert (tmp_path / DELTA).exists()
    rows.update({f"k{n}": "changed again" for n in range(6, 8)})  # 7 of 12: over half
    store_files.write(cache, NAME, *_store(rows, ["a"]), "t4", _whole(cache, "t3"), 2)
    assert not (tmp_path / DELTA).exists()
    document, texts, whole = store_files.read(cache, NAME, "t4")
    assert whole is not None and whole.token == "t4"
    assert _as_read(document, texts) == _as_read(*_store(rows, ["a"]))


@pytest.mark.parametrize(
    "second",
    [
        _store(ROWS, ["a"], config="another walker"),
        _store(ROWS, ["b", "a"]),  # an item table that is not the whole one grown
    ],
    ids=["config", "items"],
)
def test_a_store_that_is_not_the_whole_one_grown_is_written_whole(
    tmp_path: Path, second: tuple[dict, bytes]
) -> None:
    cache = SummaryCache(tmp_path)
    store_files.write(cache, NAME, *_store(ROWS, ["a"]), "t1", None, 2)
    store_files.write(cache, NAME, *second, "t2", _whole(cache, "t1"), 2)
    assert not (tmp_path / DELTA).exists()
    document, texts, _ = store_files.read(cache, NAME, "t2")
    assert document == {**second[0], "token": "t2"} and texts == second[1]


def test_a_delta_applies_only_for_its_token_and_its_whole_store(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    first, blob = _store(ROWS, ["a"])
    store_files.write(cache, NAME, first, blob, "t1", None, 2)
    rows = {**ROWS, "k1": "changed"}
    store_files.write(cache, NAME, *_store(rows, ["a"]), "t2", _whole(cache, "t1"), 2)
    # A record written before the delta (its run stopped before its own record)
    # names the whole store: it alone is that run's.
    document, texts, _ = store_files.read(cache, NAME, "t1")
    assert _as_read(document, texts) == _as_read(first, blob)
    # A record naming neither takes nothing.
    assert store_files.read(cache, NAME, "t9")[:2] == (None, b"")
    # A delta written against another whole store is not this one's (the store
    # written whole again by a run that stopped before it removed the delta).
    other, other_blob = _store(ROWS, ["a"], config="other")
    cache.write_framed(NAME, {**other, "token": "t3"}, other_blob)
    assert (tmp_path / DELTA).exists()
    assert store_files.read(cache, NAME, "t2")[:2] == (None, b"")


@pytest.mark.parametrize(
    "damaged",
    [
        b"\x80 not json\n",
        b'{"whole": "t1", "token": "t2", "items": [], "order": ["nothing"], "rows": []}\n',
    ],
    ids=["garbage", "unknown-key"],
)
def test_a_damaged_delta_takes_nothing(tmp_path: Path, damaged: bytes) -> None:
    cache = SummaryCache(tmp_path)
    store_files.write(cache, NAME, *_store(ROWS, ["a"]), "t1", None, 2)
    (tmp_path / DELTA).write_bytes(damaged)
    document, texts, whole = store_files.read(cache, NAME, "t2")
    assert (document, texts) == (None, b"")
    assert whole is not None  # the next run's store is written whole, or against it


def test_edits_write_deltas_and_the_runs_after_them_are_fresh_analyses(tmp_path: Path) -> None:
    project = combined_project(tmp_path / "project")
    cache = tmp_path / "cache"
    checked(project, cache)
    wholes = {p.name: p.read_bytes() for p in cache.glob("*.json")}
    for n in range(3):
        _insert_statement(project / "engine" / "runner.py", "Runner.execute_model", f"_e{n} = 1")
        again = checked(project, cache)
        assert again.stats["roots_resumed"] == 1 and again.stats["points_reused"] == 1
        _same_as_fresh(again, project)
    # The point changed little: written beside the first run's store. The
    # walks were not looked up (the root resumed): left as the first run wrote
    # them (reuse.py `kept_left`).
    assert (cache / ("quiescence.json" + store_files.SUFFIX)).exists()
    assert not (cache / ("walks.json" + store_files.SUFFIX)).exists()
    for name in ("walks.json", "quiescence.json"):
        assert (cache / name).read_bytes() == wholes[name]


def test_an_item_table_is_written_as_lines_and_read_back(tmp_path: Path) -> None:
    """The table is not in the JSON (it is read with a split), and the store
    reads back as written, texts after it included; a table that a line break
    would split stays in the JSON."""
    cache = SummaryCache(tmp_path)
    items = ["m\0function\0m.f", "m\0class\0m.C", "", "\u00e9\0name\0x"]
    document, blob = _store(ROWS, items)
    store_files.write(cache, NAME, document, blob, "t1", None, 2)
    header, _, rest = (tmp_path / NAME).read_bytes().partition(b"\n")
    assert b"function" not in header and rest.startswith("\n".join(items).encode())
    found, texts, _ = store_files.read(cache, NAME, "t1")
    assert found["items"] == items and _as_read(found, texts) == _as_read(document, blob)
    for empty in ([], [""]):
        cache.write_framed("t.json", {"items": empty, "rows": []}, b"tail", "items")
        assert cache.read_framed("t.json") == ({"items": empty, "rows": []}, b"tail")
    broken = ["a\nb", "c"]
    cache.write_framed("t.json", {"items": broken}, b"tail", "items")
    assert b"a\\nb" in (tmp_path / "t.json").read_bytes()
    assert cache.read_framed("t.json") == ({"items": broken}, b"tail")


@pytest.mark.parametrize("count", [1, 3], ids=["too-few", "too-many"])
def test_an_item_table_of_another_length_is_damage(tmp_path: Path, count: int) -> None:
    """A table whose lines are not as many as its header says (a file cut or
    edited) is no table: the store reads as missing."""
    cache = SummaryCache(tmp_path)
    cache.write_framed(NAME, {"items": ["a", "b"], "rows": []}, b"tail", "items")
    path = tmp_path / NAME
    path.write_bytes(
        path.read_bytes().replace(
            b'"framed_lines":["items",2,', f'"framed_lines":["items",{count},'.encode()
        )
    )
    assert cache.read_framed(NAME) == (None, b"")
