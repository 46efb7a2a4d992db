"""What a rule is, and what it reports.

A rule is one class in one module: its code, name, default severity, the
documentation in four parts (what it does, why it is bad, example, use
instead), the reference remedy, VALID and INVALID example projects that the
test suite runs, and `check`, which turns the analysis into findings.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from syncscan.flow.modes import is_per_step
from syncscan.flow.state import WitnessStep

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.step import RootAnalysis, StepPath, StepRoot
    from syncscan.packs import PackSet


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    column: int
    function: str
    note: str = ""


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: str  # error | warning | note
    confidence: str  # high | medium | low
    message: str
    location: Location
    step_root: str
    mode: tuple[tuple[str, bool], ...]
    mode_label: str
    witness: tuple[WitnessStep, ...]
    remedy: str
    related: tuple[Location, ...] = ()
    fingerprint: str = ""

    def sort_key(self) -> tuple:
        return (
            self.location.path,
            self.location.line,
            self.location.column,
            self.code,
            self.fingerprint,
        )


def shared_mode(paths: list[StepPath], packs: PackSet) -> tuple[tuple[str, bool], ...]:
    """The instance mode every path of a finding shares: its assumptions, less the
    per-step data a path decided (an idle step, an attribute the step set)."""
    shared = set(paths[0].state.assumptions)
    for other in paths[1:]:
        shared &= set(other.state.assumptions)
    idle = packs.vocabulary.names("idle_conditions")
    return tuple(sorted((k, v) for k, v in shared if not is_per_step(k, idle)))


def predicates_text(mode: tuple[tuple[str, bool], ...]) -> str:
    """`self.encoder_only=true, dummy_run=false`: a mode as its predicates ("" for none)."""
    return ", ".join(f"{k}={'true' if v else 'false'}" for k, v in mode)


def mode_label(mode: tuple[tuple[str, bool], ...], packs: PackSet) -> str:
    """A mode as a finding names it: the packs' labels, else its predicates."""
    return packs.labels_text(mode) or predicates_text(mode) or "every mode"


def root_step(root: StepRoot, analysis: Analysis, note: str) -> WitnessStep:
    """A witness step at the step root's `def` line."""
    module = analysis.program.module_of(root.function.qualname)
    path = analysis.project.relpath(module.path) if module else ""
    return WitnessStep(path, root.function.line, root.function.qualname, note)


def finding_to_data(finding: Finding) -> dict[str, Any]:
    """Plain JSON-compatible data (for the run record)."""
    return asdict(finding)


def finding_from_data(data: dict[str, Any]) -> Finding:
    """Inverse of `finding_to_data`."""
    return Finding(
        **{
            **data,
            "location": Location(**data["location"]),
            "mode": tuple((k, v) for k, v in data["mode"]),
            "witness": tuple(WitnessStep(**step) for step in data["witness"]),
            "related": tuple(Location(**site) for site in data["related"]),
        }
    )


def fingerprint(*parts: str) -> str:
    """A stable identity for a finding that does not depend on line numbers."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:20]


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
