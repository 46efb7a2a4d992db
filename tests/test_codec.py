"""Analysis states to plain data and back (flow/codec.py): every callee walk of
every fixture project comes back equal through JSON,
shared parts stay shared, and damaged data is refused, never half-built."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_walk_reads import PROJECTS, _recorded_walks

from syncscan.findings import WitnessStep
from syncscan.flow.codec import decode, encode
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
    ],
)
def test_damaged_data_is_refused(data: list) -> None:
    with pytest.raises(ValueError):
        decode(*data)


def test_an_object_of_another_class_is_not_stored() -> None:
    with pytest.raises(TypeError):
        encode((object(),))
