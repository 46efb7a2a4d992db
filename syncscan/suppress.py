"""Suppressions: `# syncscan: ignore[SYNC001] <reason>` comments.

A suppression applies to a finding when it sits on any line of the flagged
statement or on the `def` line (or a decorator line) of the flagged function.
A suppression without a reason still applies but is reported; a malformed one
(no codes, lower-case codes, a code that names no rule) applies to nothing and
is reported on every run; unused ones are reported on request. Each report is a
Diagnostic with its path and line, so every format carries it.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from syncscan.findings import Diagnostic, Finding
from syncscan.index.comments import Suppression
from syncscan.index.facts import FactsTable


@dataclass(frozen=True)
class SuppressionReport:
    kept: list[Finding]
    suppressed: list[Finding]
    warnings: list[Diagnostic]  # malformed, unknown codes, no reason: shown on every run
    unused: list[Diagnostic]  # reported with --report-unused-ignores


def statement_lines(source: str, line: int) -> range:
    """The lines of the logical statement starting at `line` (1-based)."""
    lines = source.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        return range(line, line + 1)
    tail = "".join(lines[line - 1 :])
    end = line
    try:
        for token in tokenize.generate_tokens(io.StringIO(tail).readline):
            end = line + token.end[0] - 1
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return range(line, end + 1)


def apply(
    findings: list[Finding],
    suppressions: dict[str, tuple[Suppression, ...]],
    root: Path,
    function_lines: dict[str, tuple[str, int, int]],
    rule_codes: tuple[str, ...],
) -> SuppressionReport:
    """Split findings into kept and suppressed, and audit the comments used.

    `suppressions` maps a relative path to the suppression comments in it;
    `function_lines` maps a function qualname to (relative path, first decorator
    line, `def` line); `rule_codes` are every rule's code (a suppression naming
    none of them is a mistake).
    """
    warnings: list[Diagnostic] = []
    valid: dict[str, tuple[Suppression, ...]] = {}
    for path, items in sorted(suppressions.items()):
        for item in items:
            problem = item.problem or _unknown_codes(item, rule_codes)
            if problem:
                written = f"ignore[{','.join(item.codes)}]" if item.codes else "ignore"
                warnings.append(Diagnostic(path, f"{written}: {problem}", item.line, "suppression"))
        valid[path] = tuple(
            item for item in items if not item.problem and not _unknown_codes(item, rule_codes)
        )
    suppressions = {path: items for path, items in valid.items() if items}
    sources: dict[str, str] = {}
    used: set[tuple[str, int]] = set()
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for finding in findings:
        hit = _match(finding, suppressions, sources, root, function_lines)
        if hit is None:
            kept.append(finding)
        else:
            used.add(hit)
            suppressed.append(finding)
    unused: list[Diagnostic] = []
    for path, items in sorted(suppressions.items()):
        for item in items:
            codes = ",".join(item.codes)
            if not item.reason:
                why = f"ignore[{codes}] has no reason: say why after the code"
                warnings.append(Diagnostic(path, why, item.line, "suppression"))
            if (path, item.line) not in used:
                why = f"ignore[{codes}] suppresses nothing"
                unused.append(Diagnostic(path, why, item.line, "unused-suppression"))
    warnings.sort(key=lambda d: (d.path, d.line, d.message))
    return SuppressionReport(kept, suppressed, warnings, unused)


def _unknown_codes(item: Suppression, rule_codes: tuple[str, ...]) -> str:
    """Why `item` names no rule ("" when every code is, or prefixes, a rule code)."""
    unknown = [c for c in item.codes if not any(code.startswith(c) for code in rule_codes)]
    if not unknown:
        return ""
    return f"{unknown[0]!r} names no rule (rules: {', '.join(rule_codes)}); it suppresses nothing"


def _match(
    finding: Finding,
    by_path: dict[str, tuple[Suppression, ...]],
    sources: dict[str, str],
    root: Path,
    function_lines: dict[str, tuple[str, int, int]],
) -> tuple[str, int] | None:
    candidates: list[tuple[str, range]] = []
    loc = finding.location
    source = _source(loc.path, sources, root)
    if source is not None:
        candidates.append((loc.path, statement_lines(source, loc.line)))
    header = function_lines.get(loc.function)
    if header is not None:
        path, first, def_line = header
        candidates.append((path, range(first, def_line + 1)))
    for path, lines in candidates:
        for item in by_path.get(path, ()):
            if item.line in lines and _covers(item, finding.code):
                return (path, item.line)
    return None


def _covers(item: Suppression, code: str) -> bool:
    return any(code.startswith(c) for c in item.codes)


def _source(path: str, cache: dict[str, str], root: Path) -> str | None:
    if path not in cache:
        try:
            cache[path] = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    return cache[path]


def collect(facts: FactsTable, relpath) -> dict[str, tuple[Suppression, ...]]:
    """Suppressions of every file, from the file facts (real comments, by tokenize).

    Files the analysis never loaded can still hold stale suppressions, so
    every file counts, not only the summarised ones.
    """
    return {
        relpath(facts.path_of(module)): found.suppressions
        for module, found in facts.all().items()
        if found.suppressions
    }
