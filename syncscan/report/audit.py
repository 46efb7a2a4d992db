"""The audit report: every step root x mode, what it writes, how it is bounded."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncscan.flow.quiescence import QuiescenceResult
from syncscan.flow.step import StepPath
from syncscan.report.console import render_skipped_and_notes
from syncscan.report.result import RunResult

_VERDICT_STYLE = {
    "unbounded": "bold red",
    "deferred": "green",
    "waits inline": "green",
    "semaphore": "green",
    "bounded by peer": "cyan",
    "write outside guard": "bold red",
    "not rewritten": "green",
    "no device reader": "dim",
    "no pinned writes": "dim",
    "output discarded": "dim",
}


def mode_text(path: StepPath, result: RunResult) -> str:
    return result.packs.labels_text(path.state.assumptions) or "default"


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


def buffer_rows(path_list: list[StepPath], result: RunResult) -> list[tuple[str, ...]]:
    """Per mode, each shared pinned buffer the step writes: where the host writes it,
    the device access still pending at the step's end, and the edge that orders the
    next write after it (or "no edge", with the access it races)."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for path in path_list:
        mode = mode_text(path, result)
        pending = {b: t for b, _, t in path.state.pending}
        race = path.race
        for buffer, trace, _ in path.state.exposed:
            name = (trace[-1].written or trace[-1].note).split(" pinned buffer ", 1)[-1]
            writer = f"{trace[-1].path}:{trace[-1].line}"
            if race is not None and race[0] == buffer:
                writer = f"{race[1][-1].path}:{race[1][-1].line}"
                access, edge = race[2], "no edge: " + path.reason
            elif buffer in pending:
                access, edge = pending[buffer], path.reason
            else:
                access, edge = None, "a host wait in the step covers every access"
            device = f"{access[-1].path}:{access[-1].line}" if access else "-"
            row = (mode, name, writer, device, edge)
            key = (mode, name)
            if key not in found or edge.startswith("no edge"):
                found[key] = row
    return [found[k] for k in sorted(found)]


def chain(trace) -> str:
    """A trace as `function:line -> ... -> what happens`, for one table cell."""
    if not trace:
        return "-"
    hops = [
        f"{step.function.rsplit('.', 1)[-1]}:{step.line}"
        + (f" ({step.note})" if step.note.startswith("dispatches") else "")
        for step in trace
        if step.path
    ]
    return " -> ".join([*hops, trace[-1].note])


def render_quiescence(console: Console, quiescence: QuiescenceResult) -> None:
    spec = quiescence.spec
    title = f"quiescence point {spec.function}"
    others = [f for f in quiescence.functions if f != spec.function]
    if others:
        title += " (also: " + ", ".join(f.rsplit(".", 2)[-2] for f in others) + ")"
    table = Table(title=title, show_lines=True, expand=True)
    for column in ("completion site", "completes by", "verdict", "evidence"):
        table.add_column(column, overflow="fold")
    if quiescence.missing:
        table.add_row("-", "-", Text("missing", style="yellow"), quiescence.missing)
    if quiescence.incomplete:
        table.add_row("-", "-", Text("incomplete", style="yellow"), quiescence.incomplete)
    for site in quiescence.sites:
        if site.lacking:
            verdict = Text("no device barrier", style="bold red")
            evidence = f"may still run: {chain(site.launch)}"
        else:
            verdict = Text("barrier", style="green")
            evidence = chain(site.barrier) if site.barrier else "no device work before it"
        table.add_row(f"{site.path}:{site.line}", site.kind, verdict, evidence)
    for barrier in quiescence.cpu_barriers:
        table.add_row(
            f"{barrier.path}:{barrier.line}", "-", Text("CPU barrier", style="yellow"), barrier.note
        )
    console.print(table)


UNRESOLVED_SHOWN = 40


# Vocabulary whose methods, on a receiver the resolver could not place, may be
# the wait, the pinned write or the launch the model is missing.
_SYNC_VOCABULARY = (
    "host_wait_methods",
    "event_record_methods",
    "implicit_wait_methods",
    "copy_methods",
    "inplace_write_methods",
    "device_work_methods",
    "launch_methods",
)


def unresolved_rows(result: RunResult) -> list[tuple[str, int, str]]:
    """Unresolved method calls on the step path that may matter, one row per call
    text: calls on the step's own objects (`self.model(...)`: a type the resolver
    could not follow) and synchronization vocabulary on receivers it could not
    place (`x.copy_(...)`, `e.synchronize()`); how many sites, and the first."""
    vocab = result.packs.vocabulary
    relevant = frozenset().union(*(vocab.names(name) for name in _SYNC_VOCABULARY))
    sites: dict[str, list[tuple[str, int]]] = {}
    for path, line, _, text in result.analysis.callgraph.unresolved_sites:
        method = text.removesuffix("(...)").rsplit(".", 1)[-1]
        if text.startswith("self.") or method in relevant:
            sites.setdefault(text, []).append((result.project.relpath(path), line))
    return sorted(
        ((text, len(found), "{}:{}".format(*min(found))) for text, found in sites.items()),
        key=lambda row: (-row[1], row[0]),
    )


def render_unresolved(console: Console, result: RunResult) -> None:
    rows_ = unresolved_rows(result)
    if not rows_:
        return
    table = Table(
        title=f"unresolved calls on the step path ({len(rows_)} distinct; each may hide a "
        "wait, a pinned write or a launch)",
        expand=True,
    )
    for column in ("call", "sites", "first site"):
        table.add_column(column, overflow="fold")
    for text, count, first in rows_[:UNRESOLVED_SHOWN]:
        table.add_row(text, str(count), first)
    if len(rows_) > UNRESOLVED_SHOWN:
        table.add_row(f"... {len(rows_) - UNRESOLVED_SHOWN} more", "", "")
    console.print(table)


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
        shared = buffer_rows(analysis.paths, result)
        if shared:
            buffers = Table(title=f"shared pinned buffers of {analysis.root.name}", expand=True)
            for column in ("mode", "pinned buffer", "host access", "device access", "ordered by"):
                buffers.add_column(column, overflow="fold")
            for mode, name, writer, device, edge in shared:
                style = "bold red" if edge.startswith("no edge") else ""
                buffers.add_row(mode, name, writer, device, Text(edge, style=style))
            console.print(buffers)
    for quiescence in result.analysis.quiescence_results:
        render_quiescence(console, quiescence)
    render_unresolved(console, result)
    stats = Table(title="analysis statistics")
    stats.add_column("measure")
    stats.add_column("value", justify="right")
    for key, value in result.stats.items():
        stats.add_row(key, str(value))
    stats.add_row("skipped files (diagnostics)", str(len(result.diagnostics)))
    console.print(stats)
    render_skipped_and_notes(console, result)
