"""One run: project -> packs -> analysis -> rules -> findings, with statistics.

This is the only place that wires the layers together; the CLI calls it.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from syncscan import baseline, reuse, suppress
from syncscan.findings import Diagnostic, Finding
from syncscan.index.cache import SummaryCache
from syncscan.index.facts import FactsTable
from syncscan.packs import PackSet, load_packs
from syncscan.project import (
    Config,
    ConfigError,
    Project,
    discover,
    find_config,
    load_config,
)
from syncscan.report.result import RunResult, nothing_analysed
from syncscan.rules import CODES

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.kept import Kept
    from syncscan.index.load import FileSummariser
    from syncscan.index.summary import ModuleSummary
    from syncscan.resolve.program import Program
    from syncscan.rules.base import Rule

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Options:
    """How a run filters and reports, beyond what it analyses."""

    changed: tuple[str, ...] | None = None  # report only findings touching these files
    baseline: Path | None = None
    report_unused_ignores: bool = False


def load_project(root: Path, config_file: Path | None = None) -> tuple[Project, PackSet]:
    """Discover files and read configuration and packs (ConfigError on bad input)."""
    if config_file is not None:
        config: Config = load_config(config_file, explicit=True)
    else:
        config = load_config(find_config(root.resolve()))
    project = discover(root, config)
    return project, load_packs(project)


def check_rule_codes(project: Project, select: tuple[str, ...], ignore: tuple[str, ...]) -> None:
    """A code that names no rule is a mistake, not an empty selection."""
    where = project.config.source
    for origin, values in (
        ("--select", select),
        ("--ignore", ignore),
        (f"{where}: 'tool.syncscan.select'", project.config.select),
        (f"{where}: 'tool.syncscan.ignore'", project.config.ignore),
    ):
        for value in values:
            if not any(code.startswith(value.upper()) for code in CODES):
                raise ConfigError(f"{origin}: {value!r} names no rule (rules: {', '.join(CODES)})")
    for value in project.config.severity:
        if value.upper() not in CODES:
            raise ConfigError(
                f"{where}: 'tool.syncscan.severity' names no rule: {value!r} "
                f"(rules: {', '.join(CODES)})"
            )


def selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    if select and not any(code.startswith(s) for s in select):
        return False
    return not any(code.startswith(i) for i in ignore)


def cache_for(project: Project, cache_dir: Path | None, use_cache: bool) -> SummaryCache | None:
    """--cache-dir, else [tool.syncscan] cache_dir, else <root>/.syncscan_cache."""
    if not use_cache:
        return None
    return SummaryCache(cache_dir or project.cache_dir)


def _without_cycle_collection(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` with the cyclic garbage collector paused.

    A run builds millions of small acyclic objects (summaries, path states);
    the collector's repeated passes over them were half of a warm run (vLLM
    0.33: 9.2 s -> 4.1 s, same peak RSS). Reference counting still frees
    everything. Before the collector is restored, the survivors are frozen
    (`gc.freeze`): otherwise its first pass would walk them all (about a
    second on vLLM, spent after the findings are known).
    """

    @wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    return paused


@_without_cycle_collection
def run(
    root: Path,
    config_file: Path | None = None,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    *,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    options: Options | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    jobs: int = 1,
    walk_jobs: int | None = None,
    reuse_findings: bool = False,
) -> RunResult:
    """Analyse `root`; with `reuse_findings` (and a cache), reuse the last run's
    findings while every input they were computed from is unchanged. `jobs`
    processes index a cold tree, `walk_jobs` (default: `jobs`) walk the roots."""
    started = time.perf_counter()
    project, packs = load_project(root, config_file)
    check_rule_codes(project, select, ignore)
    select = select or project.config.select
    ignore = ignore + project.config.ignore
    codes = [code for code in CODES if selected(code, select, ignore)]
    cache = cache_for(project, cache_dir, use_cache)
    facts = FactsTable(project.modules, cache)
    if jobs > 1:
        facts.refresh_apart()
    summariser = _Summariser(cache, jobs)
    key = None
    analysed = None
    analysis = None
    recorded = reuse.Recorded()
    try:
        if reuse_findings and cache is not None:
            key = reuse.inputs_key(project, packs, codes, bool(select))
            recorded = reuse.load(cache, key, facts, _resummariser(project, summariser), project)
            analysed = recorded.analysed
        if analysed is None:
            # The analysis loads only when a run needs it: a check whose
            # findings are reused never imports it (start-up time).
            from syncscan.flow.context import Analysis
            from syncscan.index import reads
            from syncscan.rules import all_rules

            rules = [rule for rule in all_rules() if rule.code in codes]
            walkers = jobs if walk_jobs is None else walk_jobs
            named = frozenset(codes) if select else frozenset()
            kept = reuse.kept(cache, recorded) if key is not None and cache is not None else None
            analysis = Analysis(project, packs, summariser.get(), facts, walkers, named, kept)
            reads.start()  # what the findings are computed from, item by item
            try:
                analysed = _analyse(analysis, summariser.get(), rules, progress)
            finally:
                read = reads.stop()
            analysed.stats["cache_hits"] = cache.hits if cache else 0
            if key is not None and cache is not None:
                if jobs > 1:  # written beside the record (and waited for at `close`)
                    summariser.get().flush(apart=True)
                reuse.save(
                    cache,
                    key,
                    facts,
                    analysis.program,
                    analysed,
                    read,
                    kept,
                    recorded,
                    apart=jobs > 1,
                )
    finally:
        summariser.close()
    result = RunResult(
        project, packs, analysis, analysed.findings,
        analysed.diagnostics + _unreadable(facts, analysed.diagnostics, project),
        dict(analysed.stats), list(analysed.notes),
    )  # fmt: skip
    if analysed.reused:  # what this run did, not what the recorded run did
        result.stats.update(
            parsed=summariser.parsed, cache_hits=0, walk_processes=0, **_kept_stats(None)
        )
    result.stats["findings_reused"] = int(analysed.reused)
    # Files read from disk this run: text scans (where a stat changed) and sources.
    result.stats["read"] = facts.files_read + summariser.files_read
    result.stats["seconds"] = round(time.perf_counter() - started, 3)
    _filter(result, options or Options(), facts, analysed.function_lines)
    return result


