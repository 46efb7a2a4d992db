"""One analysis of one project: the program, its oracles and the step results.

Mutable state of a run lives here and only here; rules ask it questions.
"""

from __future__ import annotations

from functools import cached_property

from syncscan.flow.buffers import BufferOracle
from syncscan.flow.modes import ModeOracle
from syncscan.flow.step import RootAnalysis, StepAnalyzer, StepRoot, find_roots
from syncscan.flow.walk import Walker
from syncscan.index import ir
from syncscan.packs import PackSet
from syncscan.project import Project
from syncscan.resolve.callgraph import CallGraph, crawl
from syncscan.resolve.calls import CallResolver
from syncscan.resolve.program import Program, Summariser
from syncscan.resolve.types import TypeOracle


class Analysis:
    def __init__(self, project: Project, packs: PackSet, summariser: Summariser) -> None:
        self.project = project
        self.packs = packs
        self.program = Program(project, summariser)
        self.types = TypeOracle(self.program)
        self.resolver = CallResolver(
            self.program, self.types, packs.vocabulary.names("launch_decorators")
        )
        self.buffers = BufferOracle(self.program, self.types, packs.vocabulary)
        self.notes: list[str] = []

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
        return crawl(self.program, self.resolver, entries)

    @cached_property
    def walker(self) -> Walker:
        mode_params = frozenset(
            p.name
            for root in self.roots
            for p in root.function.params
            if isinstance(p.default, ir.Const) and isinstance(p.default.value, bool)
        )
        modes = ModeOracle(self.types, self.buffers, self.callgraph.assigned_attrs, mode_params)
        return Walker(
            self.program, self.types, self.resolver, self.buffers, modes, self.packs.vocabulary
        )

    @cached_property
    def step_results(self) -> list[RootAnalysis]:
        analyzer = StepAnalyzer(self.program, self.walker, self.packs)
        return [analyzer.analyse(root) for root in self.roots]
