"""GitHub Actions workflow commands: findings as annotations on the pull request diff.

One `::error` / `::warning` / `::notice` line per finding, at the finding's
file and line, with the witness condensed to `path:line -> ...` so the chain is
visible without leaving the diff. Values are escaped as the runner expects, or
a comma or colon in a message would end the command early.
"""

from __future__ import annotations

from syncscan.findings import Finding, WitnessStep
from syncscan.report.result import (
    RunResult,
    diagnostic_label,
    diagnostic_level,
)

_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(text: str) -> str:
    """Escape the message part of a workflow command (after `::`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (`file=`, `title=`, ...) of a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, properties: dict[str, str], message: str) -> str:
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    head = f"::{name} {props}" if props else f"::{name}"
    return f"{head}::{escape_data(message)}"


def witness_step(step: WitnessStep) -> str:
    return f"{step.path}:{step.line}" if step.path else step.function


def witness_summary(witness: tuple[WitnessStep, ...]) -> str:
    return " -> ".join(witness_step(step) for step in witness)


def joined(prefix: str, path: str) -> str:
    return f"{prefix.rstrip('/')}/{path}" if prefix and prefix != "." else path


def finding_command(finding: Finding, path_prefix: str = "") -> str:
    loc = finding.location
    properties = {
        "file": joined(path_prefix, loc.path),
        "line": str(loc.line),
        "col": str(loc.column),
        "title": f"{finding.code} {finding.name}",
    }
    message = finding.message
    if finding.witness:
        message += f" (witness: {witness_summary(finding.witness)})"
    return command(_COMMAND.get(finding.severity, "error"), properties, message)


def render(result: RunResult, findings: list[Finding], *, path_prefix: str = "") -> str:
    """Workflow command lines. `path_prefix` is the project root relative to the
    repository checkout, for when syncscan runs on a subdirectory."""
    lines = [finding_command(finding, path_prefix) for finding in findings]
    for diagnostic in result.diagnostics:
        where: dict[str, str] = {}
        if diagnostic.path:
            where = {
                "file": joined(path_prefix, diagnostic.path),
                "line": str(max(1, diagnostic.line)),
            }
        where["title"] = f"syncscan: {diagnostic_label(diagnostic)}"
        message = f"{diagnostic_label(diagnostic)}: {diagnostic.message}"
        lines.append(command(diagnostic_level(diagnostic), where, message))
    lines += [command("notice", {"title": "syncscan"}, note) for note in result.notes]
    return "".join(line + "\n" for line in lines)