def _unreadable(facts: FactsTable, known: list[Diagnostic], project: Project) -> list[Diagnostic]:
    """Files discovery could not name or list, and files the text scan could
    not read (unless a summary already reported them)."""
    found = [Diagnostic(_printable(project.relpath(path)), why) for path, why in project.skipped]
    reported = {d.path for d in known}
    for path, why in sorted(facts.unreadable.items()):
        relpath = project.relpath(path)
        if relpath not in reported:
            found.append(Diagnostic(relpath, f"cannot read: {why}: skipped by the text scan"))
    return found


def _printable(relpath: str) -> str:
    """A path whose name is not UTF-8 on disk, with the odd bytes as `\\xff` escapes
    (every report format can carry it; nothing reads such a file by that name)."""
    return relpath.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class _Summariser:
    """The run's summariser, made on first use: a check whose findings are
    reused summarises nothing unless a file changed, and then imports the
    indexer (and the worker pool) only for that."""

    def __init__(self, cache: SummaryCache | None, jobs: int) -> None:
        self._cache = cache
        self._jobs = jobs
        self._made: FileSummariser | None = None

    def get(self) -> FileSummariser:
        if self._made is None:
            if self._jobs > 1:
                from syncscan.index.prefetch import PrefetchingSummariser

                self._made = PrefetchingSummariser(self._cache, self._jobs, defer_writes=True)
            else:
                from syncscan.index.load import FileSummariser

                self._made = FileSummariser(self._cache, defer_writes=True)
        return self._made

    @property
    def parsed(self) -> int:
        return self._made.parsed if self._made is not None else 0

    @property
    def files_read(self) -> int:
        return self._made.files_read if self._made is not None else 0

    def close(self) -> None:
        close = getattr(self._made, "close", None)
        if close is not None:
            close()


def _resummariser(project: Project, summariser: _Summariser) -> reuse.Resummarise:
    """Summarise one changed module (for the record's early cutoff), or None."""

    def resummarise(module: str) -> ModuleSummary | None:
        from syncscan.index.summary import SummaryError

        try:
            return summariser.get()(project, module, project.modules[module])
        except (SummaryError, KeyError):
            return None

    return resummarise


