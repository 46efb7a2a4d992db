"""RunResult: what one run found, as the reports render it.

It lives with the reports (not the runner that fills it) so report modules
depend only on layers to their left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from syncscan.flow.context import Analysis
from syncscan.packs import PackSet
from syncscan.project import Project
from syncscan.resolve.program import Diagnostic
from syncscan.rules.base import Finding


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
    problems: list[str] = field(default_factory=list)  # make the run fail (unused ignores)


def severity_counts(findings: list[Finding]) -> str:
    """`1 error, 2 warning`: how many findings of each severity ("" for none)."""
    counts = Counter(finding.severity for finding in findings)
    return ", ".join(f"{n} {severity}" for severity, n in sorted(counts.items()))
