"""What a rule is, and what it reports.

A rule is one class in one module: its code, name, default severity, the
documentation in four parts (what it does, why it is bad, example, use
instead), the reference remedy, VALID and INVALID example projects that the
test suite runs, and `check`, which turns the analysis into findings.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from syncscan.findings import (  # noqa: F401 - the rules' vocabulary, re-exported
    Finding,
    Location,
    WitnessStep,
    finding_from_data,
    finding_to_data,
    fingerprint,
    predicates_text,
)

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.step import RootAnalysis, StepPath, StepRoot
    from syncscan.packs import PackSet


def shared_mode(paths: list[StepPath], packs: PackSet) -> tuple[tuple[str, bool], ...]:
    """The instance mode every path of a finding shares: its assumptions, less the
    per-step data a path decided (an idle step, an attribute the step set)."""
    shared = set(paths[0].state.assumptions)
    for other in paths[1:]:
        shared &= set(other.state.assumptions)
    from syncscan.flow.modes import is_per_step  # the analysis: loaded when a rule runs

    idle = packs.vocabulary.names("idle_conditions")
    return tuple(sorted((k, v) for k, v in shared if not is_per_step(k, idle)))


def mode_label(mode: tuple[tuple[str, bool], ...], packs: PackSet) -> str:
    """A mode as a finding names it: the packs' labels, else its predicates."""
    return packs.labels_text(mode) or predicates_text(mode) or "every mode"


def root_step(root: StepRoot, analysis: Analysis, note: str) -> WitnessStep:
    """A witness step at the step root's `def` line."""
    module = analysis.program.module_of(root.function.qualname)
    path = analysis.project.relpath(module.path) if module else ""
    return WitnessStep(path, root.function.line, root.function.qualname, note)


@dataclass(frozen=True)
class Example:
    """A small project: files by relative path, plus the pack it is analysed with."""

    files: dict[str, str]
    pack: str
    expect: int = 0  # findings of this rule expected
    title: str = ""


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[str]
    summary: ClassVar[str]
    remedy: ClassVar[str]
    VALID: ClassVar[list[Example]]
    INVALID: ClassVar[list[Example]]
    # What a finding's `step_root` names, as reports label it.
    root_kind: ClassVar[str] = "step root"

    def finding(self, analysis: Analysis, **fields: Any) -> Finding:
        """A finding of this rule: its code and name, its remedy unless `fields`
        give one, at the severity the project's configuration sets (else the
        rule's own)."""
        fields.setdefault("remedy", self.remedy)
        severity = analysis.project.config.severity.get(self.code, self.severity)
        return Finding(code=self.code, name=self.name, severity=severity, **fields)

    @classmethod
    def documentation(cls) -> str:
        """The docstring as markdown, without the class body's indentation."""
        return inspect.cleandoc(cls.__doc__ or "")

    def check(self, analysis: Analysis) -> list[Finding]:
        raise NotImplementedError


class StepRule(Rule):
    """A rule judged per step root: each root's paths give its findings."""

    def check(self, analysis: Analysis) -> list[Finding]:
        findings: list[Finding] = []
        for result in analysis.step_results:
            findings.extend(self.root_findings(result, analysis))
        return findings

    def root_findings(self, result: RootAnalysis, analysis: Analysis) -> list[Finding]:
        raise NotImplementedError
