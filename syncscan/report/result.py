"""RunResult: what one run found, as the reports render it.

It lives with the reports (not the runner that fills it) so report modules
depend only on layers to their left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from syncscan.findings import Diagnostic, Finding
from syncscan.packs import PackSet
from syncscan.project import Project

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis


@dataclass
class RunResult:
    project: Project
    packs: PackSet
    analysis: Analysis | None  # None when the findings were reused (syncscan.reuse)
    findings: list[Finding]  # what is reported, after suppressions/filters/baseline
    diagnostics: list[Diagnostic]
    stats: dict[str, int | float]
    notes: list[str] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    baselined: list[Finding] = field(default_factory=list)

    @property
    def incomplete(self) -> list[Diagnostic]:
        """Skipped files the step path needs: the findings may be missing some."""
        return [d for d in self.diagnostics if d.kind == "incomplete"]

    @property
    def nothing_analysed(self) -> str:
        """Why the run analysed nothing at all ("" when it analysed something)."""
        return nothing_analysed(self.packs, self.stats)

    @property
    def unused_suppressions(self) -> list[Diagnostic]:
        """Present only under --report-unused-ignores; they fail the run."""
        return [d for d in self.diagnostics if d.kind == "unused-suppression"]


_DIAGNOSTIC_LABEL = {
    "skipped": "skipped",
    "incomplete": "incomplete",
    "suppression": "suppression",
    "unused-suppression": "unused suppression",
}


def diagnostic_label(diagnostic: Diagnostic) -> str:
    """What a diagnostic is, in a word or two ("skipped", "unused suppression")."""
    return _DIAGNOSTIC_LABEL.get(diagnostic.kind, diagnostic.kind)


def diagnostic_level(diagnostic: Diagnostic) -> str:
    """An incomplete result fails the run, so it is an error; the rest are warnings."""
    return "error" if diagnostic.kind == "incomplete" else "warning"


def diagnostic_where(diagnostic: Diagnostic) -> str:
    """`path:line`, `path` when the whole file is meant, "" for the run as a whole."""
    if diagnostic.path and diagnostic.line >= 1:
        return f"{diagnostic.path}:{diagnostic.line}"
    return diagnostic.path


def counted(number: int, noun: str) -> str:
    """`1 error`, `3 errors`: a count with its noun, plural when it is not one."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def severity_counts(findings: list[Finding]) -> str:
    """`1 error, 2 warnings`: how many findings of each severity ("" for none)."""
    counts = Counter(finding.severity for finding in findings)
    return ", ".join(counted(n, severity) for severity, n in sorted(counts.items()))


def nothing_analysed(packs: PackSet, stats: dict[str, int | float]) -> str:
    """Why a run analysed nothing ("" when it analysed a step root or quiescence point)."""
    if stats.get("step_roots") or stats.get("quiescence_points"):
        return ""
    active = ", ".join(packs.names) or "none"
    named = len(packs.step_roots) + len(packs.quiescence)
    if named:
        return (
            f"nothing was analysed: none of the {counted(named, 'step root or quiescence point')}"
            f" the active packs name exists in this tree (active packs: {active})"
        )
    return (
        "nothing was analysed: the active packs name no step roots or quiescence points "
        f"(active packs: {active})"
    )
