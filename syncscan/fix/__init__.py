"""`syncscan check --diff` / `--fix`: the reference remedies as libcst codemods,
kept only when re-analysis proves them.

Fed by findings, never read by the analysis (and `check` without a fix flag
never imports libcst). Each rule's codemod (codemods.py) proposes edits
anchored to the original source (edits.py); the patched files are analysed
again in a copy of the project (verify.py), and a fix is kept only if its
finding is gone and no new finding appears. Nothing is written until then.
Fixes are unsafe unless their rule marks them safe (in ruff's sense: a fix
that may change behaviour, here what the code waits for, asks for review);
both are shown by `--diff` and applied by `--fix`, each labelled.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from syncscan.findings import Finding
from syncscan.fix.codemods import CODEMODS, Context, Proposal
from syncscan.fix.edits import EditError, apply
from syncscan.fix.verify import Verifier
from syncscan.report.result import RunResult


@dataclass
class FixOutcome:
    """What `--fix` / `--diff` found: the files to write, and why other findings
    got no fix."""

    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    fixed: list[Proposal] = field(default_factory=list)  # verified, in finding order
    notes: list[tuple[Finding, str]] = field(default_factory=list)
    after: RunResult | None = None  # the analysis of the patched tree

    def diff(self) -> str:
        """A unified diff of every file the fixes change, in path order."""
        chunks = []
        for path, (before, after) in sorted(self.files.items()):
            chunks.extend(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    f"a/{path}",
                    f"b/{path}",
                )
            )
        return "".join(chunks)


def plan_fixes(result: RunResult, rerun: Callable[..., RunResult]) -> FixOutcome:
    """Propose a fix for every finding, apply them together and verify; when
    the whole set fails, keep those that pass on their own."""
    assert result.analysis is not None, "fixes need the analysis, not reused findings"
    ctx = Context(result.project, result.analysis.program, result.packs)
    outcome = FixOutcome()
    proposals: list[Proposal] = []
    for finding in result.findings:
        codemod = CODEMODS.get(finding.code)
        proposal = codemod(finding, ctx) if codemod else Proposal(finding, reason="no codemod")
        if proposal.edits:
            proposals.append(proposal)
        else:
            outcome.notes.append((finding, f"no automatic fix: {proposal.reason}"))
    if not proposals:
        return outcome
    verifier = Verifier(result, rerun)
    kept = _verified(proposals, ctx, verifier, outcome)
    if kept:
        files, after = kept
        outcome.files = files
        outcome.after = after
    return outcome


def _verified(proposals: list[Proposal], ctx: Context, verifier: Verifier, outcome: FixOutcome):
    """(files, analysis) of the largest set of proposals that verifies: all of
    them, else each one that verifies alone (then together)."""
    attempt = _try(proposals, ctx, verifier)
    if attempt[0] is not None:
        outcome.fixed.extend(proposals)
        return attempt[0]
    if len(proposals) == 1:
        outcome.notes.append((proposals[0].finding, f"fix dropped: {attempt[1]}"))
        return None
    good = []
    for proposal in proposals:
        alone = _try([proposal], ctx, verifier)
        if alone[0] is None:
            outcome.notes.append((proposal.finding, f"fix dropped: {alone[1]}"))
        else:
            good.append(proposal)
    if not good:
        return None
    attempt = _try(good, ctx, verifier)
    if attempt[0] is None:
        for proposal in good:
            outcome.notes.append((proposal.finding, f"fix dropped: {attempt[1]}"))
        return None
    outcome.fixed.extend(good)
    return attempt[0]


def _try(proposals: list[Proposal], ctx: Context, verifier: Verifier):
    """((files, analysis), "") when the patched tree verifies, else (None, why)."""
    by_file: dict[str, list] = {}
    for proposal in proposals:
        for edit in proposal.edits:
            by_file.setdefault(edit.path, []).append(edit)
    files: dict[str, tuple[str, str]] = {}
    try:
        for path, edits in sorted(by_file.items()):
            before = ctx.source(path)
            after = apply(before, edits)
            if after != before:
                files[path] = (before, after)
    except (EditError, OSError, UnicodeDecodeError) as error:
        return None, f"cannot edit the source: {error}"
    except Exception as error:  # libcst cannot parse or render this file
        return None, f"cannot edit the source: {type(error).__name__}: {error}"
    if not files:
        return None, "the edits change nothing"
    why, after = verifier.check({p: a for p, (_, a) in files.items()}, proposals)
    if why:
        return None, why
    return (files, after), ""
