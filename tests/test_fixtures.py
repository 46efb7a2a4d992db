"""Every fixture pair: the buggy project is reported, the fixed/clean one is not."""

from __future__ import annotations

import tomllib

import pytest
from helpers import FIXTURES, analyse

CASES = sorted(
    (shape.name, variant)
    for shape in FIXTURES.iterdir()
    if (shape / "expect.toml").is_file()
    for variant in tomllib.loads((shape / "expect.toml").read_text())
)


def test_every_fixture_has_a_project() -> None:
    assert len(CASES) >= 9
    for shape, variant in CASES:
        assert (FIXTURES / shape / variant).is_dir(), f"{shape}/{variant} missing"


@pytest.mark.parametrize(("shape", "variant"), CASES, ids=[f"{s}/{v}" for s, v in CASES])
def test_fixture(shape: str, variant: str) -> None:
    expect = tomllib.loads((FIXTURES / shape / "expect.toml").read_text())[variant]
    result = analyse(FIXTURES / shape / variant)
    assert result.diagnostics == []
    if "findings" in expect:
        assert len(result.findings) == expect["findings"], [f.message for f in result.findings]
    if "code" in expect:
        matching = [
            f
            for f in result.findings
            if f.code == expect["code"] and f.location.function == expect["function"]
        ]
        assert len(matching) == 1, [f.message for f in result.findings]
        finding = matching[0]
        for predicate, value in expect.get("mode", {}).items():
            assert dict(finding.mode).get(predicate) is value
        functions = [step.function for step in finding.witness]
        if "witness_function" in expect:
            assert expect["witness_function"] in functions
        if "shape" in expect:
            # SYNC004 names why the two streams are unordered: its remedy is per shape.
            from syncscan.rules.sync004_stream_order_hazard import _REMEDIES

            assert finding.remedy == _REMEDIES[expect["shape"]], finding.message
        if "completion_lines" in expect:
            sites = sorted([r.path, r.line] for r in finding.related)
            assert sites == sorted(expect["completion_lines"])
    if "audit_verdict" in expect:
        verdicts = {p.verdict for r in result.analysis.step_results for p in r.paths}
        assert expect["audit_verdict"] in verdicts


@pytest.mark.parametrize(("variant", "racing"), [("buggy", True), ("fixed", False)])
def test_audit_lists_each_shared_buffer_with_the_edge_that_orders_it(
    variant: str, racing: bool
) -> None:
    """The audit's buffer table: the racing host write and the device access it races,
    with "no edge"; once fixed, the buffer is listed with what orders it instead."""
    from syncscan.report.audit_model import build

    audit = build(analyse(FIXTURES / "write_after_record" / variant))
    orders = [order for path in audit.paths for order in path.buffers]
    assert any(order.name.startswith("Runner.input_ids") for order in orders), orders
    unordered = [order for order in orders if order.ordered_by.startswith("no edge")]
    if racing:
        assert unordered, orders
        writer, device = unordered[0].host, unordered[0].device
        assert writer.path == "engine/runner.py" and device.path == "engine/runner.py"
        assert writer.line > device.line
    else:
        assert not unordered, orders
