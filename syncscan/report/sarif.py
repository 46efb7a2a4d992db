"""The SARIF 2.1.0 report: what code scanning (GitHub, IDE viewers) ingests.

Every finding carries its witness as a code flow, so a viewer can step through
the path from the step root to the unguarded return; SYNC002's completion sites
become related locations. Paths stay relative to `%SRCROOT%` and the
fingerprint is line-free, so a result keeps its identity when code above it
moves. The output holds no timestamps or timings: the same tree gives the same
bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from syncscan import __version__
from syncscan.findings import Diagnostic, Finding, Location, WitnessStep
from syncscan.report.result import RunResult, diagnostic_label, diagnostic_level
from syncscan.rules import all_rules

if TYPE_CHECKING:
    from syncscan.rules.base import Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "syncscan/v1"
_LEVEL = {"error": "error", "warning": "warning", "note": "note"}

Json = dict[str, Any]


# ------------------------------------------------------------------ rules
def first_paragraph(markdown: str) -> str:
    """The first paragraph of prose, skipping headings, joined into one line."""
    for block in markdown.split("\n\n"):
        lines = [line.strip() for line in block.splitlines()]
        prose = [line for line in lines if line and not line.startswith("#")]
        if prose:
            return " ".join(prose)
    return ""


def rule_descriptor(rule: type[Rule]) -> Json:
    documentation = rule.documentation()
    help_text = f"{documentation}\n\nReference remedy: {rule.remedy}"
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": first_paragraph(documentation) or rule.summary},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": level(rule.severity)},
    }


def level(severity: str) -> str:
    """SARIF level of a severity; an unknown severity counts as an error, as in the CLI."""
    return _LEVEL.get(severity, "error")


# ------------------------------------------------------------------ locations
def artifact_uri(path: str) -> str:
    return quote(path, safe="/")


def root_uri(directory: Path) -> str:
    uri = directory.resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"


def physical_location(path: str, line: int, column: int | None = None) -> Json:
    location: Json = {"artifactLocation": {"uri": artifact_uri(path), "uriBaseId": SRCROOT}}
    if line >= 1:
        region: Json = {"startLine": line}
        if column is not None and column >= 1:
            region["startColumn"] = column
        location["region"] = region
    return location


def logical_locations(function: str) -> list[Json]:
    return [{"fullyQualifiedName": function, "kind": "function"}] if function else []


def location_data(site: Location) -> Json:
    data: Json = {"physicalLocation": physical_location(site.path, site.line, site.column)}
    if logical := logical_locations(site.function):
        data["logicalLocations"] = logical
    return data


def related_location(number: int, site: Location) -> Json:
    data = {"id": number, **location_data(site)}
    if site.note:
        data["message"] = {"text": site.note}
    return data


# ------------------------------------------------------------------ code flows
def thread_flow_location(order: int, step: WitnessStep) -> Json:
    location: Json = {
        "physicalLocation": physical_location(step.path, step.line),
        "message": {"text": step.note or step.function},
    }
    if logical := logical_locations(step.function):
        location["logicalLocations"] = logical
    return {"location": location, "nestingLevel": 0, "executionOrder": order}


def code_flows(witness: tuple[WitnessStep, ...]) -> list[Json]:
    """The witness as one thread flow; steps with no file cannot be shown, so are left out."""
    steps = [step for step in witness if step.path]
    if not steps:
        return []
    locations = [thread_flow_location(n, step) for n, step in enumerate(steps, start=1)]
    return [{"threadFlows": [{"locations": locations}]}]


# ------------------------------------------------------------------ results
def result_data(finding: Finding, rule_index: dict[str, int]) -> Json:
    data: Json = {"ruleId": finding.code}
    if finding.code in rule_index:
        data["ruleIndex"] = rule_index[finding.code]
    data["level"] = level(finding.severity)
    data["message"] = {"text": finding.message}
    data["locations"] = [location_data(finding.location)]
    if flows := code_flows(finding.witness):
        data["codeFlows"] = flows
    if finding.related:
        data["relatedLocations"] = [
            related_location(n, site) for n, site in enumerate(finding.related, start=1)
        ]
    if finding.fingerprint:
        data["partialFingerprints"] = {FINGERPRINT_KEY: finding.fingerprint}
    data["properties"] = {
        "stepRoot": finding.step_root,
        "mode": {predicate: value for predicate, value in finding.mode},
        "modeLabel": finding.mode_label,
        "confidence": finding.confidence,
    }
    return data


def diagnostic_notification(diagnostic: Diagnostic) -> Json:
    text = f"{diagnostic_label(diagnostic)}: {diagnostic.message}"
    data: Json = {"level": diagnostic_level(diagnostic), "message": {"text": text}}
    if diagnostic.path:
        location = physical_location(diagnostic.path, diagnostic.line)
        data["locations"] = [{"physicalLocation": location}]
    data["properties"] = {"kind": diagnostic.kind}
    return data


def note_notification(note: str) -> Json:
    return {"level": "warning", "message": {"text": note}}


def invocation(result: RunResult) -> Json:
    notifications = [diagnostic_notification(d) for d in result.diagnostics]
    notifications += [note_notification(note) for note in result.notes]
    data: Json = {"executionSuccessful": True}
    if notifications:
        data["toolExecutionNotifications"] = notifications
    return data


def rebased(data: Any, prefix: str) -> Any:
    """`data` with `prefix/` put before every %SRCROOT%-relative artifact URI."""
    if isinstance(data, list):
        return [rebased(item, prefix) for item in data]
    if not isinstance(data, dict):
        return data
    out = {key: rebased(value, prefix) for key, value in data.items()}
    if out.get("uriBaseId") == SRCROOT and "uri" in out:
        out["uri"] = f"{artifact_uri(prefix)}/{out['uri']}"
    return out


def sarif_log(result: RunResult, findings: list[Finding], source_root: Path | None = None) -> Json:
    """The log; URIs are relative to `source_root` (default: the analysed root).

    Code scanning resolves URIs against the repository root, so a project in a
    subdirectory needs the repository as its source root.
    """
    rules = all_rules()
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    driver = {
        "name": "syncscan",
        "version": __version__,
        "rules": [rule_descriptor(rule) for rule in rules],
    }
    run = {
        "tool": {"driver": driver},
        "invocations": [invocation(result)],
        "originalUriBaseIds": {SRCROOT: {"uri": root_uri(source_root or result.project.root)}},
        "columnKind": "unicodeCodePoints",
        "results": [result_data(finding, rule_index) for finding in findings],
    }
    prefix = result.project.root.relative_to(source_root).as_posix() if source_root else "."
    if prefix != ".":
        run["invocations"] = rebased(run["invocations"], prefix)
        run["results"] = rebased(run["results"], prefix)
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def render(result: RunResult, findings: list[Finding], source_root: Path | None = None) -> str:
    return json.dumps(sarif_log(result, findings, source_root), indent=2) + "\n"
