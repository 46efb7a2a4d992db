"""`syncscan audit --graph dot|mermaid|json`: the step-path call graph for
other tools (Graphviz, a Markdown page, a script).

The same graph the HTML report draws: nodes are functions with what they do
on the step path (`roles`), edges are calls with their call site. Node names
are the positional ids of the model (`n1`, ...) so the text is stable;
functions and sites go in labels and attributes, escaped for each language.
"""

from __future__ import annotations

import json

from syncscan.report.step_graph import ROLE_TEXT, ROLES, StepGraph

# Fill colours by a node's first role, shared with the HTML report's SVG.
ROLE_COLOUR = {
    "writes": "#f4a261",
    "launches": "#b197fc",
    "waits": "#8ce99a",
    "records": "#74c0fc",
    "completes": "#ffd43b",
    "root": "#ced4da",
    "calls": "#f1f3f5",
}
GRAPH_FORMATS = ("dot", "mermaid", "json")


def _dot_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def to_dot(graph: StepGraph) -> str:
    lines = [
        "digraph step_path {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];',
    ]
    for node in graph.nodes:
        attrs = {
            "label": node.label,
            "tooltip": node.function,
            "fillcolor": ROLE_COLOUR[node.roles[0]],
            "roles": ",".join(node.roles),
            "file": f"{node.path}:{node.line}",
        }
        body = ", ".join(f"{k}={_dot_string(v)}" for k, v in attrs.items())
        lines.append(f"  {node.id} [{body}];")
    for edge in graph.edges:
        lines.append(f"  {edge.source} -> {edge.target} [site={_dot_string(_site(edge))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _site(edge) -> str:
    return f"{edge.path}:{edge.line}"


_MERMAID_ESCAPES = (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"))


def _mermaid(value: str) -> str:
    for raw, entity in _MERMAID_ESCAPES:
        value = value.replace(raw, entity)
    return value


def to_mermaid(graph: StepGraph) -> str:
    lines = ["flowchart LR"]
    for node in graph.nodes:
        lines.append(f'  {node.id}["{_mermaid(node.label)}"]:::{node.roles[0]}')
    for edge in graph.edges:
        lines.append(f"  {edge.source} --> {edge.target}")
    for role in ROLES:
        lines.append(f"  classDef {role} fill:{ROLE_COLOUR[role]},stroke:#495057")
    return "\n".join(lines) + "\n"


def to_json(graph: StepGraph) -> str:
    from syncscan.report.audit_json import graph_data

    data = {"roles": dict(ROLE_TEXT), **graph_data(graph)}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def render(graph: StepGraph, fmt: str) -> str:
    return {"dot": to_dot, "mermaid": to_mermaid, "json": to_json}[fmt](graph)
