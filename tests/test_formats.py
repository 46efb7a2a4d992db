"""SARIF, GitHub annotations and Markdown: what CI and reviewers read.

SARIF from every fixture must validate against the official 2.1.0 schema and
carry each finding's witness as a code flow; annotations must survive commas,
colons and newlines in messages; the Markdown comment must draw one witness
flowchart per finding; and a finding's SARIF fingerprint must not move when
lines are inserted above it.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import FIXTURES, SARIF_SCHEMA
from syncscan.rules import all_rules
from syncscan.rules.base import Finding, Location

from syncscan.findings import Diagnostic, WitnessStep
from syncscan.report import github, markdown, sarif
from syncscan.runner import RunResult, run

EXPECT = {
    shape.name: tomllib.loads((shape / "expect.toml").read_text())
    for shape in sorted(FIXTURES.iterdir())
    if (shape / "expect.toml").is_file()
}
CASES = [(shape, variant) for shape, table in EXPECT.items() for variant in table]
BUGGY = [(s, v) for s, v in CASES if "code" in EXPECT[s][v]]
COMPLETIONS = [(s, v) for s, v in CASES if "completion_lines" in EXPECT[s][v]]


def ids(cases: list[tuple[str, str]]) -> list[str]:
    return [f"{shape}/{variant}" for shape, variant in cases]


@cache
def analysed(shape: str, variant: str) -> RunResult:
    return run(FIXTURES / shape / variant)


def sarif_of(result: RunResult, findings: list[Finding] | None = None) -> dict[str, Any]:
    return json.loads(sarif.render(result, result.findings if findings is None else findings))


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    if not SARIF_SCHEMA.is_file():
        pytest.fail(f"official SARIF schema missing: {SARIF_SCHEMA}")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def assert_valid(validator: jsonschema.protocols.Validator, log: dict[str, Any]) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def artifact_locations(node: Any) -> list[dict[str, Any]]:
    """Every artifactLocation anywhere in a SARIF fragment."""
    if isinstance(node, list):
        return [found for item in node for found in artifact_locations(item)]
    if not isinstance(node, dict):
        return []
    found = [node["artifactLocation"]] if "artifactLocation" in node else []
    return found + [f for value in node.values() for f in artifact_locations(value)]


def hand_built(
    message: str = "pause() returned, device busy",
    severity: str = "error",
    witness: tuple[WitnessStep, ...] = (),
) -> Finding:
    return Finding(
        code="SYNC002",
        name="completion-without-barrier",
        severity=severity,
        confidence="high",
        message=message,
        location=Location("engine/core.py", 36, 1, "engine.core.EngineCore.pause"),
        step_root="engine.core.EngineCore.pause",
        mode=(("self.encoder_only", True),),
        mode_label="encoder-only",
        witness=witness
        or (
            WitnessStep("engine/core.py", 30, "engine.core.EngineCore.pause", "entry"),
            WitnessStep("engine/core.py", 36, "engine.core.EngineCore.pause", "returns None"),
        ),
        remedy="synchronize first",
        related=(Location("engine/core.py", 36, 1, "engine.core.EngineCore.pause", "returns"),),
        fingerprint="0123456789abcdef0123",
    )


# ------------------------------------------------------------------ SARIF
@pytest.mark.parametrize(("shape", "variant"), CASES, ids=ids(CASES))
def test_sarif_of_every_fixture_validates_against_the_official_schema(
    validator: jsonschema.protocols.Validator, shape: str, variant: str
) -> None:
    result = analysed(shape, variant)
    log = sarif_of(result)
    assert_valid(validator, log)
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    assert len(log["runs"][0]["results"]) == len(result.findings)


@pytest.mark.parametrize(("shape", "variant"), BUGGY, ids=ids(BUGGY))
def test_each_finding_is_one_result_whose_code_flow_is_its_witness(
    shape: str, variant: str
) -> None:
    result = analysed(shape, variant)
    assert result.findings
    run_data = sarif_of(result)["runs"][0]
    rules = run_data["tool"]["driver"]["rules"]
    for finding, data in zip(result.findings, run_data["results"], strict=True):
        assert data["ruleId"] == finding.code
        assert rules[data["ruleIndex"]]["id"] == finding.code
        assert data["level"] == finding.severity
        assert data["message"]["text"] == finding.message
        (location,) = data["locations"]
        region = location["physicalLocation"]["region"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == finding.location.path
        assert (region["startLine"], region["startColumn"]) == (
            finding.location.line,
            finding.location.column,
        )
        (flow,) = data["codeFlows"]
        (thread,) = flow["threadFlows"]
        steps = [
            (
                step["location"]["physicalLocation"]["artifactLocation"]["uri"],
                step["location"]["physicalLocation"]["region"]["startLine"],
                step["location"]["message"]["text"],
            )
            for step in thread["locations"]
        ]
        assert steps
        assert steps == [(w.path, w.line, w.note) for w in finding.witness if w.path]
        orders = [step["executionOrder"] for step in thread["locations"]]
        assert orders == sorted(set(orders))
        assert data["partialFingerprints"] == {"syncscan/v1": finding.fingerprint}
        assert data["properties"] == {
            "stepRoot": finding.step_root,
            "mode": dict(finding.mode),
            "modeLabel": finding.mode_label,
            "confidence": finding.confidence,
        }


@pytest.mark.parametrize(("shape", "variant"), BUGGY, ids=ids(BUGGY))
def test_every_location_is_relative_to_srcroot(shape: str, variant: str) -> None:
    result = analysed(shape, variant)
    run_data = sarif_of(result)["runs"][0]
    root_uri = run_data["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root_uri == result.project.root.as_uri() + "/"
    locations = artifact_locations(run_data["results"])
    assert locations
    for artifact in locations:
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert not artifact["uri"].startswith(("/", "file:"))
        assert (result.project.root / artifact["uri"]).is_file()


@pytest.mark.parametrize(("shape", "variant"), COMPLETIONS, ids=ids(COMPLETIONS))
def test_sync002_completion_sites_are_related_locations(shape: str, variant: str) -> None:
    expect = EXPECT[shape][variant]
    result = analysed(shape, variant)
    run_data = sarif_of(result)["runs"][0]
    (data,) = [r for r in run_data["results"] if r["ruleId"] == "SYNC002"]
    related = data["relatedLocations"]
    sites = sorted(
        [
            r["physicalLocation"]["artifactLocation"]["uri"],
            r["physicalLocation"]["region"]["startLine"],
        ]
        for r in related
    )
    assert sites == sorted(expect["completion_lines"])
    numbers = [r["id"] for r in related]
    assert all(isinstance(n, int) for n in numbers)
    assert len(set(numbers)) == len(numbers)
    assert all(r["message"]["text"].startswith("completion: ") for r in related)


def test_driver_describes_every_rule() -> None:
    driver = sarif_of(analysed(*CASES[0]))["runs"][0]["tool"]["driver"]
    assert driver["name"] == "syncscan"
    assert [d["id"] for d in driver["rules"]] == [r.code for r in all_rules()]
    for descriptor, rule in zip(driver["rules"], all_rules(), strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        full = descriptor["fullDescription"]["text"]
        assert full and not full.startswith("#") and "\n" not in full
        assert descriptor["help"]["markdown"].endswith(f"\n\nReference remedy: {rule.remedy}")
        assert descriptor["help"]["text"] == descriptor["help"]["markdown"]
        assert "## Why is this bad?" in descriptor["help"]["markdown"]
        assert descriptor["defaultConfiguration"]["level"] == rule.severity


def test_sarif_is_deterministic() -> None:
    shape, variant = BUGGY[0]
    first = sarif.render(analysed(shape, variant), analysed(shape, variant).findings)
    again = run(FIXTURES / shape / variant)
    assert sarif.render(again, again.findings) == first


def test_skipped_files_and_notes_are_tool_notifications(
    validator: jsonschema.protocols.Validator,
) -> None:
    result = replace(
        analysed(*CASES[0]),
        diagnostics=[Diagnostic("engine/broken.py", "syntax error at 3:1")],
        notes=["incomplete: Runner.execute_model: mode cap reached"],
    )
    log = sarif_of(result, [])
    assert_valid(validator, log)
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    skipped, note = invocation["toolExecutionNotifications"]
    assert skipped["level"] == note["level"] == "warning"
    assert skipped["message"]["text"] == "skipped: syntax error at 3:1"
    (where,) = skipped["locations"]
    assert where["physicalLocation"]["artifactLocation"] == {
        "uri": "engine/broken.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert note["message"]["text"] == "incomplete: Runner.execute_model: mode cap reached"
    assert "locations" not in note


def test_witness_steps_without_a_file_are_left_out_of_the_code_flow(
    validator: jsonschema.protocols.Validator,
) -> None:
    witness = (
        WitnessStep("", 0, "<engine>", "the engine calls pause"),
        WitnessStep("engine/core.py", 36, "engine.core.EngineCore.pause", "returns None"),
    )
    log = sarif_of(analysed(*CASES[0]), [hand_built(witness=witness)])
    assert_valid(validator, log)
    (data,) = log["runs"][0]["results"]
    (step,) = data["codeFlows"][0]["threadFlows"][0]["locations"]
    assert step["location"]["message"]["text"] == "returns None"


def test_fingerprints_survive_inserted_lines(tmp_path: Path) -> None:
    source = FIXTURES / "slot_pool_mode_without_wait" / "buggy"
    copy = tmp_path / "buggy"
    shutil.copytree(source, copy)
    padded = {"engine/runner.py", "engine/pool.py"}
    for rel in padded:
        target = copy / rel
        target.write_text("# pad\n" * 10 + target.read_text(encoding="utf-8"), encoding="utf-8")
    before = sarif_of(run(source))["runs"][0]["results"]
    after = sarif_of(run(copy))["runs"][0]["results"]
    assert before and len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert new["partialFingerprints"] == old["partialFingerprints"]
        old_region = old["locations"][0]["physicalLocation"]["region"]
        new_region = new["locations"][0]["physicalLocation"]["region"]
        assert new_region["startLine"] == old_region["startLine"] + 10
        old_steps = old["codeFlows"][0]["threadFlows"][0]["locations"]
        new_steps = new["codeFlows"][0]["threadFlows"][0]["locations"]
        for old_step, new_step in zip(old_steps, new_steps, strict=True):
            old_where = old_step["location"]["physicalLocation"]
            new_where = new_step["location"]["physicalLocation"]
            shift = 10 if old_where["artifactLocation"]["uri"] in padded else 0
            assert new_where["region"]["startLine"] == old_where["region"]["startLine"] + shift


# ------------------------------------------------------------------ GitHub
_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=[^,:]+,line=\d+,col=\d+,title=SYNC\d{3} [a-z-]+"
    r"::[^\r\n]+ \(witness: [^\r\n]+\)$"
)


@pytest.mark.parametrize(("shape", "variant"), BUGGY, ids=ids(BUGGY))
def test_github_writes_one_annotation_per_finding(shape: str, variant: str) -> None:
    result = analysed(shape, variant)
    lines = github.render(result, result.findings).splitlines()
    assert len(lines) == len(result.findings)
    for line, finding in zip(lines, result.findings, strict=True):
        assert _ANNOTATION.match(line), line
        loc = finding.location
        command = {"error": "error", "warning": "warning", "note": "notice"}[finding.severity]
        assert line.startswith(f"::{command} file={loc.path},line={loc.line},col={loc.column},")
        witness = " -> ".join(f"{w.path}:{w.line}" for w in finding.witness)
        assert line.endswith(f" (witness: {witness})")


def test_github_escapes_data_and_properties() -> None:
    finding = replace(
        hand_built(message="100% busy, see: a\nb\r\nc", severity="note"),
        code="SYNC9,9",
        name="a:b",
        location=Location("dir,x/a:b.py", 7, 3, "f"),
        witness=(WitnessStep("p.py", 1, "f", "n"), WitnessStep("q.py", 2, "g", "m")),
    )
    text = github.render(analysed(*CASES[0]), [finding])
    assert text == (
        "::notice file=dir%2Cx/a%3Ab.py,line=7,col=3,title=SYNC9%2C9 a%3Ab"
        "::100%25 busy, see: a%0Ab%0D%0Ac (witness: p.py:1 -> q.py:2)\n"
    )


def test_github_levels_and_skipped_files() -> None:
    result = replace(
        analysed(*CASES[0]), diagnostics=[Diagnostic("pkg/bad,1.py", "cannot parse: line 3")]
    )
    lines = github.render(result, [hand_built(severity="warning")]).splitlines()
    assert lines[0].startswith("::warning file=engine/core.py,line=36,col=1,title=SYNC002 ")
    assert lines[1] == (
        "::warning file=pkg/bad%2C1.py,line=1,title=syncscan%3A skipped"
        "::skipped: cannot parse: line 3"
    )


def test_github_prefixes_paths_for_a_subdirectory_root() -> None:
    text = github.render(analysed(*CASES[0]), [hand_built()], path_prefix="services/engine/")
    assert text.startswith("::error file=services/engine/engine/core.py,line=36,")


# ------------------------------------------------------------------ Markdown
def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)\n```", text, flags=re.DOTALL)


@pytest.mark.parametrize(("shape", "variant"), BUGGY, ids=ids(BUGGY))
def test_markdown_has_a_table_row_and_a_flowchart_per_finding(shape: str, variant: str) -> None:
    result = analysed(shape, variant)
    text = markdown.render(result, result.findings)
    assert text.startswith("## ")
    rows = [line for line in text.splitlines() if line.startswith("| SYNC")]
    assert len(rows) == len(result.findings)
    blocks = mermaid_blocks(text)
    assert len(blocks) == len(result.findings)
    for block, finding in zip(blocks, result.findings, strict=True):
        lines = block.splitlines()
        assert lines[0] == "flowchart TD"
        nodes = [line for line in lines if re.match(r'^  w\d+\["[^"]*"\]$', line)]
        assert len(nodes) == len(finding.witness)
        edges = [line for line in lines if "-->" in line]
        assert edges == [f"  w{n} --> w{n + 1}" for n in range(len(finding.witness) - 1)]
        assert finding.remedy[:40] in text.replace("\\", "")


def test_markdown_escapes_labels_and_table_cells() -> None:
    witness = (
        WitnessStep("engine/core.py", 62, "Core.pause.<locals>.on_idle", 'sets "done" & #1'),
        WitnessStep("engine/core.py", 65, "Core.pause", "returns `future`"),
    )
    finding = replace(hand_built(witness=witness), step_root="a|b", mode_label="x|y")
    text = markdown.render(analysed(*CASES[0]), [finding])
    (block,) = mermaid_blocks(text)
    first = block.splitlines()[1]
    assert first == (
        '  w0["engine/core.py:62<br/>Core.pause.#lt;locals#gt;.on_idle'
        '<br/>sets #quot;done#quot; #38; #35;1"]'
    )
    assert "`" not in block
    (row,) = [line for line in text.splitlines() if line.startswith("| SYNC")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 6  # five cells


def test_markdown_is_deterministic_and_plain_when_clean() -> None:
    clean = [(s, v) for s, v in CASES if EXPECT[s][v].get("findings") == 0][0]
    result = analysed(*clean)
    text = markdown.render(result, result.findings)
    assert "No findings" in text
    assert "```mermaid" not in text and "| code |" not in text
    shape, variant = BUGGY[0]
    buggy = analysed(shape, variant)
    again = run(FIXTURES / shape / variant)
    assert markdown.render(buggy, buggy.findings) == markdown.render(again, again.findings)
