"""The JSON report: the stable contract CI jobs parse.

Everything but the `volatile` key is a pure function of the analysed files and
the configuration: byte-identical across runs, machines, checkout locations and
cache states. `volatile` holds what is not (the absolute root, timings, cache
and parse counts).
"""

from __future__ import annotations

import json
from typing import Any

from syncscan import __version__
from syncscan.findings import Finding
from syncscan.report.result import RunResult


def finding_data(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity,
        "confidence": finding.confidence,
        "message": finding.message,
        "path": finding.location.path,
        "line": finding.location.line,
        "column": finding.location.column,
        "function": finding.location.function,
        "step_root": finding.step_root,
        "mode": {k: v for k, v in finding.mode},
        "mode_label": finding.mode_label,
        "witness": [
            {"path": w.path, "line": w.line, "function": w.function, "note": w.note}
            for w in finding.witness
        ],
        "related": [
            {"path": r.path, "line": r.line, "function": r.function, "note": r.note}
            for r in finding.related
        ],
        "remedy": finding.remedy,
        "fingerprint": finding.fingerprint,
    }


# Figures that depend on the cache, the machine or the clock, not on the code.
VOLATILE_STATS = (
    "seconds", "parsed", "prefetched", "cache_hits", "read", "findings_reused", "walk_processes",
    "walks_reused", "units_reused", "units_judged", "points_reused", "visits_reused",
    "roots_resumed",
)  # fmt: skip


def diagnostics_data(result: RunResult) -> list[dict[str, Any]]:
    data = [
        {"kind": d.kind, "path": d.path, "line": d.line, "message": d.message}
        for d in result.diagnostics
    ]
    data += [{"kind": "note", "path": "", "line": 0, "message": note} for note in result.notes]
    return data


def render(result: RunResult, findings: list[Finding]) -> str:
    stats = {k: v for k, v in result.stats.items() if k not in VOLATILE_STATS}
    volatile: dict[str, Any] = {"root": str(result.project.root)}
    volatile.update((k, result.stats[k]) for k in VOLATILE_STATS if k in result.stats)
    data = {
        "version": __version__,
        "findings": [finding_data(f) for f in findings],
        "diagnostics": diagnostics_data(result),
        "stats": stats,
        "volatile": volatile,
    }
    return json.dumps(data, indent=2, sort_keys=False) + "\n"
