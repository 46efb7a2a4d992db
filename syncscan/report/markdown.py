"""The Markdown report: a pull-request comment a reviewer can act on without the CLI.

A summary table first (one row per finding), then one section per finding with
the message, the reference remedy, the related sites and the witness path drawn
as a Mermaid flowchart, which GitHub renders inline. Everything taken from the
analysed code is escaped, so a `|`, a `<locals>` or a quote in a name cannot
break the table, turn into HTML, or stop Mermaid from parsing. Node ids are
positional, so the same findings give the same text.
"""

from __future__ import annotations

import re

from syncscan.findings import Diagnostic, Finding, Location, WitnessStep, predicates_text
from syncscan.report.result import (
    RunResult,
    counted,
    diagnostic_label,
    diagnostic_where,
    severity_counts,
)

HEADING = "## syncscan report"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")
# Mermaid entity codes; `#` first, since every replacement starts with one.
_MERMAID_ESCAPES = (
    ("#", "#35;"),
    ('"', "#quot;"),
    ("<", "#lt;"),
    (">", "#gt;"),
    ("&", "#38;"),
    ("`", "#96;"),
)


# ------------------------------------------------------------------ escaping
def text(value: str) -> str:
    """Prose from the analysis, with Markdown and HTML syntax made literal."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(value.split()))


def code(value: str) -> str:
    """An inline code span that survives backticks in the value."""
    value = " ".join(value.split())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def cell(value: str) -> str:
    """A table cell: a literal `|` would end the cell, even inside a code span."""
    return value.replace("|", "\\|")


def mermaid_label(value: str) -> str:
    value = " ".join(value.split())
    for raw, entity in _MERMAID_ESCAPES:
        value = value.replace(raw, entity)
    return value


# ------------------------------------------------------------------ pieces
def site(path: str, line: int) -> str:
    return f"{path}:{line}"


def mode_text(finding: Finding) -> str:
    predicates = predicates_text(finding.mode)
    label = finding.mode_label or "all modes"
    return f"{text(label)} ({code(predicates)})" if predicates else text(label)


def title(finding: Finding) -> str:
    return f"{finding.code} {finding.name}"


def summary_row(finding: Finding) -> str:
    loc = finding.location
    cells = [
        text(title(finding)),
        text(finding.severity),
        code(site(loc.path, loc.line)),
        code(finding.step_root),
        mode_text(finding),
    ]
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def summary_table(findings: list[Finding]) -> list[str]:
    return [
        "| code | severity | location | step root / quiescence point | mode |",
        "|---|---|---|---|---|",
        *(summary_row(finding) for finding in findings),
    ]


def witness_node(step: WitnessStep) -> str:
    parts = [site(step.path, step.line)] if step.path else []
    parts += [step.function, step.note]
    return "<br/>".join(mermaid_label(part) for part in parts if part)


def witness_flowchart(witness: tuple[WitnessStep, ...]) -> list[str]:
    nodes = [f'  w{n}["{witness_node(step)}"]' for n, step in enumerate(witness)]
    edges = [f"  w{n} --> w{n + 1}" for n in range(len(witness) - 1)]
    return ["```mermaid", "flowchart TD", *nodes, *edges, "```"]


def related_line(related: Location) -> str:
    line = f"- {code(site(related.path, related.line))} in {code(related.function)}"
    return f"{line}: {text(related.note)}" if related.note else line


def finding_section(number: int, finding: Finding) -> list[str]:
    loc = finding.location
    lines = [
        f"### {number}. {text(title(finding))} at {code(site(loc.path, loc.line))}",
        "",
        text(finding.message),
        "",
        f"- **Severity:** {text(finding.severity)}, {text(finding.confidence)} confidence",
        f"- **Step root / quiescence point:** {code(finding.step_root)}",
        f"- **Mode:** {mode_text(finding)}",
        "",
        f"**Remedy:** {text(finding.remedy)}",
    ]
    if finding.related:
        lines += ["", "**Related sites:**", "", *(related_line(r) for r in finding.related)]
    if finding.witness:
        lines += ["", "**Witness path:**", "", *witness_flowchart(finding.witness)]
    return lines


def diagnostic_line(diagnostic: Diagnostic) -> str:
    where = diagnostic_where(diagnostic)
    where = f"{code(where)}: " if where else ""
    return f"- **{diagnostic_label(diagnostic)}** {where}{text(diagnostic.message)}"


def run_notes(result: RunResult) -> list[str]:
    lines: list[str] = []
    if result.diagnostics:
        lines += ["", "### Diagnostics", "", *map(diagnostic_line, result.diagnostics)]
    if result.notes:
        lines += ["", "### Notes", "", *(f"- {text(note)}" for note in result.notes)]
    return lines


def headline(result: RunResult, findings: list[Finding]) -> str:
    files = int(result.stats.get("files", 0))
    roots = int(result.stats.get("step_roots", 0))
    scope = f"{counted(files, 'file')}, {counted(roots, 'step root')}"
    if not findings:
        return f"No findings: syncscan reports no synchronization problems ({scope})."
    by_severity = severity_counts(findings)
    return f"**{counted(len(findings), 'finding')}** ({by_severity}; {scope})."


def render(result: RunResult, findings: list[Finding]) -> str:
    lines = [HEADING, "", headline(result, findings)]
    if findings:
        lines += ["", *summary_table(findings)]
    for number, finding in enumerate(findings, start=1):
        lines += ["", *finding_section(number, finding)]
    lines += run_notes(result)
    return "\n".join(lines) + "\n"
