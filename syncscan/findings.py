"""What a finding is, as every report and the run record carry it.

Plain data with no analysis behind it: a check whose findings are reused from
the last run, and every output format, read findings without importing the
engine that computed them (rules/base.py re-exports these for the rules).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class WitnessStep:
    """One step of a witness path, as a maintainer follows it in an editor."""

    path: str
    line: int
    function: str
    note: str
    # For a pinned write: what was written ("writes pinned buffer Slots.buf") and
    # the round-robin pool it is a slot of. Rules read these, never the prose note.
    written: str = ""
    pool: str | None = None
    column: int = 1  # 1-based, of the call or statement at `line`


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


def predicates_text(mode: tuple[tuple[str, bool], ...]) -> str:
    """`self.encoder_only=true, dummy_run=false`: a mode as its predicates ("" for none)."""
    return ", ".join(f"{k}={'true' if v else 'false'}" for k, v in mode)


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
class Diagnostic:
    """Something a run could not do or wants a user to fix, at a file and line.

    `kind` says what: "skipped" (a file was not analysed), "incomplete" (a
    skipped file the step path needs: findings may be missing), "suppression"
    (a malformed, blanket or reasonless ignore comment), "unused-suppression".
    `line` is 0 when the whole file is meant.
    """

    path: str
    message: str
    line: int = 0
    kind: str = "skipped"
