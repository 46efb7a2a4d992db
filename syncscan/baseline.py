"""Baselines: accept today's findings, report only new ones.

A baseline records findings by fingerprint (independent of line numbers), so
unrelated edits do not resurrect accepted findings. Entries that no longer
match any finding are listed, so a fixed bug can leave the baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from syncscan.filesystem import read_regular_text
from syncscan.findings import Finding
from syncscan.project import ConfigError

FORMAT = 1


@dataclass(frozen=True)
class BaselineResult:
    new: list[Finding]
    known: list[Finding]
    stale: list[str]  # descriptions of entries with no matching finding


def write(path: Path, findings: list[Finding]) -> None:
    entries = [
        {
            "fingerprint": f.fingerprint,
            "code": f.code,
            "path": f.location.path,
            "function": f.location.function,
        }
        for f in sorted(findings, key=lambda f: (f.code, f.fingerprint))
    ]
    path.write_text(json.dumps({"syncscan_baseline": FORMAT, "findings": entries}, indent=2) + "\n")


def read(path: Path) -> list[dict[str, str]]:
    try:
        data = json.loads(read_regular_text(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read baseline: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read baseline: {exc}") from exc
    except RecursionError as exc:  # json nests one C call per level
        raise ConfigError(f"{path}: cannot read baseline: nested too deeply") from exc
    if not isinstance(data, dict) or data.get("syncscan_baseline") != FORMAT:
        raise ConfigError(f"{path}: not a syncscan baseline (format {FORMAT})")
    entries = data.get("findings")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in entries
    ):
        raise ConfigError(f"{path}: 'findings' must be a list of entries with a fingerprint")
    return entries


def compare(findings: list[Finding], entries: list[dict[str, str]]) -> BaselineResult:
    accepted = {e["fingerprint"] for e in entries}
    present = {f.fingerprint for f in findings}
    stale = [
        f"{e.get('code', '?')} {e.get('function', '?')} ({e['fingerprint']}) no longer matches"
        for e in entries
        if e["fingerprint"] not in present
    ]
    return BaselineResult(
        new=[f for f in findings if f.fingerprint not in accepted],
        known=[f for f in findings if f.fingerprint in accepted],
        stale=stale,
    )
