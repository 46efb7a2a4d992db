"""One analysis of one project: the program, its oracles and the step results.

Mutable state of a run lives here and only here; rules ask it questions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

from syncscan.apart import can_fork
from syncscan.flow import parallel
from syncscan.flow.buffers import BufferOracle
from syncscan.flow.kept import Kept
from syncscan.flow.modes import ModeOracle
from syncscan.flow.quiescence import QuiescenceAnalyzer, QuiescenceResult, quiescence_functions
from syncscan.flow.step import RootAnalysis, StepAnalyzer, StepRoot, find_roots
from syncscan.flow.walk import Walker
from syncscan.index.facts import FactsTable
from syncscan.index.summary import FunctionSummary
from syncscan.packs import PackSet
from syncscan.project import Project
from syncscan.resolve.callgraph import CallGraph, crawl
from syncscan.resolve.calls import CallResolver
from syncscan.resolve.program import Program, Summariser
from syncscan.resolve.types import TypeOracle

# Call graph nodes from which the roots are walked in parallel (when the run
# may use more than one process).
PARALLEL_MIN_NODES = 500


class Analysis:
    def __init__(
        self,
        project: Project,
        packs: PackSet,
        summariser: Summariser,
        facts: FactsTable,
        jobs: int = 1,
        selected: frozenset[str] = frozenset(),
        kept: Kept | None = None,
    ) -> None:
        self.project = project
        # What an earlier run kept (kept.py): the crawl's visits, the callee
        # walks and the class analyses, taken where nothing they read changed.
        self.kept = kept
        self.jobs = jobs  # processes the run may use (the roots' walks, parallel.py)
        # Rule codes the run selected by name (--select, [tool.syncscan] select):
        # an opt-in rule reports only then.
        self.selected = selected
        self.packs = packs
        self.program = Program(project, summariser, facts)
        self.types = TypeOracle(self.program)
        self.resolver = CallResolver(
            self.program,
            self.types,
            packs.vocabulary.names("launch_decorators"),
            packs.rpc,
            packs.vocabulary.names("other_device_modules"),
            packs.vocabulary.names("effect_free_functions"),
        )
        self.buffers = BufferOracle(self.program, self.types, packs.vocabulary)
        self.notes: list[str] = []
        self.walk_processes = 0  # worker processes the roots were walked in (0: none)
        # The quiescence points' walks under way in a forked process, if started.
        self._points_apart: parallel.Apart | None = None
        # Progress: called with (phase, done, total) as each phase begins.
        self.on_phase: Callable[[str, int, int], None] | None = None

    def _phase(self, phase: str, done: int = 0, total: int = 0) -> None:
        if self.on_phase is not None:
            self.on_phase(phase, done, total)

    @cached_property
    def roots(self) -> list[StepRoot]:
        roots, missing = find_roots(self.program, self.packs)
        self.notes.extend(missing)
        return roots

    @cached_property
    def callgraph(self) -> CallGraph:
        entries = []
        for root in self.roots:
            entries.append((root.function, root.self_class))
            for name in root.continuation:
                method = self.program.find_method(root.self_class, name)
                if method is not None:
                    entries.append((method, root.self_class))
        entries.extend(self.quiescence_entries)
        self._phase("resolve")
        waits = self.packs.vocabulary.names("host_wait_methods")
        visits = self.kept.crawl if self.kept is not None else None
        return crawl(self.program, self.resolver, entries, waits, visits)

    @cached_property
    def quiescence_entries(self) -> list[tuple[FunctionSummary, str | None]]:
        """Every version of every quiescence point, with its `self` class."""
        return [
            entry
            for spec in self.packs.quiescence
            for entry in quiescence_functions(self.program, spec)
        ]

    def _walker(self, entries: list[FunctionSummary], barriers_only: bool) -> Walker:
        """A walker whose mode parameters are the flag parameters of `entries`."""
        modes = ModeOracle(
            self.types,
            self.buffers,
            self.callgraph.assigned_attrs,
            frozenset().union(*(f.flag_params for f in entries)),
            self.packs.vocabulary.names("assume_true"),
            self.packs.vocabulary.names("idle_conditions"),
            self.callgraph.step_flags,
            self.packs.vocabulary.names("positive_attributes"),
            self.packs.vocabulary.names("assume_false"),
        )
        return Walker(
            self.program,
            self.types,
            self.resolver,
            self.buffers,
            modes,
            self.packs.vocabulary,
            barriers_only=barriers_only,
            dead_stores=frozenset((d.function, d.buffer) for d in self.packs.dead_stores),
        )

    @cached_property
    def step_results(self) -> list[RootAnalysis]:
        walker = self._walker([root.function for root in self.roots], barriers_only=False)
        if self.kept is not None:
            self.kept.for_walker(walker.configuration())
            walker.stored = self.kept.walks
        graph = self.callgraph
        # Forking and the paths' trip back cost tens of milliseconds (30 ms on a
        # six-root fixture): worth it only on step paths whose walks take seconds.
        workers = self.jobs if graph.node_count() >= PARALLEL_MIN_NODES else 1
        if workers > 1 and can_fork():
            self._start_points_apart()
        analyzer = StepAnalyzer(
            self.program,
            walker,
            self.packs,
            workers,
            lambda root: graph.reach(root.function, root.self_class),
            self.kept.units if self.kept is not None else None,
            self.kept.roots if self.kept is not None else None,
        )

        def walking(k: int, n: int) -> None:
            self._phase(f"walk root {k} of {n}", k - 1, n)

        results = analyzer.analyse_all(self.roots, walking)
        self.walk_processes = analyzer.processes_used
        return results

    @cached_property
    def sanctioned_regions(self) -> dict[tuple[str, int], frozenset[tuple[str, int, bool]]]:
        """Each `with <sanctioned_sync_contexts>():` region the step walks entered
        ((path, line)), with the host sync sites met inside it ((path, line,
        certain): certain False for a sync only if a tensor is on the device,
        which the walk cannot tell) — SYNC005's recall."""
        regions: dict[tuple[str, int], set[tuple[str, int, bool]]] = {}
        for result in self.step_results:
            for region, sites in result.sanctioned_regions.items():
                regions.setdefault(region, set()).update(sites)
        return {r: frozenset(regions[r]) for r in sorted(regions)}

    @cached_property
    def quiescence_results(self) -> list[QuiescenceResult]:
        """Each quiescence point of the packs, walked counting only device barriers
        (in a forked process beside the step walks, where one was started)."""
        count = len(self.packs.quiescence)
        apart, self._points_apart = self._points_apart, None
        if apart is not None:
            results, news = apart.result()
            if news is not None and self.kept is not None and self.kept.points is not None:
                self.kept.points.adopt_rows(news)
            for k in range(1, count + 1):
                self._phase(f"quiescence point {k} of {count}", k - 1)
        else:
            analyzer = self.points_analyzer
            results = []
            for k, spec in enumerate(self.packs.quiescence, start=1):
                self._phase(f"quiescence point {k} of {count}", k - 1)
                results.append(analyzer.analyse(spec))
        self.notes.extend(r.missing for r in results if r.missing)
        return results

    @cached_property
    def points_analyzer(self) -> QuiescenceAnalyzer:
        """The quiescence points' analyzer, with their store made for its walker."""
        walker = self._walker([f for f, _ in self.quiescence_entries], barriers_only=True)
        kept = self.kept.for_quiescence(walker.configuration()) if self.kept is not None else None
        names = self.packs.vocabulary.names("pending_result_types")
        return QuiescenceAnalyzer(self.program, walker, names, kept)

    def _start_points_apart(self) -> None:
        """The quiescence points, walked in a forked process while the step's
        roots are walked (they read nothing of each other's results): SGLang
        0.5.23's three took 2.5 s after its one step class's walk, on one core
        of two. Their store is made here, as the analyzer makes it; the process
        sends back what it kept in it."""
        if "quiescence_results" in self.__dict__ or not self.packs.quiescence:
            return
        analyzer = self.points_analyzer
        if analyzer.all_kept(self.packs.quiescence):
            return  # taken from the store here in less time than a fork takes

        def points() -> tuple[list[QuiescenceResult], tuple | None]:
            results = [analyzer.analyse(spec) for spec in self.packs.quiescence]
            return results, analyzer.kept.rows_news() if analyzer.kept is not None else None

        self._points_apart = parallel.Apart(points, self.program)
