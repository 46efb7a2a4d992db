"""Run syncscan on release trees as a user would, and judge mutation outcomes.

The harness drives the `syncscan check --format json` command in a child process,
so it measures the shipped CLI (configuration, suppressions, JSON contract), not
an internal API the engine rewrite may change.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from corpus import CODES, REVIEWED_SEVERITIES, Mutation, Record, apply_mutation, record_from
from engine_trees import fetch_release


class CheckFailed(RuntimeError):
    """syncscan exited with an error (2) or printed no JSON: the measurement is void."""


def check_tree(release: str, tree: Path, cache_dir: Path) -> list[Record]:
    """Findings of `syncscan check` on `tree`, sorted; a private cache per tree.

    The child runs inside the cache directory, so `-m syncscan` imports the syncscan
    installed in this Python, never a `syncscan/` that happens to be in the cwd.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "syncscan",
        "check",
        "--format",
        "json",
        "--exit-zero",
        "--jobs",
        "1",
        "--cache-dir",
        str(cache_dir),
        str(tree),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cache_dir)
    if proc.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError as error:
        raise CheckFailed(f"no JSON report from {' '.join(command)}: {error}") from error
    return sorted(record_from(release, finding) for finding in document["findings"])


@contextmanager
def scratch_copy(release: str) -> Iterator[Path]:
    """A writable copy of the release tree: the shared cache is never edited."""
    with tempfile.TemporaryDirectory(prefix=f"syncscan-mut-{release}-") as tmp:
        tree = Path(tmp) / "src"
        shutil.copytree(fetch_release("vllm", release), tree)
        yield tree


# ---------------------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Outcome:
    """What one mutation did to the findings, against its release's baseline."""

    mutation: Mutation
    new: tuple[Record, ...]  # findings whose fingerprint or identity the baseline lacks
    lost: tuple[Record, ...]  # baseline findings whose fingerprint or identity went away
    # The set of code + severity + function + mode of the families' findings
    # (SYNC001-SYNC004) differs. SYNC005 is not a family here: its finding sits in
    # the function that makes the sync (a benign rename of it moves the finding),
    # and a wait a benign edit adds is what it reports.
    identities_changed: bool

    @property
    def verdict(self) -> str:
        """bug: reported / elsewhere / missed; benign: silent / changed.

        A bug counts as reported when a finding new by fingerprint has the expected
        code and function (the baseline may already hold a finding of the same code,
        function and mode about another buffer). A benign edit is silent while the
        findings' identities are unchanged: a fingerprint that moves with a renamed
        helper is the same finding."""
        if self.mutation.kind == "benign":
            return "changed" if self.identities_changed else "silent"
        if any(self.hits(record) for record in self.new):
            return "reported"
        return "elsewhere" if self.new else "missed"

    def hits(self, record: Record) -> bool:
        """The expected code, at an expected function, found from it as the root,
        or with it on the witness path.

        A SYNC003 finding sits at the write, which may be three calls below the step
        whose guard the mutation broke; the root names that step. A write made by
        the next step (another entry point) has that entry point on its witness."""
        located = {
            record.function,
            record.step_root,
            *record.witness_functions,
        } & set(self.mutation.functions)
        return (
            record.code == self.mutation.code
            and bool(located)
            and record.severity in REVIEWED_SEVERITIES
        )

    @property
    def got(self) -> str:
        parts = [_describe(r) for r in self.new] + [f"-{_describe(r)}" for r in self.lost]
        return "; ".join(parts) or "-"


def _identity(record: Record) -> tuple[str, str, str, str]:
    return (record.code, record.severity, record.function, record.mode_label)


def _families(records: list[Record]) -> set[tuple[str, str, str, str]]:
    return {_identity(r) for r in records if r.code in CODES}


def _describe(record: Record) -> str:
    mode = f" [{record.mode_label}]" if record.mode_label else ""
    return f"{record.code}/{record.severity} {record.function}{mode}"


def _absent(records: list[Record], others: list[Record]) -> tuple[Record, ...]:
    """`records` whose fingerprint or identity none of `others` has."""
    prints = {r.fingerprint for r in others}
    identities = {_identity(r) for r in others}
    return tuple(
        r for r in records if r.fingerprint not in prints or _identity(r) not in identities
    )


def compare(mutation: Mutation, baseline: list[Record], mutated: list[Record]) -> Outcome:
    """New and lost findings of the mutated tree against the baseline (never by line)."""
    return Outcome(
        mutation=mutation,
        new=_absent(mutated, baseline),
        lost=_absent(baseline, mutated),
        identities_changed=_families(baseline) != _families(mutated),
    )


def run_mutations(
    mutations: list[Mutation], progress: Callable[[str], None] | None = None
) -> list[Outcome]:
    """Each mutation applied alone to a scratch copy of its release, checked, undone.

    One copy and one cache per release: the baseline run fills the cache, so each
    mutated run re-reads only the edited file.
    """
    outcomes: list[Outcome] = []
    for release in sorted({m.release for m in mutations}):
        with scratch_copy(release) as tree:
            cache = tree.parent / "cache"
            baseline = check_tree(release, tree, cache)
            if progress:
                progress(f"{release}: baseline {len(baseline)} finding(s)")
            for mutation in (m for m in mutations if m.release == release):
                original = apply_mutation(mutation, tree)
                try:
                    mutated = check_tree(release, tree, cache)
                finally:
                    (tree / mutation.file).write_text(original, encoding="utf-8")
                outcome = compare(mutation, baseline, mutated)
                if progress:
                    progress(f"{release}: {mutation.id}: {outcome.verdict}")
                outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: o.mutation.id)


@dataclass(frozen=True)
class Totals:
    bugs: int
    reported: int
    benign: int
    changed: int

    @property
    def recall(self) -> float:
        return self.reported / self.bugs if self.bugs else 1.0


def totals(outcomes: list[Outcome]) -> Totals:
    bugs = [o for o in outcomes if o.mutation.kind == "bug"]
    benign = [o for o in outcomes if o.mutation.kind == "benign"]
    return Totals(
        bugs=len(bugs),
        reported=sum(o.verdict == "reported" for o in bugs),
        benign=len(benign),
        changed=sum(o.verdict == "changed" for o in benign),
    )
