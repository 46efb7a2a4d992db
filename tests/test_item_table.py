"""A kept store's row item ids, packed into one string (index/item_table.py):
read back as written, and matched against a change's ids by search (a few) or
by reading them (many), alike."""

from __future__ import annotations

import pytest

from syncscan.index.item_table import IdsMatcher, packed, unpacked

TABLE = [f"item{n}" for n in range(200)]


@pytest.mark.parametrize("ids", [[], [0], [3, 17, 42], list(range(150))])
def test_packed_ids_come_back(ids: list[int]) -> None:
    assert unpacked(TABLE, packed(ids)) == ids


@pytest.mark.parametrize("text", ["", "3,17", ",3,17", ",x,", ",3,,", ",-1,", ",200,", [3], None])
def test_damaged_ids_are_refused(text: object) -> None:
    with pytest.raises(ValueError):
        unpacked(TABLE, text)


@pytest.mark.parametrize("wanted", [set(), {1}, {12, 170}, set(range(5, 200, 2))])
def test_a_matcher_finds_a_row_naming_an_id_wanted_and_only_such_a_row(wanted: set[int]) -> None:
    """Ids that share digits (1, 12, 112, 121) are told apart; the many-ids
    matcher (over its alternation limit) answers as the few-ids one."""
    matcher = IdsMatcher(wanted)
    for row in ([], [1], [12], [112, 121], [2, 4, 6], [170], [0, 199]):
        assert matcher.names_any(packed(row)) == (not wanted.isdisjoint(row)), (wanted, row)
