"""The audit report: every step root x mode, what it writes, how it is bounded."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncscan.flow.step import StepPath
from syncscan.runner import RunResult

_VERDICT_STYLE = {
    "unbounded": "bold red",
    "deferred": "green",
    "waits inline": "green",
    "semaphore": "green",
    "bounded by peer": "cyan",
    "bounded by the mode's other steps": "cyan",
    "no device reader": "dim",
    "no pinned writes": "dim",
}


def mode_text(path: StepPath, result: RunResult) -> str:
    labelled = [
        label
        for k, v in path.state.assumptions
        if (label := result.packs.label_for(k, v)) is not None
    ]
    return ", ".join(labelled) or "default"


def rows(path_list: list[StepPath], result: RunResult) -> list[tuple[str, str, str, str, str, int]]:
    """Paths grouped by (mode label, verdict): the audit does not list every branch."""
    grouped: dict[tuple[str, str], list[StepPath]] = {}
    for path in path_list:
        grouped.setdefault((mode_text(path, result), path.verdict), []).append(path)
    out = []
    for (mode, verdict), paths in sorted(grouped.items()):
        first = paths[0]
        write = first.state.write[-1].note if first.state.write else "-"
        wait = first.state.wait[-1].note if first.state.wait else "-"
        out.append((mode, write, wait, verdict, first.reason, len(paths)))
    return out


def render(console: Console, result: RunResult) -> None:
    for analysis in result.analysis.step_results:
        table = Table(title=f"step root {analysis.root.name}", show_lines=True, expand=True)
        for column in ("mode", "pinned / slot writes", "host wait", "verdict", "reason", "paths"):
            table.add_column(column, overflow="fold")
        if analysis.incomplete:
            table.add_row(
                "-", "-", "-", Text("incomplete", style="bold yellow"), analysis.incomplete, "0"
            )
        for mode, write, wait, verdict, reason, count in rows(analysis.paths, result):
            table.add_row(
                mode,
                write,
                wait,
                Text(verdict, style=_VERDICT_STYLE.get(verdict, "")),
                reason,
                str(count),
            )
        console.print(table)
    stats = Table(title="analysis statistics")
    stats.add_column("measure")
    stats.add_column("value", justify="right")
    for key, value in result.stats.items():
        stats.add_row(key, str(value))
    stats.add_row("skipped files (diagnostics)", str(len(result.diagnostics)))
    console.print(stats)
    for diagnostic in result.diagnostics:
        console.print(Text(f"skipped {diagnostic.path}: {diagnostic.message}", style="yellow"))
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"))
