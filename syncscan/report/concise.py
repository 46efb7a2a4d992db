"""The concise report (one line per finding, like ruff's) and --statistics."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from syncscan.findings import Finding
from syncscan.report.result import (
    RunResult,
    counted,
    diagnostic_label,
    diagnostic_level,
    diagnostic_where,
)


def finding_line(finding: Finding) -> str:
    """`path:line:col: CODE message`."""
    loc = finding.location
    return f"{loc.path}:{loc.line}:{loc.column}: {finding.code} {finding.message}"


def render(
    console: Console, result: RunResult, findings: list[Finding], quiet: bool = False
) -> None:
    for finding in findings:
        console.print(Text(finding_line(finding)), soft_wrap=True)
    for diagnostic in result.diagnostics:
        level = diagnostic_level(diagnostic)
        if quiet and level != "error":
            continue
        place = diagnostic_where(diagnostic) or "syncscan"
        text = f"{place}: {level}: {diagnostic_label(diagnostic)}: {diagnostic.message}"
        console.print(Text(text), soft_wrap=True)
    if quiet:
        return
    for note in result.notes:
        console.print(Text(f"note: {note}"), soft_wrap=True)
    hidden = len(result.suppressed) + len(result.baselined)
    tail = f" ({hidden} hidden by suppressions or the baseline)" if hidden else ""
    found = (
        f"Found {counted(len(findings), 'finding')}{tail}." if findings else f"No findings{tail}."
    )
    console.print(Text(found), soft_wrap=True)


def render_statistics(console: Console, findings: list[Finding]) -> None:
    """Findings counted per rule, most frequent first (ruff's --statistics)."""
    counts = Counter((f.code, f.name) for f in findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    width = max((len(str(n)) for _, n in rows), default=1)
    for (code, name), number in rows:
        console.print(Text(f"{number:>{width}}  {code}  {name}"), soft_wrap=True)
    if not rows:
        console.print(Text("No findings."), soft_wrap=True)
