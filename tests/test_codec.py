"""Analysis states to plain data and back (flow/codec.py): every callee walk of
every fixture project comes back equal through JSON,
shared parts stay shared, and damaged data is refused, never half-built."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from test_walk_reads import PROJECTS, _recorded_walks

from syncscan.findings import WitnessStep
from syncscan.flow.codec import Written, after_text, decode, encode, from_text, to_text
from syncscan.flow.state import PathState


def _through_json(value: Any) -> Any:
    table, top = encode(value)
    return decode(*json.loads(json.dumps([table, top])))


def test_every_walk_of_the_fixtures_comes_back_equal() -> None:
    walks = 0
    for project in PROJECTS:
        _, walked = _recorded_walks(project)
        for *_, walk in walked:
            assert _through_json(walk) == walk, project
            walks += 1
    assert walks >= 120, walks


def test_shared_parts_stay_shared() -> None:
    step = WitnessStep("a.py", 3, "f", "launches")
    trace = (step,)
    states = [PathState(launched=trace), PathState(wait=trace, guarded=True)]
    back = _through_json(states)
    assert back == states
    assert back[0].launched is back[1].wait


@pytest.mark.parametrize(
    "data",
    [
        [[["Popen", "ls"]], [0]],  # a class no stored state holds
        [[["t", 1]], [3]],  # a reference past the table
        [[["t", [0]]], [0]],  # a row naming itself
        [[["WitnessStep", "a.py"]], [0]],  # too few fields
        [[["t", {"x": 1}]], [0]],  # not a stored value
        [[["d", 1]], [0]],  # a key without its value
        [[[7, 1]], [0]],  # a kind that is not a name
        # References are resolved inline (no call per item), so each test of
        # one is made there: a list of one int, not a bool, >= 0, built already.
        [[["t", 1], ["t", [-1]]], [1]],  # negative: would index from the end
        [[["t", 1], ["t", [0, 0]]], [1]],  # two numbers: would take the first
        [[["t", 1], ["t", []]], [1]],  # no number
        [[["t", 1], ["t", 2], ["t", [True]]], [2]],  # a bool: would be row 1
        [[["t", 1], ["t", [0.0]]], [1]],  # a float
        [[["t", 1], ["t", (0,)]], [1]],  # not a list: JSON never gives a tuple
        [[["t", 1]], [-1]],  # the top, likewise
        [[["t", 1]], [0, 0]],
        [[["t", 1]], [False]],
        [[["t", 1]], {"0": 1}],
        [[{"t": 1}], [0]],  # a row that is not a list
        [[[]], [0]],  # a row without its kind
    ],
)
def test_damaged_data_is_refused(data: list) -> None:
    with pytest.raises(ValueError):
        decode(*data)


@pytest.mark.parametrize(
    "text",
    [
        b"not json",
        b"[" * 100_000 + b"]" * 100_000,  # nested past the recursion limit
        b'[[["t",1]]]',  # no top
        b'{"t":[0]}',
        b'[[["t",1],["t",[-1]]],[1]]',
        b'[[["t",1],["t",[true]]],[1]]',
        b'[[["t",1],["t",[0,0]]],[1]]',
        b'[[["t",{"0":1}]],[0]]',
    ],
)
def test_damaged_text_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError):
        from_text(text)


class _Tag(enum.StrEnum):
    A = "a"


def test_the_text_is_as_it_was_written() -> None:
    """Kept stores written by earlier versions are read and texts are compared,
    so the text is fixed to the byte: row order, `[index]`, kinds, field order;
    a str enum is written as its str."""
    trace = (WitnessStep("a.py", 3, "f", "launches"),)
    state = PathState(launched=trace, wait=trace, guarded=True, written=frozenset({"buf"}))
    value = [state, {"k": (1, None, 1.5), "n": [-2]}, {2}, trace, _Tag.A, True]
    text = (
        b'[[["t"],["f","buf"],["f"],["WitnessStep","a.py",3,"f","launches","",null,1],'
        b'["t",[3]],["f"],["f"],["PathState",[0],null,[1],null,[0],[0],[0],[2],[0],[4],[4],'
        b'true,[5],[6],[0],null],["t",1,null,1.5],["l",-2],["d","k",[8],"n",[9]],["s",2],'
        b'["l",[7],[10],[11],[4],"a",true]],[12]]'
    )
    assert to_text(value) == text
    back = from_text(text)
    assert back == value
    assert back[0].launched is back[0].wait is back[3]


def test_an_object_of_another_class_is_not_stored() -> None:
    with pytest.raises(TypeError):
        encode((object(),))


def test_a_value_written_after_another_text_holds_its_rows_and_comes_back() -> None:
    """`after_text`: the rows of the text decoded first stay as written, the new
    value's objects decoded from it are named by their rows there, and only
    what is new is appended; the value comes back equal, sharing as it did."""
    step = WitnessStep("a.py", 3, "f", "launches")
    first = (PathState(launched=(step,)), PathState(wait=(step,), guarded=True))
    text = to_text(first)
    built: list[Any] = []
    old = from_text(text, built=built)
    second = (old[1], PathState(launched=old[1].wait, guarded=True))
    spliced = after_text(second, Written(text, built))
    assert spliced is not None and spliced.startswith(text[: text.rindex(b"],[")])
    table, _ = json.loads(spliced)
    assert len(table) < len(built) + len(encode(second)[0])  # the old rows named again
    back = from_text(spliced)
    assert back == second
    assert back[0].wait is back[1].launched  # one tuple, as in the value
    # A value decoded from the text is named by its row, with nothing to append.
    assert encode(old[1], after=built) == ([], [built.index(old[1])])
    # A text whose top is not a row is not appended to.
    assert after_text(second, Written(to_text("plain"), [])) is None
