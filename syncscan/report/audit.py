"""The console audit: findings first, then one compact table per step root.

A row is a mode and the exit line that ends its paths (so the paths of one
mode that end differently are told apart), the verdict and its reason, and
how many paths end so. `--verbose` adds each row's paths: mode assignment,
buffers with the edge that orders them, and the witness. It reads at 80
columns: every column is at least as wide as its longest word, text wraps
between words, and an identifier longer than the line is never cut (where
the columns cannot fit, a row is printed as labelled lines instead).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncscan.report.audit_model import (
    VERDICT_RANK,
    Audit,
    AuditPath,
    AuditRoot,
    QuiescenceFact,
    Site,
    rows,
)
from syncscan.report.result import counted
from syncscan.rules.base import predicates_text

_VERDICT_STYLE = {0: "bold red", 1: "yellow", 2: "cyan", 3: "green", 4: "dim"}
_UNRESOLVED_SHOWN = 40


def _style(verdict: str) -> str:
    return _VERDICT_STYLE.get(VERDICT_RANK.get(verdict, 1), "")


def wrap(text: Text, width: int) -> list[Text]:
    """`text` in lines of at most `width` characters, broken only between words;
    a word longer than `width` gets a line of its own, whole."""
    plain = text.plain
    offsets: list[int] = []
    start = 0  # where the current line begins
    for word in re.finditer(r"\S+", plain):
        if word.end() - start > width and word.start() > start:
            offsets.append(word.start())
            start = word.start()
    return [part.rstrip() or part for part in text.divide(offsets)]


def line(console: Console, text: str | Text, indent: int = 0) -> None:
    """Printed at the console's width, wrapped between words (continuation lines
    indented two more); syncscan never cuts an identifier, even a long one."""
    body = text if isinstance(text, Text) else Text(text)
    width = max(console.width - indent - 2, 20)
    for number, part in enumerate(wrap(body, width)):
        pad = " " * (indent if number == 0 else indent + 2)
        console.print(Text(pad) + part, soft_wrap=True)


def _where(site: Site) -> str:
    return f"{site.path}:{site.line}"


def _short(function: str) -> str:
    return ".".join(function.split(".")[-2:])


def _longest_word(values: list[str]) -> int:
    return max((len(word) for value in values for word in value.split()), default=1)


def column_widths(columns: list[list[str]], width: int) -> list[int] | None:
    """Widths for a table whose columns are at least as wide as their longest
    word (as wide as their longest value when every value is one word), with the
    space left shared out to the columns whose text would wrap; None when even
    the minimums do not fit in `width` (each column also takes 3: its padding
    and the space between columns)."""
    room = width - 3 * len(columns)
    natural = [max((len(v) for v in values), default=1) for values in columns]
    minimum = [
        n if all(len(v.split()) <= 1 for v in values) else _longest_word(values)
        for n, values in zip(natural, columns, strict=True)
    ]
    if sum(minimum) > room:
        return None
    widths = list(minimum)
    spare = room - sum(widths)
    # The short columns (mode, verdict) on one line each where the longest
    # column (the reason) keeps a readable width; it takes the rest.
    longest = max(range(len(columns)), key=lambda i: natural[i])
    keep = max(min(natural[longest], 24) - widths[longest], 0)
    for i in sorted(range(len(columns)), key=lambda i: natural[i] - widths[i]):
        if i != longest:
            grant = max(min(natural[i] - widths[i], spare - keep), 0)
            widths[i] += grant
            spare -= grant
    widths[longest] += min(spare, natural[longest] - widths[longest])
    return widths


def _table(console: Console, title: str, head: list[str], body: list[list[Text]]) -> None:
    line(console, Text(title, style="bold"))
    columns = [[h, *(r[i].plain for r in body)] for i, h in enumerate(head)]
    widths = column_widths(columns, console.width)
    if widths is None:  # too narrow for columns: one labelled line per value
        for row in body:
            for name, cell in zip(head, row, strict=True):
                line(console, Text(f"{name}: ", style="dim") + cell, indent=2)
            console.print()
        return
    table = Table(box=box.SIMPLE, expand=False, pad_edge=False, show_edge=False)
    for name, size in zip(head, widths, strict=True):
        table.add_column(name, width=size, overflow="fold")
    for row in body:
        table.add_row(*row)
    console.print(table)
    console.print()


def render_findings(console: Console, audit: Audit) -> None:
    if not audit.findings:
        line(console, Text("No findings.", style="bold green"))
        return
    line(console, Text(f"{counted(len(audit.findings), 'finding')}:", style="bold"))
    for item in audit.findings:
        f = item.finding
        where = f"{f.location.path}:{f.location.line}"
        text = Text()
        text.append(f"{f.code} ", style="bold red" if f.severity == "error" else "bold yellow")
        text.append(f"{where}  {_short(f.step_root)}")
        if f.mode_label:
            text.append(f"  mode: {f.mode_label}")
        line(console, text, indent=2)
    console.print()


def render_root(console: Console, audit: Audit, root: AuditRoot, verbose: bool) -> None:
    title = f"step root {root.name} ({root.path}:{root.line})"
    if root.discards_output:
        title += ", a dummy batch"
    if root.incomplete:
        line(console, Text(f"{title}: incomplete: {root.incomplete}", style="bold yellow"))
        return
    found = rows(audit, root)
    body = [
        [
            Text(mode),
            Text(exit_),
            Text(verdict, style=_style(verdict)),
            Text(reason),
            Text(str(len(paths))),
        ]  # fmt: skip
        for mode, exit_, verdict, reason, paths in found
    ]
    _table(console, title, ["mode", "exit", "verdict", "reason", "paths"], body)
    if verbose:
        for mode, exit_, verdict, _, paths in found:
            render_paths(console, mode, exit_, verdict, paths)


def render_paths(
    console: Console, mode: str, exit_: str, verdict: str, paths: list[AuditPath]
) -> None:
    first = paths[0]
    head = Text(f"{mode}, exit {exit_}: ", style="bold")
    head.append(verdict, style=_style(verdict))
    line(console, head + Text(f" ({counted(len(paths), 'path')})"), indent=2)
    line(console, "exits: " + " then ".join(_where(e) for e in first.exits), indent=4)
    for path in paths:
        line(console, f"{path.id}: {predicates_text(path.mode) or 'no mode predicate'}", indent=4)
    for order in first.buffers:
        device = _where(order.device) if order.device else "-"
        line(
            console,
            f"buffer {order.name}: host {_where(order.host)}, device {device}; "
            f"ordered by: {order.ordered_by}",
            indent=4,
        )
    for hazard in first.hazards:
        line(
            console,
            f"stream hazard ({hazard.shape}, {hazard.conflict}) on {hazard.memory}: "
            f"{hazard.first_stream} then {hazard.second_stream}",
            indent=4,
        )
    line(console, "witness:", indent=4)
    for number, step in enumerate(first.witness(), start=1):
        line(console, f"{number}. {_where(step)}  {_short(step.function)}  {step.note}", indent=6)
    console.print()


def render_quiescence(console: Console, point: QuiescenceFact, verbose: bool) -> None:
    title = f"quiescence point {point.function}"
    also = [_short(f) for f in point.functions if f != point.function]
    if also:
        title += f" (also: {', '.join(also)})"
    if point.missing or point.incomplete:
        line(console, Text(f"{title}: {point.missing or point.incomplete}", style="yellow"))
        return
    body = []
    for s in point.sites:
        verdict = "barrier" if s.barrier else "no device barrier"
        style = "green" if s.barrier else "bold red"
        site = f"{PurePosixPath(s.path).name}:{s.line}"
        body.append([Text(site), Text(s.kind), Text(verdict, style=style)])
    for b in point.cpu_barriers:
        site = f"{PurePosixPath(b.path).name}:{b.line}"
        body.append([Text(site), Text("-"), Text("CPU barrier", style="yellow")])
    _table(console, title, ["completion site", "completes by", "verdict"], body)
    if verbose:
        for s in point.sites:
            what = "barrier" if s.barrier else "no device barrier; may still run"
            line(console, f"{_where(s)} {s.kind}: {what}:", indent=2)
            for number, step in enumerate(s.evidence, start=1):
                where = _where(step) if step.path else "(entry)"
                line(console, f"{number}. {where}  {_short(step.function)}  {step.note}", indent=4)
        console.print()


def render_unresolved(console: Console, audit: Audit, verbose: bool) -> None:
    if not audit.unresolved:
        return
    line(
        console,
        f"{counted(len(audit.unresolved), 'distinct unresolved call')} on the step path may "
        "hide a wait, a pinned write or a launch"
        + (":" if verbose else " (--verbose lists them)."),
    )
    if verbose:
        for u in audit.unresolved[:_UNRESOLVED_SHOWN]:
            line(console, f"{u.call}  {counted(u.sites, 'site')}, first {u.first}", indent=2)
        if len(audit.unresolved) > _UNRESOLVED_SHOWN:
            line(console, f"... {len(audit.unresolved) - _UNRESOLVED_SHOWN} more", indent=2)


def render_silent_regions(console: Console, audit: Audit) -> None:
    if not audit.silent_regions:
        return
    line(
        console,
        f"{counted(len(audit.silent_regions), 'sanctioned region')} on the step path "
        f"{'holds' if len(audit.silent_regions) == 1 else 'hold'} no host sync syncscan "
        "recognises (a call it cannot follow, or a stale annotation):",
    )
    for where in audit.silent_regions:
        line(console, where, indent=2)


def render_statistics(console: Console, audit: Audit, verbose: bool) -> None:
    stats = dict(audit.stats)
    line(
        console,
        f"call graph: {stats.get('call_graph_nodes', 0):,} functions, "
        f"{stats.get('call_graph_edges', 0):,} calls ({stats.get('resolved_calls', 0):,} "
        f"resolved, {stats.get('unresolved_calls', 0):,} unresolved); "
        f"{stats.get('summarised', 0):,} of {stats.get('files', 0):,} files summarised; "
        f"step-path graph: {len(audit.graph.nodes)} functions.",
    )
    if verbose:
        for key, value in audit.stats:
            line(console, f"{key}: {value}", indent=2)
    for kind, path, number, message in audit.diagnostics:
        where = f" {path}:{number}" if number else (f" {path}" if path else "")
        line(console, Text(f"{kind}{where}: {message}", style="yellow"))
    for note in audit.notes:
        line(console, Text(f"note: {note}", style="yellow"))


def render(console: Console, audit: Audit, verbose: bool = False) -> None:
    render_findings(console, audit)
    for root in audit.roots:
        render_root(console, audit, root, verbose)
    for point in audit.quiescence:
        render_quiescence(console, point, verbose)
    render_unresolved(console, audit, verbose)
    render_silent_regions(console, audit)
    render_statistics(console, audit, verbose)
