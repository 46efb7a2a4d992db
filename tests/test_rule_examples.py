"""Each rule's VALID and INVALID examples, run as the rule module states them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import analyse, codes, write_project
from syncscan.rules import all_rules

EXAMPLES = [
    (rule, kind, index, example)
    for rule in all_rules()
    for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, example in enumerate(examples)
]


def test_every_rule_has_examples_of_both_kinds() -> None:
    for rule in all_rules():
        assert rule.VALID and rule.INVALID, rule.code
        assert all(e.expect == 0 for e in rule.VALID)
        assert all(e.expect > 0 for e in rule.INVALID)


@pytest.mark.parametrize(
    ("rule", "kind", "index", "example"),
    EXAMPLES,
    ids=[f"{r.code}-{k}-{i}" for r, k, i, _ in EXAMPLES],
)
def test_rule_example(rule, kind: str, index: int, example, tmp_path: Path) -> None:
    project = write_project(tmp_path, example.files, example.pack)
    result = analyse(project)
    assert result.diagnostics == []
    assert len(codes(result, rule.code)) == example.expect, example.title


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_documentation_has_four_parts(rule) -> None:
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in doc, f"{rule.code} lacks {heading}"
    assert rule.remedy
