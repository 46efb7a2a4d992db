"""Measure syncscan on the mutation suite (tests/mutation/*.toml).

    python bench/mutations.py [--id ID ...] [--release X ...] [--quiet]

Each entry re-introduces a bug of families 1-3 into a fixed vLLM release (or makes
a behaviour-preserving edit); this applies it to a scratch copy of the release,
runs `syncscan check --format json`, and compares with the unmodified release.
It prints one row per entry and the totals the issue targets: the share of bugs
reported with the right code at the right function (a finding new by fingerprint,
located at an expected function or found from it as the step root), and how many
benign edits changed the findings (code, severity, function or mode). It is a
measurement; the targets are asserted by `pytest -m mutation`. Exit status 0
unless syncscan itself failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import FAMILY_CODE, load_mutations  # noqa: E402
from measure import Outcome, run_mutations, totals  # noqa: E402


def short(qualname: str) -> str:
    """`module.Class.method` of a qualname: tells V1 from V2 runners; the TOML has the rest."""
    return ".".join(qualname.rsplit(".", 3)[-3:])


def table(outcomes: list[Outcome]) -> str:
    """A fixed-width table: id, kind, family, release, expected, verdict, got."""
    rows = [("id", "kind", "fam", "release", "expected", "verdict", "got")]
    for o in outcomes:
        m = o.mutation
        expected = f"{m.code} {short(m.functions[0])}" if m.code else "none"
        rows.append((m.id, m.kind, str(m.family), m.release, expected, o.verdict, o.got))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:6], widths, strict=True))
        + "  "
        + row[6]
        for row in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--id", action="append", default=[], help="only these entries")
    parser.add_argument("--release", action="append", default=[], help="only these releases")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    mutations = [
        m
        for m in load_mutations()
        if (not args.id or m.id in args.id) and (not args.release or m.release in args.release)
    ]
    if not mutations:
        parser.error("no mutation entry matches")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    outcomes = run_mutations(mutations, None if args.quiet else progress)
    print(table(outcomes))
    t = totals(outcomes)
    print()
    print(f"bugs reported at the right code + function: {t.reported}/{t.bugs} ({t.recall:.0%})")
    for family in sorted(FAMILY_CODE):
        fam = [o for o in outcomes if o.mutation.family == family and o.mutation.kind == "bug"]
        hit = sum(o.verdict == "reported" for o in fam)
        print(f"  family {family}: {hit}/{len(fam)}")
    print(f"benign edits that changed the findings: {t.changed}/{t.benign}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