def _analyse(
    analysis: Analysis,
    summariser: FileSummariser,
    rules: list[type[Rule]],
    progress: Callable[[str, int, int], None] | None,
) -> reuse.Analysed:
    """`progress(phase, done, total)`: "files" (summarised of all) and each phase."""
    from syncscan.completeness import incomplete_roots

    project, packs, program = analysis.project, analysis.packs, analysis.program
    if progress is not None:
        loaded = itertools.count(1)
        program.on_load = lambda module: progress("files", next(loaded), len(project.modules))
        analysis.on_phase = progress
    findings: list[Finding] = []
    for rule_cls in rules:
        findings.extend(rule_cls().check(analysis))
    findings.sort(key=Finding.sort_key)
    analysis.quiescence_results  # noqa: B018 - runs them so their notes are complete
    check_user_rows(analysis)
    notes = list(analysis.notes)
    for result in analysis.step_results:
        if result.incomplete:
            notes.append(f"incomplete: {result.root.name}: {result.incomplete}")
    graph = analysis.callgraph
    stats: dict[str, int | float] = {
        "files": len(project.modules),
        "summarised": program.summarised(),
        "parsed": summariser.parsed,
        "prefetched": summariser.prefetched,
        "step_roots": len(analysis.roots),
        "quiescence_points": sum(1 for q in analysis.quiescence_results if not q.missing),
        "call_graph_nodes": len(graph.graph.nodes),
        "call_graph_edges": len(graph.graph.edges),
        "resolved_calls": graph.resolved_calls,
        "unresolved_calls": graph.unresolved_calls,
        "walk_processes": analysis.walk_processes,
        # What an earlier run kept that this one took instead of making it:
        # callee walks, class analyses, quiescence points, the crawl's visits.
        **_kept_stats(analysis.kept),
    }
    if nothing := nothing_analysed(packs, stats):
        notes.append(nothing)
    # By place, not by when a module was first asked for: a walk taken from an
    # earlier run (stored.py) asks for its modules when it is taken.
    skipped = sorted(program.diagnostics, key=lambda d: (d.path, d.line, d.message))
    diagnostics = skipped + incomplete_roots(analysis, skipped)
    return reuse.Analysed(findings, diagnostics, notes, stats, _function_lines(findings, program))


def _kept_stats(kept: Kept | None) -> dict[str, int]:
    return {
        "walks_reused": kept.walks.used if kept is not None and kept.walks else 0,
        "units_reused": kept.units.taken if kept is not None and kept.units else 0,
        "units_judged": kept.units.judged if kept is not None and kept.units else 0,
        "points_reused": kept.points.taken if kept is not None and kept.points else 0,
        "roots_resumed": kept.roots.resumed if kept is not None and kept.roots else 0,
        "visits_reused": kept.crawl.taken if kept is not None else 0,
    }


def check_user_rows(analysis: Analysis) -> None:
    """A step root or quiescence point the user's own pack names must exist.

    A built-in pack names entries of several releases, so one absent from this
    tree is a note; the user's entry that matches nothing is a typo, and a typo
    that turned the check green would be the worst outcome (ConfigError, exit 2).
    """
    found = {(root.spec, root.self_class) for root in analysis.roots}
    for spec in analysis.packs.step_roots:
        if spec.builtin or (spec, spec.cls) in found:
            continue
        if analysis.program.find_class(spec.cls) is None:
            why = f"class {spec.cls} is not in the project"
        else:
            why = f"class {spec.cls} has no method {spec.method!r}"
        raise ConfigError(
            f"{spec.source}: step_root entry class = {spec.cls!r}, method = {spec.method!r}: "
            f"{why} (pack {spec.pack})"
        )
    for result in analysis.quiescence_results:
        spec = result.spec
        if result.missing and not spec.builtin:
            raise ConfigError(
                f"{spec.source}: quiescence entry function = {spec.function!r}: "
                f"{result.missing} (pack {spec.pack})"
            )


def _function_lines(findings: list[Finding], program: Program) -> dict[str, tuple[str, int, int]]:
    """Each finding's function header: file, first decorator line, `def` line
    (a suppression may sit on any of them)."""
    lines: dict[str, tuple[str, int, int]] = {}
    for finding in findings:
        symbol = program.lookup(finding.location.function)
        if symbol.function is not None and symbol.module is not None:
            lines[finding.location.function] = (
                program.project.relpath(symbol.module.path),
                symbol.function.header_line,
                symbol.function.line,
            )
    return lines


def _filter(
    result: RunResult,
    options: Options,
    facts: FactsTable,
    function_lines: dict[str, tuple[str, int, int]],
) -> None:
    """Suppressions, then the changed-files filter, then the baseline."""
    project = result.project
    comments = suppress.collect(facts, project.relpath)
    report = suppress.apply(result.findings, comments, project.root, function_lines, CODES)
    result.findings = report.kept
    result.suppressed = report.suppressed
    result.diagnostics.extend(report.warnings)
    if options.report_unused_ignores:
        result.diagnostics.extend(report.unused)
    if options.changed is not None:
        changed = set(options.changed)
        result.findings = [f for f in result.findings if touches(f, changed)]
    if options.baseline is not None:
        compared = baseline.compare(result.findings, baseline.read(options.baseline))
        result.findings = compared.new
        result.baselined = compared.known
        result.notes.extend(f"baseline: {s}" for s in compared.stale)


def touches(finding: Finding, changed: set[str]) -> bool:
    """The finding's location, witness or related sites lie in a changed file."""
    paths = {finding.location.path}
    paths.update(step.path for step in finding.witness)
    paths.update(site.path for site in finding.related)
    return bool(paths & changed)
