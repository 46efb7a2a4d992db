"""The console report: each finding with its code frame, mode and witness tree."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text
from rich.tree import Tree

from syncscan.report.result import RunResult, severity_counts
from syncscan.rules.base import Finding, predicates_text

_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "bold cyan"}


def code_frame(root: Path, path: str, line: int, context: int = 2) -> Syntax | Text:
    try:
        source = (root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return Text(f"{path}:{line} (source not readable)", style="dim")
    return Syntax(
        source,
        "python",
        line_numbers=True,
        line_range=(max(1, line - context), line + context),
        highlight_lines={line},
        theme="ansi_dark",
        word_wrap=True,
    )


def witness_tree(finding: Finding) -> Tree:
    """The witness, one numbered step per line, in the order it happens."""
    tree = Tree(Text("witness path", style="bold"))
    for number, step in enumerate(finding.witness, start=1):
        label = Text()
        label.append(f"{number}. {step.path}:{step.line}", style="cyan")
        label.append(f"  {step.function.rsplit('.', 1)[-1]}()", style="magenta")
        label.append(f"  {step.note}")
        tree.add(label)
    return tree


def render_finding(console: Console, root: Path, finding: Finding) -> None:
    loc = finding.location
    head = Text()
    head.append(f"{finding.code} ", style=_STYLE.get(finding.severity, "bold"))
    head.append(f"{finding.name} ", style="bold")
    head.append(f"{loc.path}:{loc.line}:{loc.column}", style="cyan")
    head.append(f"  [{finding.severity}, {finding.confidence} confidence]", style="dim")
    mode = predicates_text(finding.mode) or "all modes"
    parts = [
        Text(finding.message),
        code_frame(root, loc.path, loc.line),
        Text.assemble(("mode: ", "bold"), f"{finding.mode_label}  ({mode})"),
        Text.assemble(("step root: ", "bold"), finding.step_root),
        witness_tree(finding),
    ]
    for related in finding.related:
        parts.append(Text(f"also: {related.path}:{related.line}  {related.note}", style="dim"))
    parts.append(Text.assemble(("remedy: ", "bold green"), finding.remedy))
    console.print(Panel(Group(*parts), title=head, title_align="left", expand=True))


def render_skipped_and_notes(console: Console, result: RunResult) -> None:
    """What the run skipped and noted: a result is never silently partial."""
    for diagnostic in result.diagnostics:
        console.print(Text(f"skipped {diagnostic.path}: {diagnostic.message}", style="yellow"))
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"))


def render(console: Console, result: RunResult, findings: list[Finding]) -> None:
    for finding in findings:
        render_finding(console, result.project.root, finding)
    render_skipped_and_notes(console, result)
    summary = severity_counts(findings) or "no findings"
    hidden = [
        f"{len(items)} {why}"
        for items, why in ((result.suppressed, "suppressed"), (result.baselined, "in baseline"))
        if items
    ]
    if hidden:
        summary += f" ({', '.join(hidden)})"
    stats = result.stats
    work = f"{stats['summarised']} of {stats['files']} files summarised ({stats['parsed']} parsed)"
    if stats.get("findings_reused"):
        work = "no input changed since the last run: findings reused"
    console.print(
        Text(
            f"{summary} · {stats['step_roots']} step roots · {work} · {stats['seconds']}s",
            style="bold",
        )
    )
