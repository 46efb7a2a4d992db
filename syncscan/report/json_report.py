"""The JSON report: the stable contract CI jobs parse."""

from __future__ import annotations

import json
from typing import Any

from syncscan import __version__
from syncscan.report.result import RunResult
from syncscan.rules.base import Finding


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


def render(result: RunResult, findings: list[Finding]) -> str:
    data = {
        "version": __version__,
        "root": str(result.project.root),
        "findings": [finding_data(f) for f in findings],
        "diagnostics": [{"path": d.path, "message": d.message} for d in result.diagnostics]
        + [{"path": "", "message": note} for note in result.notes],
        "stats": result.stats,
    }
    return json.dumps(data, indent=2, sort_keys=False) + "\n"
