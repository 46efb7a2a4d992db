"""Sweep syncscan over every release of an engine and compare with the triage corpus.

    python bench/sweep.py [--engine vllm|sglang] [RELEASE ...] [--output FILE] [--cache-root DIR]

Runs `syncscan check --format json` on each release (default: every release the
engine lists in tests/corpus.py ENGINES, fetched like the tests fetch them),
writes one JSON line per finding (release, code, severity, path, line,
function, mode_label, fingerprint) to FILE (default
bench/results/sweep-ENGINE.jsonl), prints the findings per release by code and
severity, and compares the error/warning findings with the engine's triage file
(tests/triage/ENGINE.toml): verdict counts, the share of error findings that are
bugs, triaged bugs no longer reported, and every unreviewed finding as a TOML
block ready to paste. Exit 1 when a finding is unreviewed or a triaged bug is
lost, so the sweep can gate a release of syncscan.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from corpus import ENGINES, REPO, VERDICTS, Record, load_triage, review, toml_entry  # noqa: E402
from engine_trees import fetch_release  # noqa: E402
from measure import check_tree  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def sweep(
    releases: list[str], cache_root: Path, log: bool = True, engine: str = "vllm"
) -> list[Record]:
    """Findings of every release, in release order; one cache directory per release."""
    records: list[Record] = []
    for release in releases:
        found = check_tree(release, fetch_release(engine, release), cache_root / release)
        if log:
            print(f"swept {release}: {len(found)} finding(s)", file=sys.stderr, flush=True)
        records.extend(found)
    return records


def per_release(records: list[Record], releases: list[str]) -> str:
    """One line per release: findings by code and severity."""
    lines = []
    for release in releases:
        counts = Counter((r.code, r.severity) for r in records if r.release == release)
        text = ", ".join(f"{code} {sev} {n}" for (code, sev), n in sorted(counts.items()))
        lines.append(f"{release:>8}  {text or 'none'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=sorted(ENGINES), default="vllm")
    parser.add_argument("releases", nargs="*", help="default: every release of the engine")
    parser.add_argument("--output", type=Path, help="default: bench/results/sweep-ENGINE.jsonl")
    parser.add_argument("--cache-root", type=Path, help="keep per-release caches here")
    args = parser.parse_args(argv)
    engine = ENGINES[args.engine]
    unknown = [r for r in args.releases if r not in engine.releases]
    if unknown:
        parser.error(f"not a swept {args.engine} release: {', '.join(unknown)}")
    releases = [r for r in engine.releases if not args.releases or r in args.releases]
    output = args.output or RESULTS / f"sweep-{args.engine}.jsonl"

    if args.cache_root:
        records = sweep(releases, args.cache_root, engine=args.engine)
    else:
        with tempfile.TemporaryDirectory(prefix="syncscan-sweep-") as tmp:
            records = sweep(releases, Path(tmp), engine=args.engine)

    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.as_json(), sort_keys=True) + "\n")
    print(f"{len(records)} finding(s) written to {output}")
    print(per_release(records, releases))

    result = review(records, load_triage(args.engine), releases)
    print()
    print(f"reviewed severities: {len(result.records)} finding(s)")
    for verdict in VERDICTS:
        print(f"  {verdict}: {result.count(verdict)} ({result.count(verdict, 'error')} error)")
    share = result.error_bug_share
    print(f"  bug share of error findings: {'n/a' if share is None else f'{share:.1%}'}")
    for release, entry in result.lost:
        status = "LOST bug" if entry.reported else "MISSED bug known from review"
        print(f"{status} in {release}: {entry.code} {entry.function} [{entry.mode}]")
    if result.unreviewed:
        where = engine.triage.relative_to(REPO)
        print(f"\n{len(result.unreviewed)} unreviewed finding(s); add to {where}:\n")
        print("\n".join(toml_entry(r) for r in result.unreviewed))
    return 1 if result.lost or result.unreviewed else 0


if __name__ == "__main__":
    raise SystemExit(main())
