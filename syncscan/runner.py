"""One run: project -> packs -> analysis -> rules -> findings, with statistics.

This is the only place that wires the layers together; the CLI calls it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from syncscan.flow.context import Analysis
from syncscan.index.cache import SummaryCache
from syncscan.index.load import FileSummariser
from syncscan.packs import PackSet, load_packs
from syncscan.project import Config, Project, discover, find_config, load_config
from syncscan.resolve.program import Diagnostic
from syncscan.rules import all_rules
from syncscan.rules.base import Finding


@dataclass
class RunResult:
    project: Project
    packs: PackSet
    analysis: Analysis
    findings: list[Finding]
    diagnostics: list[Diagnostic]
    stats: dict[str, int | float]
    notes: list[str] = field(default_factory=list)


def load_project(root: Path, config_file: Path | None = None) -> tuple[Project, PackSet]:
    """Discover files and read configuration and packs (ConfigError on bad input)."""
    config: Config = load_config(config_file or find_config(root.resolve()))
    project = discover(root, config)
    return project, load_packs(project)


def selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    if select and not any(code.startswith(s) for s in select):
        return False
    return not any(code.startswith(i) for i in ignore)


def cache_for(project: Project, cache_dir: Path | None, use_cache: bool) -> SummaryCache | None:
    """--cache-dir, else [tool.syncscan] cache_dir, else <root>/.syncscan_cache."""
    if not use_cache:
        return None
    if cache_dir is None:
        configured = project.config.cache_dir
        cache_dir = Path(configured) if configured else project.root / ".syncscan_cache"
    return SummaryCache(cache_dir)


def run(
    root: Path,
    config_file: Path | None = None,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    *,
    use_cache: bool = True,
    cache_dir: Path | None = None,
) -> RunResult:
    started = time.perf_counter()
    project, packs = load_project(root, config_file)
    cache = cache_for(project, cache_dir, use_cache)
    summariser = FileSummariser(cache)
    analysis = Analysis(project, packs, summariser)
    select = select or project.config.select
    ignore = ignore + project.config.ignore
    findings: list[Finding] = []
    for rule_cls in all_rules():
        if selected(rule_cls.code, select, ignore):
            findings.extend(rule_cls().check(analysis))
    findings.sort(key=Finding.sort_key)
    analysis.quiescence_results  # noqa: B018 - runs them so their notes are complete
    notes = list(analysis.notes)
    for result in analysis.step_results:
        if result.incomplete:
            notes.append(f"incomplete: {result.root.name}: {result.incomplete}")
    if not analysis.roots and not packs.quiescence:
        notes.append(
            "no step roots found: no pack names a step root in this tree "
            f"(active packs: {', '.join(packs.names) or 'none'})"
        )
    graph = analysis.callgraph
    stats: dict[str, int | float] = {
        "files": len(project.modules),
        "summarised": len(analysis.program.loaded()),
        "parsed": summariser.parsed,
        "cache_hits": cache.hits if cache else 0,
        "read": analysis.program.files_read,
        "seconds": round(time.perf_counter() - started, 3),
        "step_roots": len(analysis.roots),
        "call_graph_nodes": graph.graph.number_of_nodes(),
        "call_graph_edges": graph.graph.number_of_edges(),
        "resolved_calls": graph.resolved_calls,
        "unresolved_calls": graph.unresolved_calls,
    }
    return RunResult(
        project, packs, analysis, findings, list(analysis.program.diagnostics), stats, notes
    )
