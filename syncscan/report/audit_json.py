"""The audit as JSON: the model, field for field, for tools and diffs.

Deterministic: the same tree gives the same bytes wherever and whenever it is
analysed (no timing, cache or parse counts, no absolute path). The schema is
documented in the README (`syncscan audit --format json`).
"""

from __future__ import annotations

import json
from typing import Any

from syncscan import __version__
from syncscan.report.audit_model import (
    Access,
    Audit,
    AuditPath,
    BufferOrder,
    HazardFact,
    QuiescenceFact,
    RaceFact,
    Site,
)
from syncscan.report.json_report import finding_data
from syncscan.report.step_graph import StepGraph

SCHEMA = 1


def site_data(site: Site) -> dict[str, Any]:
    return {"path": site.path, "line": site.line, "function": site.function, "note": site.note}


def _place(site: Site) -> str:
    return f"{site.path}:{site.line}"


def trace_data(trace: tuple[Site, ...]) -> list[dict[str, Any]]:
    return [site_data(s) for s in trace]


def _access(access: Access) -> dict[str, Any]:
    """Where the access is made (its call chain is in the witness of a race)."""
    where = access.trace[-1] if access.trace else Site("", 0, "")
    return {
        "buffer": access.buffer,
        "agent": access.agent,
        "kind": access.kind,
        "site": site_data(where),
    }


def _order(order: BufferOrder) -> dict[str, Any]:
    return {
        "buffer": order.buffer,
        "name": order.name,
        "host": _place(order.host),
        "device": _place(order.device) if order.device else None,
        "ordered_by": order.ordered_by,
    }


def _race(race: RaceFact | None) -> dict[str, Any] | None:
    if race is None:
        return None
    return {
        "buffer": race.buffer,
        "host": trace_data(race.host),
        "device": trace_data(race.device),
        "across_steps": race.across_steps,
    }


def _hazard(hazard: HazardFact) -> dict[str, Any]:
    return {
        "memory": hazard.memory,
        "shape": hazard.shape,
        "conflict": hazard.conflict,
        "first": {"stream": hazard.first_stream, "trace": trace_data(hazard.first)},
        "second": {"stream": hazard.second_stream, "trace": trace_data(hazard.second)},
        "across_steps": hazard.across_steps,
    }


def path_data(path: AuditPath) -> dict[str, Any]:
    return {
        "id": path.id,
        "root": path.root,
        "mode_label": path.mode_label,
        "mode": {predicate: value for predicate, value in path.mode},
        "exits": trace_data(path.exits),
        "verdict": path.verdict,
        "reason": path.reason,
        "host_accesses": [_access(a) for a in path.writes],
        "device_accesses": [_access(a) for a in path.device],
        "wait": trace_data(path.wait),
        "waited": list(path.waited),
        "buffers": [_order(b) for b in path.buffers],
        "race": _race(path.race),
        "also": [_race(r) for r in path.also],
        "hazards": [_hazard(h) for h in path.hazards],
    }


def quiescence_data(point: QuiescenceFact) -> dict[str, Any]:
    return {
        "id": point.id,
        "function": point.function,
        "functions": list(point.functions),
        "verdict": point.verdict,
        "missing": point.missing,
        "incomplete": point.incomplete,
        "completion_sites": [
            {
                "path": s.path,
                "line": s.line,
                "function": s.function,
                "kind": s.kind,
                "barrier": s.barrier,
                "evidence": trace_data(s.evidence),
            }
            for s in point.sites
        ],
        "cpu_barriers": trace_data(point.cpu_barriers),
    }


def graph_data(graph: StepGraph) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "id": n.id,
                "function": n.function,
                "path": n.path,
                "line": n.line,
                "roles": list(n.roles),
                "paths": list(n.paths),
            }
            for n in graph.nodes
        ],
        "edges": [
            {"from": e.source, "to": e.target, "path": e.path, "line": e.line} for e in graph.edges
        ],
    }


def audit_data(audit: Audit) -> dict[str, Any]:
    return {
        "version": __version__,
        "schema": SCHEMA,
        "findings": [
            {**finding_data(f.finding), "paths": list(f.paths), "cell": f.cell}
            for f in audit.findings
        ],
        "roots": [
            {
                "id": r.id,
                "name": r.name,
                "path": r.path,
                "line": r.line,
                "discards_output": r.discards_output,
                "incomplete": r.incomplete,
                "cells": [
                    {
                        "id": c.id,
                        "mode_label": c.mode_label,
                        "verdict": c.verdict,
                        "paths": list(c.paths),
                    }  # fmt: skip
                    for c in r.cells
                ],
            }
            for r in audit.roots
        ],
        "mode_labels": list(audit.mode_labels),
        "paths": [path_data(p) for p in audit.paths],
        "quiescence": [quiescence_data(q) for q in audit.quiescence],
        "graph": graph_data(audit.graph),
        "unresolved": [
            {"call": u.call, "sites": u.sites, "first": u.first} for u in audit.unresolved
        ],
        "sanctioned_regions_without_sync": list(audit.silent_regions),
        "stats": dict(audit.stats),
        "diagnostics": [
            {"kind": kind, "path": path, "line": line, "message": message}
            for kind, path, line, message in audit.diagnostics
        ]
        + [{"kind": "note", "path": "", "line": 0, "message": note} for note in audit.notes],
    }


def render(audit: Audit) -> str:
    return json.dumps(audit_data(audit), indent=1, ensure_ascii=False) + "\n"
