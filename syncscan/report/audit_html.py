"""The audit as one self-contained HTML file: opens from disk, attaches to a ticket.

No script, no font, no image, no stylesheet from anywhere: CSS and the SVG are
inline, and every link is an anchor in the page (or, when a URL template is
configured, a link to the source line in the repository). The findings come
first, then the matrix of roots x modes coloured by verdict, the step-path
call graph (laid out here, `graph_layout`), each cell's paths with witness and
source, each function's paths, the quiescence points, the unresolved calls
and the statistics. Everything taken from the analysed code is escaped.
"""

from __future__ import annotations

from html import escape

from syncscan import __version__
from syncscan.report import graph_layout
from syncscan.report.audit_model import (
    VERDICT_RANK,
    Audit,
    AuditPath,
    Cell,
    QuiescenceFact,
    Site,
)
from syncscan.report.graph_export import ROLE_COLOUR
from syncscan.report.result import counted
from syncscan.report.source_view import SourceView
from syncscan.report.step_graph import ROLE_TEXT, ROLES, StepGraph
from syncscan.rules.base import predicates_text

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1500px;padding:0 18px;
color:#212529}h1{font-size:22px;margin:14px 0 4px}
h2{font-size:18px;border-bottom:1px solid #dee2e6;margin-top:28px}
h3{font-size:15px;margin:18px 0 6px}
code,pre,.mono{font-family:ui-monospace,monospace;font-size:12px}
nav a{margin-right:12px}table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid #dee2e6;padding:3px 7px;text-align:left;vertical-align:top}
.matrix td{min-width:110px;text-align:center}
.matrix a{color:inherit;text-decoration:none;display:block}
.v0{background:#ffc9c9;font-weight:600}.v1{background:#ffe8cc}.v2{background:#c5f6fa}
.v3{background:#d3f9d8}.v4{background:#e9ecef;color:#495057}.empty{background:#fff}
.finding{border-left:4px solid #e03131;padding:2px 10px;margin:8px 0;background:#fff5f5}
pre.src{background:#f8f9fa;border:1px solid #e9ecef;padding:4px 0;margin:4px 0;overflow-x:auto}
pre.src span{display:block;padding:0 8px;white-space:pre}pre.src .hit{background:#fff3bf}
.ln{color:#868e96;user-select:none}.graph{overflow:auto;max-height:760px;border:1px solid #dee2e6}
.legend span{display:inline-block;padding:1px 8px;margin:2px 4px 2px 0;border:1px solid #adb5bd}
:target{outline:3px solid #4dabf7}.group{border:1px solid #dee2e6;padding:4px 10px;margin:8px 0}
small,.muted{color:#868e96}details summary{cursor:pointer}
svg text{font:11px ui-monospace,monospace;pointer-events:none}svg a:hover rect{stroke:#1c7ed6}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _rank(verdict: str) -> int:
    return VERDICT_RANK.get(verdict, 1)


class HtmlAudit:
    def __init__(self, audit: Audit, source: SourceView, title: str) -> None:
        self.audit = audit
        self.source = source
        self.title = title
        self.roots = {r.id: r for r in audit.roots}

    # ------------------------------------------------------------------ pieces
    def where(self, path: str, line: int) -> str:
        text = _e(f"{path}:{line}") if path else "-"
        url = self.source.url(path, line)
        return f'<a class="mono" href="{_e(url)}">{text}</a>' if url else f"<code>{text}</code>"

    def snippet(self, site: Site) -> str:
        lines = self.source.snippet(site.path, site.line)
        if not lines:
            return ""
        width = len(str(lines[-1][0]))
        body = "".join(
            f'<span{" class=hit" if n == site.line else ""}><i class="ln">{n:>{width}}</i> '
            f"{_e(text)}</span>"
            for n, text in lines
        )
        return f'<pre class="src">{body}</pre>'

    def trace(self, steps: tuple[Site, ...], snippets: bool) -> str:
        items = []
        shown: set[tuple[str, int]] = set()
        for number, step in enumerate(steps):
            last = number == len(steps) - 1 or not step.note.startswith("calls ")
            code = ""
            if snippets and last and (step.path, step.line) not in shown:
                shown.add((step.path, step.line))
                code = self.snippet(step)
            items.append(
                f"<li>{self.where(step.path, step.line)} <code>{_e(_short(step.function))}</code>"
                f" {_e(step.note)}{code}</li>"
            )
        return "<ol>" + "".join(items) + "</ol>"

    def cell_name(self, cell_id: str | None) -> str:
        cell = self.audit.cell(cell_id) if cell_id else None
        if cell is not None:
            return f"{self.roots[cell.root].short} × {cell.mode_label}"
        point = next((q for q in self.audit.quiescence if q.id == cell_id), None)
        return f"quiescence point {_short(point.function)}" if point else ""

    # ------------------------------------------------------------------ sections
    def findings(self) -> str:
        if not self.audit.findings:
            return "<p>No findings.</p>"
        out = []
        for item in self.audit.findings:
            f = item.finding
            loc = f.location
            link = (
                f' — see <a href="#{_e(item.cell)}">{_e(self.cell_name(item.cell))}</a>'
                if item.cell
                else ""
            )
            out.append(
                f'<div class="finding"><b>{_e(f.code)} {_e(f.name)}</b> '
                f"[{_e(f.severity)}] at {self.where(loc.path, loc.line)}{link}"
                f"<p>{_e(f.message)}</p><details><summary>witness and remedy</summary>"
                f"{self.trace(_sites(f.witness), snippets=True)}"
                f"<p><b>Remedy:</b> {_e(f.remedy)}</p></details></div>"
            )
        return "".join(out)

    def matrix(self) -> str:
        labels = self.audit.mode_labels
        head = "".join(f"<th>{_e(label)}</th>" for label in labels)
        rows = []
        for root in self.audit.roots:
            cells = {c.mode_label: c for c in root.cells}
            tds = []
            for label in labels:
                cell = cells.get(label)
                if cell is None:
                    tds.append('<td class="empty"></td>')
                    continue
                tds.append(
                    f'<td class="v{_rank(cell.verdict)}" title="{_e(root.name)} × {_e(label)}">'
                    f'<a href="#{cell.id}">{_e(cell.verdict)}<br>'
                    f"<small>{counted(len(cell.paths), 'path')}</small></a></td>"
                )
            extra = (
                f"<br><small>incomplete: {_e(root.incomplete)}</small>" if root.incomplete else ""
            )
            role = " (dummy batch)" if root.discards_output else ""
            rows.append(
                f'<tr><th title="{_e(root.name)}">{_e(root.short)}{role}{extra}</th>'
                + "".join(tds)
                + "</tr>"
            )
        quiescence = "".join(
            f'<tr><th title="{_e(q.function)}">{_e(_short(q.function))}</th>'
            f'<td class="v{0 if q.verdict == "no device barrier" else 3}">'
            f'<a href="#{q.id}">{_e(q.verdict)}<br><small>'
            f"{counted(len(q.sites), 'completion site')}</small></a></td></tr>"
            for q in self.audit.quiescence
        )
        legend = " ".join(
            f'<span class="v{rank}">{_e(text)}</span>'
            for rank, text in (
                (0, "unbounded / write outside guard"),
                (1, "stream hazard / incomplete"),
                (2, "bounded by peer"),
                (3, "waits inline / deferred / semaphore / not rewritten"),
                (4, "no device reader / no pinned writes / output discarded"),
            )
        )
        return (
            f'<table class="matrix" id="matrix-table"><tr><th>step root \\ mode</th>{head}</tr>'
            + "".join(rows)
            + f'</table><p class="legend">{legend}</p>'
            + (
                f'<table class="matrix"><tr><th>quiescence point</th><th>verdict</th></tr>'
                f"{quiescence}</table>"
                if quiescence
                else ""
            )
        )

    def graph(self) -> str:
        graph: StepGraph = self.audit.graph
        if not graph.nodes:
            return "<p>No step path was walked.</p>"
        lay = graph_layout.layout(graph)
        parts = [
            f'<svg id="call-graph" width="{lay.width}" height="{lay.height}" '
            f'viewBox="0 0 {lay.width} {lay.height}" role="img" '
            'aria-label="step-path call graph">'
            '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" '
            'markerHeight="6" orient="auto"><path d="M0,0L8,4L0,8z" fill="#868e96"/>'
            "</marker></defs>"
        ]
        for edge in graph.edges:
            a, b = lay.boxes[edge.source], lay.boxes[edge.target]
            x1, y1 = a.x + a.width, a.y + a.height / 2
            x2, y2 = b.x, b.y + b.height / 2
            bend = max(30.0, abs(x2 - x1) / 2)
            parts.append(
                f'<path d="M{x1:.1f},{y1:.1f}C{x1 + bend:.1f},{y1:.1f} {x2 - bend:.1f},{y2:.1f} '
                f'{x2:.1f},{y2:.1f}" fill="none" stroke="#adb5bd" marker-end="url(#arrow)"/>'
            )
        for node in graph.nodes:
            box = lay.boxes[node.id]
            stroke = "2.5" if "root" in node.roles else "1"
            roles = ", ".join(ROLE_TEXT[r] for r in node.roles)
            parts.append(
                f'<a href="#{node.id}"><title>{_e(node.function)}: {_e(roles)}</title>'
                f'<rect x="{box.x}" y="{box.y}" width="{box.width}" height="{box.height}" rx="4" '
                f'fill="{ROLE_COLOUR[node.roles[0]]}" stroke="#495057" stroke-width="{stroke}"/>'
                f'<text x="{box.x + 6}" y="{box.y + 14}">{_e(node.label)}</text></a>'
            )
        parts.append("</svg>")
        legend = " ".join(
            f'<span style="background:{ROLE_COLOUR[r]}">{_e(ROLE_TEXT[r])}</span>' for r in ROLES
        )
        return (
            f'<p class="legend">{legend} <small>(a thick border: a root; a node is coloured '
            f"by the first of its roles; click one for its paths)</small></p>"
            f'<div class="graph">{"".join(parts)}</div>'
        )

    def path_group(self, paths: list[AuditPath]) -> str:
        first = paths[0]
        exits = ", ".join(self.where(e.path, e.line) for e in first.exits)
        modes = "".join(
            f'<li id="{p.id}"><b>{p.id}</b> <code>{_e(predicates_text(p.mode) or "-")}</code></li>'
            for p in paths
        )
        buffers = ""
        if first.buffers:
            rows = "".join(
                f"<tr><td><code>{_e(b.name)}</code></td><td>{self.where(b.host.path, b.host.line)}"
                f"</td><td>{self.where(b.device.path, b.device.line) if b.device else '-'}</td>"
                f"<td>{_e(b.ordered_by)}</td></tr>"
                for b in first.buffers
            )
            buffers = (
                "<table><tr><th>pinned buffer</th><th>host access</th><th>device access</th>"
                f"<th>ordered by</th></tr>{rows}</table>"
            )
        hazards = "".join(
            f"<p><b>stream hazard</b> ({_e(h.shape)}, {_e(h.conflict)}) on "
            f"<code>{_e(h.memory)}</code>: {_e(h.first_stream)} then {_e(h.second_stream)}</p>"
            for h in first.hazards
        )
        return (
            f'<div class="group"><p><span class="v{_rank(first.shown_verdict)}">'
            f"&nbsp;{_e(first.shown_verdict)}&nbsp;</span> {_e(first.reason)} — exit {exits} "
            f"<small>({counted(len(paths), 'path')})</small></p>{buffers}{hazards}"
            f"<details><summary>witness with source</summary>"
            f"{self.trace(first.witness(), snippets=True)}</details>"
            f"<details><summary>mode assignments</summary><ul>{modes}</ul></details></div>"
        )

    def cell(self, cell: Cell) -> str:
        groups: dict[tuple, list[AuditPath]] = {}
        for path_id in cell.paths:
            path = self.audit.path(path_id)
            groups.setdefault(_group_key(path), []).append(path)
        ordered = sorted(groups.values(), key=lambda ps: (_rank(ps[0].shown_verdict), ps[0].id))
        root = self.roots[cell.root]
        return (
            f'<section id="{cell.id}"><h3>{_e(root.short)} × {_e(cell.mode_label)}</h3>'
            + "".join(self.path_group(g) for g in ordered)
            + "</section>"
        )

    def functions(self) -> str:
        out = []
        cell_of = {p: c for r in self.audit.roots for c in r.cells for p in c.paths}
        for node in self.audit.graph.nodes:
            by_cell: dict[str, list[str]] = {}
            points = []
            for path_id in node.paths:
                if path_id in cell_of:
                    by_cell.setdefault(cell_of[path_id].id, []).append(path_id)
                else:
                    points.append(path_id)
            links = []
            for cell_id, ids in by_cell.items():
                inner = " ".join(f'<a href="#{i}">{i}</a>' for i in ids) if len(ids) <= 12 else ""
                links.append(
                    f'<a href="#{cell_id}">{_e(self.cell_name(cell_id))}</a> '
                    f"({counted(len(ids), 'path')}{': ' + inner if inner else ''})"
                )
            links += [f'<a href="#{q}">{_e(self.cell_name(q))}</a>' for q in points]
            roles = ", ".join(ROLE_TEXT[r] for r in node.roles)
            out.append(
                f'<li id="{node.id}"><code>{_e(node.function)}</code> '
                f"{self.where(node.path, node.line)} — {_e(roles)}"
                f"{'<br>' + '; '.join(links) if links else ''}</li>"
            )
        return "<ul>" + "".join(out) + "</ul>"

    def quiescence(self, point: QuiescenceFact) -> str:
        rows = []
        for s in point.sites:
            verdict = "barrier" if s.barrier else "no device barrier"
            evidence = self.trace(s.evidence, snippets=not s.barrier) if s.evidence else ""
            rows.append(
                f"<tr><td>{self.where(s.path, s.line)}</td><td>{_e(s.kind)}</td>"
                f'<td class="v{3 if s.barrier else 0}">{verdict}</td><td>{evidence}</td></tr>'
            )
        rows += [
            f"<tr><td>{self.where(b.path, b.line)}</td><td>-</td><td class=v1>CPU barrier</td>"
            f"<td>{_e(b.note)}</td></tr>"
            for b in point.cpu_barriers
        ]
        why = point.missing or point.incomplete
        also = [f for f in point.functions if f != point.function]
        return (
            f'<section id="{point.id}"><h3>{_e(point.function)}</h3>'
            + (f"<p>also: {_e(', '.join(also))}</p>" if also else "")
            + (f"<p>{_e(why)}</p>" if why else "")
            + "<table><tr><th>completion site</th><th>completes by</th><th>verdict</th>"
            "<th>barrier, or the work that may still run</th></tr>"
            + "".join(rows)
            + "</table></section>"
        )

    def unresolved(self) -> str:
        if not self.audit.unresolved:
            return "<p>None.</p>"
        rows = "".join(
            f"<tr><td><code>{_e(u.call)}</code></td><td>{u.sites}</td><td><code>{_e(u.first)}"
            "</code></td></tr>"
            for u in self.audit.unresolved
        )
        return (
            f"<p>{counted(len(self.audit.unresolved), 'distinct call')} the resolver could not "
            "follow; each may hide a wait, a pinned write or a launch.</p><details><summary>"
            f"list</summary><table><tr><th>call</th><th>sites</th><th>first site</th></tr>{rows}"
            "</table></details>"
        )

    def silent_regions(self) -> str:
        if not self.audit.silent_regions:
            return "<p>None.</p>"
        items = "".join(f"<li><code>{_e(w)}</code></li>" for w in self.audit.silent_regions)
        return (
            "<p>Regions the engine sanctions for host syncs where syncscan recognises "
            f"none: a call it cannot follow, or a stale annotation.</p><ul>{items}</ul>"
        )

    def statistics(self) -> str:
        rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in self.audit.stats)
        notes = "".join(f"<li>{_e(n)}</li>" for n in self.audit.notes)
        diagnostics = "".join(
            f"<li>{_e(kind)} <code>{_e(path)}{':' + str(number) if number else ''}</code> "
            f"{_e(message)}</li>"
            for kind, path, number, message in self.audit.diagnostics
        )
        return (
            f"<table>{rows}</table>"
            + (f"<h3>Diagnostics</h3><ul>{diagnostics}</ul>" if diagnostics else "")
            + (f"<h3>Notes</h3><ul>{notes}</ul>" if notes else "")
        )

    def page(self) -> str:
        audit = self.audit
        summary = (
            f"{counted(len(audit.findings), 'finding')} · {counted(len(audit.roots), 'step root')} "
            f"· {counted(len(audit.quiescence), 'quiescence point')} · "
            f"{counted(len(audit.paths), 'path')} · syncscan {_e(__version__)}"
        )
        cells = "".join(self.cell(c) for r in audit.roots for c in r.cells)
        points = "".join(self.quiescence(q) for q in audit.quiescence)
        sections = (
            ("findings", "Findings", self.findings()),
            ("matrix", "Step roots × modes", self.matrix()),
            ("graph", "Step-path call graph", self.graph()),
            ("paths", "Paths by root and mode", cells),
            ("functions", "Functions on the step path", self.functions()),
            ("quiescence", "Quiescence points", points or "<p>None.</p>"),
            ("unresolved", "Unresolved calls on the step path", self.unresolved()),
            ("sanctioned", "Sanctioned regions with no sync found", self.silent_regions()),
            ("statistics", "Statistics", self.statistics()),
        )
        nav = "".join(f'<a href="#{key}">{_e(title)}</a>' for key, title, _ in sections)
        body = "".join(
            f'<section id="{key}"><h2>{_e(title)}</h2>{content}</section>'
            for key, title, content in sections
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>syncscan audit: {_e(self.title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>syncscan audit: {_e(self.title)}</h1><p>{summary}</p><nav>{nav}</nav>"
            f"{body}</body></html>\n"
        )


def _short(function: str) -> str:
    return ".".join(function.split(".")[-2:])


def _sites(witness) -> tuple[Site, ...]:
    return tuple(Site(w.path, w.line, w.function, w.note) for w in witness)


def _group_key(path: AuditPath) -> tuple:
    race = path.race
    return (
        path.shown_verdict,
        path.reason,
        tuple((e.path, e.line) for e in path.exits),
        (race.buffer, _last_line(race.host), _last_line(race.device)) if race else None,
    )


def render(audit: Audit, source: SourceView, title: str) -> str:
    return HtmlAudit(audit, source, title).page()


def _last_line(trace: tuple[Site, ...]) -> int:
    return trace[-1].line if trace else 0
