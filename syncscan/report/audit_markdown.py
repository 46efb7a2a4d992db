"""The audit as Markdown: a page for a wiki, an issue or a pull request.

Findings first, then the matrix of roots x modes (verdict per cell), one table
per root (mode, exit, verdict, reason, paths), the quiescence points and the
step-path call graph as a Mermaid flowchart. Text from the analysed code is
escaped as the check's Markdown report escapes it.
"""

from __future__ import annotations

from syncscan.report import graph_export
from syncscan.report.audit_model import Audit, rows
from syncscan.report.markdown import cell, code, text
from syncscan.report.result import counted

HEADING = "## syncscan audit"


def _row(values: list[str]) -> str:
    return "| " + " | ".join(cell(v) for v in values) + " |"


def _findings(audit: Audit) -> list[str]:
    if not audit.findings:
        return ["No findings."]
    lines = ["| code | location | step root / quiescence point | mode |", "|---|---|---|---|"]
    for item in audit.findings:
        f = item.finding
        where = f"{f.location.path}:{f.location.line}"
        lines.append(
            _row(
                [
                    text(f"{f.code} {f.name}"),
                    code(where),
                    code(f.step_root),
                    text(f.mode_label or "all modes"),
                ]
            )
        )
    return lines


def _matrix(audit: Audit) -> list[str]:
    labels = audit.mode_labels
    lines = [
        _row(["step root", *(text(label) for label in labels)]),
        "|---" * (len(labels) + 1) + "|",
    ]
    for root in audit.roots:
        cells = {c.mode_label: c for c in root.cells}
        values = [
            f"**{text(c.verdict)}** ({counted(len(c.paths), 'path')})" if c else ""
            for c in (cells.get(label) for label in labels)
        ]
        lines.append(_row([code(root.short), *values]))
    return lines


def _roots(audit: Audit) -> list[str]:
    lines: list[str] = []
    for root in audit.roots:
        lines += ["", f"### {code(root.name)}", "", f"{code(f'{root.path}:{root.line}')}", ""]
        if root.incomplete:
            lines.append(f"Incomplete: {text(root.incomplete)}")
            continue
        lines += ["| mode | exit | verdict | reason | paths |", "|---|---|---|---|---|"]
        for mode, exit_, verdict, reason, paths in rows(audit, root):
            values = [text(mode), code(exit_), text(verdict), text(reason), str(len(paths))]
            lines.append(_row(values))
    return lines


def _quiescence(audit: Audit) -> list[str]:
    lines: list[str] = []
    for point in audit.quiescence:
        lines += ["", f"### {code(point.function)}", ""]
        if point.missing or point.incomplete:
            lines.append(text(point.missing or point.incomplete or ""))
            continue
        lines += ["| completion site | completes by | verdict |", "|---|---|---|"]
        for s in point.sites:
            verdict = "barrier" if s.barrier else "**no device barrier**"
            lines.append(_row([code(f"{s.path}:{s.line}"), text(s.kind), verdict]))
    return lines


def render(audit: Audit) -> str:
    lines = [
        HEADING,
        "",
        f"{counted(len(audit.findings), 'finding')}, {counted(len(audit.roots), 'step root')}, "
        f"{counted(len(audit.quiescence), 'quiescence point')}, "
        f"{counted(len(audit.paths), 'path')}.",
        "",
        "### Findings",
        "",
        *_findings(audit),
        "",
        "### Step roots × modes",
        "",
        *_matrix(audit),
        *_roots(audit),
        *_quiescence(audit),
        "",
        "### Step-path call graph",
        "",
        "```mermaid",
        graph_export.to_mermaid(audit.graph).rstrip("\n"),
        "```",
        "",
        f"{counted(len(audit.unresolved), 'distinct unresolved call')} on the step path.",
        *(
            [
                "",
                f"{counted(len(audit.silent_regions), 'sanctioned region')} on the step path "
                "with no host sync syncscan recognises:",
                "",
                *(f"- `{where}`" for where in audit.silent_regions),
            ]
            if audit.silent_regions
            else []
        ),
    ]
    return "\n".join(lines) + "\n"
