"""How the harness judges a mutation and reviews findings, on hand-made records.

These rules decide every figure bench/mutations.py and bench/sweep.py print, so
they are pinned here without running syncscan.
"""

from __future__ import annotations

import tomllib

import pytest
from corpus import CorpusError, Mutation, Record, Verdict, edit_text, review, toml_entry
from measure import compare, totals

RUNNER = "vllm.v1.worker.gpu_model_runner.GPUModelRunner.execute_model"


def mutation(kind: str) -> Mutation:
    bug = kind == "bug"
    return Mutation(
        id=f"a-{kind}",
        release="0.29.0",
        family=3,
        kind=kind,
        file="x.py",
        edits=(("a", "b"),),
        code="SYNC003" if bug else None,
        functions=(RUNNER,) if bug else (),
        why="test",
        source="test",
    )


def record(
    fingerprint: str,
    function: str = RUNNER,
    mode: str = "",
    step_root: str = "",
    via: str = "",
    **kw: str,
) -> Record:
    fields = {"release": "0.29.0", "code": "SYNC003", "severity": "error"} | kw
    return Record(
        function=function,
        mode_label=mode,
        path="x.py",
        line=1,
        fingerprint=fingerprint,
        step_root=step_root,
        witness_functions=(step_root, via) if via else (),
        **fields,
    )


BASE = [record("1")]


@pytest.mark.parametrize(
    ("mutated", "verdict"),
    [
        ([record("1"), record("2")], "reported"),  # same code/function/mode, another buffer
        ([record("1")], "missed"),
        ([record("1"), record("3", function="other")], "elsewhere"),
        ([record("1"), record("4", code="SYNC001")], "elsewhere"),
        ([record("1"), record("5", severity="note")], "elsewhere"),
        ([record("1"), record("6", function="a.write", step_root=RUNNER)], "reported"),
        ([record("1"), record("7", function="a.write", step_root="b.step")], "elsewhere"),
        # a write of the next step, made from the entry point the mutation broke
        (
            [record("1"), record("8", function="a.write", step_root="b.step", via=RUNNER)],
            "reported",
        ),
    ],
)
def test_a_bug_counts_only_a_new_finding_of_its_code_at_its_function(
    mutated: list[Record], verdict: str
) -> None:
    assert compare(mutation("bug"), BASE, mutated).verdict == verdict


@pytest.mark.parametrize(
    ("mutated", "verdict"),
    [
        ([record("1")], "silent"),
        ([record("9")], "silent"),  # the fingerprint moved with a renamed helper
        ([record("1", mode="m")], "changed"),
        ([], "changed"),
        ([record("1"), record("2", function="other")], "changed"),
    ],
)
def test_a_benign_edit_is_silent_while_identities_stay(mutated: list[Record], verdict: str) -> None:
    assert compare(mutation("benign"), BASE, mutated).verdict == verdict


def test_totals_count_recall_and_benign_changes() -> None:
    outcomes = [
        compare(mutation("bug"), BASE, [record("1"), record("2")]),
        compare(mutation("bug"), BASE, BASE),
        compare(mutation("benign"), BASE, []),
    ]
    t = totals(outcomes)
    assert (t.bugs, t.reported, t.benign, t.changed) == (2, 1, 1, 1)
    assert t.recall == 0.5


def verdict(verdict: str, mode: str = "", reported: bool = True) -> Verdict:
    return Verdict(
        releases=("0.29.0",),
        code="SYNC003",
        function=RUNNER,
        mode=mode,
        fingerprints=("f",),
        verdict=verdict,
        why="test",
        fixed_in=None,
        reported=reported,
    )


def test_review_matches_by_fingerprint_or_key_and_lists_the_rest() -> None:
    by_print = record("f", mode="renamed mode")
    by_key = record("g")
    stranger = record("h", function="other")
    note = record("i", function="other", severity="note")
    result = review([by_print, by_key, stranger, note], [verdict("bug")], ["0.29.0"])
    assert set(result.verdicts) == {by_print, by_key}
    assert result.unreviewed == (stranger,)  # notes are not reviewed
    assert result.error_bug_share == pytest.approx(2 / 3)
    pasted = tomllib.loads(toml_entry(stranger))["finding"][0]
    assert (pasted["code"], pasted["function"], pasted["fingerprint"]) == (
        "SYNC003",
        "other",
        ["h"],
    )


def test_review_reports_a_bug_entry_no_finding_matches() -> None:
    entry = verdict("bug", mode="*", reported=False)
    assert review([], [entry], ["0.29.0"]).lost == (("0.29.0", entry),)
    assert review([record("z", mode="any")], [entry], ["0.29.0"]).lost == ()
    assert review([], [entry], ["0.28.0"]).lost == ()  # not swept: nothing to say


@pytest.mark.parametrize("text", ["nothing to see", "a, a"])
def test_an_edit_whose_old_text_is_not_unique_fails_loudly(text: str) -> None:
    with pytest.raises(CorpusError, match="expected exactly once"):
        edit_text(mutation("bug"), text)
