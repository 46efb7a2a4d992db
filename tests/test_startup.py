"""Start-up cost: what a command imports is what it needs.

`syncscan --version` answers before anything heavy loads, `rules` and
`explain` read the rules' documentation without the engine, and a check whose
findings are reused from the last run never imports the analysis (the flow
engine, the call graph, the indexer) nor the other report formats.
Each case runs in a fresh interpreter, so the modules loaded are the command's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import FIXTURES, copy_project
from syncscan.rules import CODES, ROOT_KINDS, all_rules

PROBE = """
import json, sys
from syncscan.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
# The engine: the walk and what it stands on, the resolvers, the indexer.
HEAVY = (
    "syncscan.flow.walk",
    "syncscan.flow.context",
    "syncscan.flow.state",
    "syncscan.resolve.callgraph",
    "syncscan.resolve.types",
    "syncscan.index.build",
)


def loaded(*argv: str) -> list[str]:
    """The modules a fresh interpreter holds after `syncscan argv...`."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(HEAVY)]


def test_version_imports_nothing_heavy() -> None:
    modules = loaded("--version")
    assert heavy(modules) == []
    assert not [m for m in modules if m.startswith(("rich", "syncscan.runner", "libcst"))]


def test_documenting_the_rules_loads_no_analysis() -> None:
    assert heavy(loaded("rules")) == []
    assert heavy(loaded("explain", "SYNC004")) == []


def test_a_reused_check_never_loads_the_analysis(tmp_path: Path) -> None:
    project = copy_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy", tmp_path / "p")
    cache = str(tmp_path / "cache")
    argv = ("check", str(project), "--cache-dir", cache, "--format", "json", "--exit-zero")
    first = loaded(*argv)
    assert "syncscan.flow.walk" in first  # the probe sees an analysis when there is one
    again = loaded(*argv)
    assert heavy(again) == []
    assert "syncscan.report.json_report" in again
    assert not [m for m in again if m.startswith(("syncscan.report.sarif", "libcst"))]
    assert not [m for m in again if m.startswith("multiprocessing")]  # no process to make


def test_a_reused_check_prints_its_findings_without_the_indexer_or_the_rules(
    tmp_path: Path,
) -> None:
    """The text report off a terminal (the pre-commit case): findings are plain
    data, a rule's root kind is data, and code frames are plain lines, so
    neither the IR, the rule modules nor pygments load."""
    project = copy_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy", tmp_path / "p")
    argv = ("check", str(project), "--cache-dir", str(tmp_path / "cache"), "--exit-zero")
    assert "syncscan.index.ir" in loaded(*argv)  # the first run analyses
    again = loaded(*argv)
    assert "syncscan.report.console" in again
    unwanted = ("syncscan.index.ir", "syncscan.index.summary", "syncscan.rules.sync", "pygments")
    assert not [m for m in again if m.startswith(unwanted)]


def test_rule_codes_known_without_the_rules_are_the_rules() -> None:
    assert tuple(rule.code for rule in all_rules()) == CODES
    kinds = {rule.code: rule.root_kind for rule in all_rules() if rule.root_kind != "step root"}
    assert kinds == ROOT_KINDS
