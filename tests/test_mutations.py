"""The mutation suite: its data stays applicable (CI), and the engine's targets (marker).

The cheap half runs everywhere: every entry's `old` text still occurs exactly once
in its release and the edited file still parses, so a suite entry can never
silently measure nothing. The measurement itself re-checks a release per entry and
runs only under `pytest -m mutation` (or `python bench/mutations.py`).
"""

from __future__ import annotations

import ast

import pytest
from corpus import Mutation, edit_text, load_mutations
from engine_trees import fetch_release
from measure import Outcome, run_mutations, totals

MUTATIONS = load_mutations()
RECALL_TARGET = 0.9


def test_suite_covers_four_families_at_distinct_places() -> None:
    bugs = [m for m in MUTATIONS if m.kind == "bug"]
    assert len(bugs) >= 15 and len(MUTATIONS) - len(bugs) >= 10
    assert {m.family for m in bugs} == {1, 2, 3, 4}
    places = {(m.release, m.file, m.edits) for m in bugs}
    assert len(places) == len(bugs), "two bug entries make the same edit"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.id for m in MUTATIONS])
def test_edit_applies_exactly_once_and_parses(mutation: Mutation) -> None:
    source = (fetch_release("vllm", mutation.release) / mutation.file).read_text(encoding="utf-8")
    edited = edit_text(mutation, source)  # raises unless each `old` occurs exactly once
    assert edited != source
    ast.parse(edited, filename=mutation.file)


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_mutations(MUTATIONS)


@pytest.mark.mutation
def test_bugs_are_reported_at_the_right_function(outcomes: list[Outcome]) -> None:
    t = totals(outcomes)
    failed = [o for o in outcomes if o.mutation.kind == "bug" and o.verdict != "reported"]
    missed = [f"{o.mutation.id}: {o.verdict} ({o.got})" for o in failed]
    assert t.recall >= RECALL_TARGET, "\n".join(missed)


@pytest.mark.mutation
def test_behaviour_preserving_edits_change_nothing(outcomes: list[Outcome]) -> None:
    changed = [f"{o.mutation.id}: {o.got}" for o in outcomes if o.verdict == "changed"]
    assert changed == []


@pytest.mark.mutation
def test_a_wait_a_benign_edit_adds_to_the_async_step_is_a_hidden_host_sync(
    outcomes: list[Outcome],
) -> None:
    """The families' benign edits leave SYNC001-SYNC004 alone; the one that adds
    a full-device wait to the encoder step stalls overlapping steps, and SYNC005
    reports it there, and nothing else changes."""
    added = next(o for o in outcomes if o.mutation.id == "f1-benign-extra-device-sync")
    assert not added.lost
    assert [(r.code, r.function) for r in added.new] == [
        ("SYNC005", "vllm.v1.worker.mm_encoder_model_runner.MMEncoderModelRunner.execute_model")
    ]
