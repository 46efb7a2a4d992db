"""The console report: each finding with its code frame, mode and witness tree."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text
from rich.tree import Tree

from syncscan.findings import Finding, predicates_text
from syncscan.report.result import (
    RunResult,
    counted,
    diagnostic_label,
    diagnostic_level,
    diagnostic_where,
    severity_counts,
)
from syncscan.rules import ROOT_KINDS

if TYPE_CHECKING:
    from rich.syntax import Syntax

_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "bold cyan"}


def code_frame(root: Path, path: str, line: int, context: int = 2) -> Syntax | Text:
    try:
        source = (root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return Text(f"{path}:{line} (source not readable)", style="dim")
    from rich.syntax import Syntax  # panels only: on a terminal (pygments is slow to load)

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


def root_kind(finding: Finding) -> str:
    """What the finding's root is: a step root, or (SYNC002) a quiescence point."""
    return ROOT_KINDS.get(finding.code, "step root")


def mode_line(finding: Finding) -> str:
    """`encoder-only (self.encoder_only)`, or `all modes` when nothing picks a mode."""
    predicates = predicates_text(finding.mode)
    label = finding.mode_label
    if label and predicates:
        return f"{label} ({predicates})"
    return label or predicates or "all modes"


def where(finding: Finding) -> str:
    loc = finding.location
    return f"{loc.path}:{loc.line}:{loc.column}"


def render_finding(console: Console, root: Path, finding: Finding) -> None:
    """A finding as a panel. The title holds only the code and name, so a narrow
    terminal never cuts the location: that is the first line inside, and wraps."""
    head = Text()
    head.append(f"{finding.code} ", style=_STYLE.get(finding.severity, "bold"))
    head.append(finding.name, style="bold")
    loc = finding.location
    location = Text()
    location.append(where(finding), style="cyan")
    location.append(f"  [{finding.severity}, {finding.confidence} confidence]", style="dim")
    parts = [
        location,
        Text(finding.message),
        code_frame(root, loc.path, loc.line),
        Text.assemble(("mode: ", "bold"), mode_line(finding)),
        Text.assemble((f"{root_kind(finding)}: ", "bold"), finding.step_root),
        witness_tree(finding),
    ]
    for related in finding.related:
        parts.append(Text(f"also: {related.path}:{related.line}  {related.note}", style="dim"))
    parts.append(Text.assemble(("remedy: ", "bold green"), finding.remedy))
    console.print(Panel(Group(*parts), title=head, title_align="left", expand=True))


def plain_frame(root: Path, path: str, line: int, context: int = 2) -> list[str]:
    """The code around `line`, numbered, the flagged line marked: text for logs."""
    try:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return [f"    {path}:{line} (source not readable)"]
    first, last = max(1, line - context), min(len(lines), line + context)
    width = len(str(last))
    return [
        f"  {'>' if n == line else ' '} {n:>{width}} | {lines[n - 1]}"
        for n in range(first, last + 1)
    ]


def render_finding_plain(console: Console, root: Path, finding: Finding) -> None:
    """The same content as the panel, unboxed and unwrapped: for logs and files,
    where a box would force every sentence to break at its width."""
    lines = [
        f"{where(finding)}: {finding.code} {finding.name} "
        f"[{finding.severity}, {finding.confidence} confidence]",
        f"  {finding.message}",
        *plain_frame(root, finding.location.path, finding.location.line),
        f"  mode: {mode_line(finding)}",
        f"  {root_kind(finding)}: {finding.step_root}",
        "  witness path:",
    ]
    for number, step in enumerate(finding.witness, start=1):
        function = step.function.rsplit(".", 1)[-1]
        lines.append(f"    {number}. {step.path}:{step.line}  {function}()  {step.note}")
    lines += [f"  also: {r.path}:{r.line}  {r.note}" for r in finding.related]
    lines += [f"  remedy: {finding.remedy}", ""]
    console.print(Text("\n".join(lines)), soft_wrap=True)


def render_skipped_and_notes(console: Console, result: RunResult, quiet: bool = False) -> None:
    """What the run skipped and noted: a result is never silently partial.
    Quiet keeps only what fails the run."""
    for diagnostic in result.diagnostics:
        level = diagnostic_level(diagnostic)
        if quiet and level != "error":
            continue
        place = diagnostic_where(diagnostic)
        label = diagnostic_label(diagnostic)
        head = f"{label} {place}: " if place else f"{label}: "
        style = "red" if level == "error" else "yellow"
        console.print(Text(head + diagnostic.message, style=style), soft_wrap=True)
    if quiet:
        return
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"), soft_wrap=True)


def summary_line(result: RunResult, findings: list[Finding]) -> str:
    """`1 error · 1 step root · 12 of 40 files summarised (3 parsed) · 0.4s`."""
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
    roots = counted(int(stats["step_roots"]), "step root")
    if stats.get("quiescence_points"):
        roots += f" · {counted(int(stats['quiescence_points']), 'quiescence point')}"
    return f"{summary} · {roots} · {work} · {stats['seconds']}s"


def render(
    console: Console, result: RunResult, findings: list[Finding], quiet: bool = False
) -> None:
    """Panels on a terminal; the same text unboxed in logs, pipes and files."""
    boxed = console.is_terminal
    for finding in findings:
        if boxed:
            render_finding(console, result.project.root, finding)
        else:
            render_finding_plain(console, result.project.root, finding)
    render_skipped_and_notes(console, result, quiet)
    if not quiet:
        console.print(Text(summary_line(result, findings), style="bold"), soft_wrap=True)
