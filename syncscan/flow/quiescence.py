"""Quiescence points: does every completion of a transition follow a device barrier?

A transition (pause, sleep, wake-up) reports completion by returning, or by
resolving a future (`set_result`), possibly in a callback registered to run
later. Each completion must come after a full-device barrier that follows the
last launch: work the step loop may still run (`busy_on_entry`), or work the
transition launched itself. The walker runs in barriers-only mode: waiting on
one event or stream, or on a CPU barrier, does not make the device idle.

The path state is reused as it is for steps: `launched` holds the launch that
may still be running (`in_flight`: no barrier has followed it yet).

A point's result is a function of the point, the walker's configuration and
the summary items its walks read: a run keeps it (stored_results.py), and the
next run takes it where an edit left them all alone (an edit to the step path
seldom reaches a pause).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from syncscan.findings import WitnessStep
from syncscan.flow.codec import CLASSES
from syncscan.flow.state import PathState, Trace
from syncscan.flow.stored import stable_text
from syncscan.flow.stored_results import StoredResults
from syncscan.flow.walk import RELEASES, Incomplete, Walker, with_fall_through
from syncscan.index import reads
from syncscan.index.summary import FunctionSummary
from syncscan.packs import QuiescenceSpec
from syncscan.resolve.program import Program


@dataclass(frozen=True)
class CompletionSite:
    path: str
    line: int
    function: str
    kind: str  # "returns ..." | "resolves ..."
    lacking: bool  # some path reaches it with device work not waited for
    launch: Trace | None  # the work that may still run
    barrier: Trace | None  # the barrier that covers it, when there is one
    column: int = 1


@dataclass
class QuiescenceResult:
    spec: QuiescenceSpec
    functions: list[str]  # the overrides analysed, shown by the audit
    sites: list[CompletionSite] = field(default_factory=list)
    cpu_barriers: list[WitnessStep] = field(default_factory=list)
    incomplete: str | None = None
    missing: str | None = None


POINTS_FORMAT = 1  # of quiescence.json (stored_results.py)
# Every class a kept point's result holds, by the name its rows carry.
KEPT_CLASSES = {**CLASSES, "CompletionSite": CompletionSite}


def quiescence_functions(
    program: Program, spec: QuiescenceSpec
) -> list[tuple[FunctionSummary, str | None]]:
    """The spec's function, and (per subclass) the version each subclass runs."""
    owner, _, name = spec.function.rpartition(".")
    if program.find_class(owner) is None:
        symbol = program.lookup(spec.function)
        return [(symbol.function, None)] if symbol.function is not None else []
    out: list[tuple[FunctionSummary, str | None]] = []
    classes = [owner, *(program.subclasses(owner, name) if spec.subclasses else ())]
    for cls_name in classes:
        if cls_name in spec.exclude:
            continue
        method = program.find_method(cls_name, name)
        if method is not None:
            out.append((method, cls_name))
    return out


class QuiescenceAnalyzer:
    def __init__(
        self,
        program: Program,
        walker: Walker,
        pending_types: frozenset[str],
        kept: StoredResults | None = None,
    ):
        self.program = program
        self.walker = walker
        self.pending_types = pending_types
        self.kept = kept  # the points' results an earlier run kept (quiescence.json)

    def all_kept(self, specs: Iterable[QuiescenceSpec]) -> bool:
        """Whether an earlier run kept each point's result and no change
        touched what it read: they are taken, not walked (vLLM 0.33.0 after
        an edit to its step root: 3 ms, where forking a process for them
        cost 9 ms and its wait 6)."""
        return self.kept is not None and all(self.kept.holds(_kept_key(s)) for s in specs)

    def analyse(self, spec: QuiescenceSpec) -> QuiescenceResult:
        """The point's result: kept by an earlier run where nothing it read
        changed (it asks for what analysing it would ask), else analysed, and
        kept for the next run."""
        if self.kept is None:
            return self._analysed(spec)
        key = _kept_key(spec)
        taken = self.kept.take(key, _plausible)
        if taken is not None:
            (functions, sites, cpu_barriers, incomplete, missing), items, _ = taken
            self.program.adopt_read(items)
            # Sorted again: a move may have changed the order of their lines.
            sites = sorted(sites, key=lambda s: (s.path, s.line))
            return QuiescenceResult(spec, functions, sites, cpu_barriers, incomplete, missing)
        outer = reads.push()
        try:
            result = self._analysed(spec)
        finally:
            read = reads.pop(outer)
        if outer is not None:  # what it read is known only where the run records
            kept = [result.functions, result.sites, result.cpu_barriers]
            self.kept.keep(key, [*kept, result.incomplete, result.missing], read, [])
        return result

    def _analysed(self, spec: QuiescenceSpec) -> QuiescenceResult:
        functions = quiescence_functions(self.program, spec)
        result = QuiescenceResult(spec, sorted({f.qualname for f, _ in functions}))
        if not functions:
            result.missing = (
                f"quiescence point {spec.function} (pack {spec.pack}) is not in the tree"
            )
            return result
        sites: dict[tuple[str, int], CompletionSite] = {}
        for function, self_class in functions:
            try:
                self._function(function, self_class, spec, sites, result)
            except Incomplete as exc:
                result.incomplete = str(exc)
            except RecursionError:  # a shape no depth limit foresaw: say so, never crash
                result.incomplete = "code nested too deeply to follow"
        result.sites = sorted(sites.values(), key=lambda s: (s.path, s.line))
        return result

    @staticmethod
    def _entry_state(busy: bool, function: str) -> PathState:
        if not busy:
            return PathState()
        work = WitnessStep(
            "", 0, function, "device work the step loop launched may still be running"
        )
        return PathState(launched=(work,))

    def _function(
        self,
        function: FunctionSummary,
        self_class: str | None,
        spec: QuiescenceSpec,
        sites: dict[tuple[str, int], CompletionSite],
        result: QuiescenceResult,
    ) -> None:
        self.walker.work = 0
        frame = self.walker.frame_for(function, self_class, "self", (), function.flag_params)
        if frame is None:
            return
        entry = self._entry_state(spec.busy_on_entry, spec.function)
        fall, exits, completions, cpu_barriers = self.walker.run_collecting(frame, [entry])
        for end in with_fall_through(exits, fall, frame):
            if end.ret.types & self.pending_types:
                continue  # hands back a pending future: its set_result completes
            kind = f"returns {end.ret.text}"
            where = (frame.relpath, end.ret.line, end.ret.column)
            self._add(sites, where, function.qualname, kind, [end.state])
        # Callbacks defined here run later, when the loop has gone idle: the
        # loop may have launched work until then.
        for nested in function.nested:
            inner = self.walker.frame_for(nested, self_class, "self", (), frozenset())
            if inner is None:
                continue
            busy = self._entry_state(True, spec.function)
            _, _, more, barriers = self.walker.run_collecting(inner, [busy])
            completions = completions + more
            cpu_barriers = cpu_barriers + barriers
        for step, states in completions:
            where = (step.path, step.line, step.column)
            kind = RELEASES if step.note.startswith(RELEASES) else "resolves its future"
            self._add(sites, where, step.function, kind, states)
        result.cpu_barriers.extend(cpu_barriers)

    @staticmethod
    def _add(
        sites: dict[tuple[str, int], CompletionSite],
        where: tuple[str, int, int],
        function: str,
        kind: str,
        states: list[PathState],
    ) -> None:
        path, line, column = where
        lacking = [s for s in states if s.in_flight]
        previous = sites.get((path, line))
        if previous is not None and (previous.lacking or not lacking):
            return
        chosen = lacking[0] if lacking else (states[0] if states else None)
        sites[(path, line)] = CompletionSite(
            path,
            line,
            function,
            kind,
            bool(lacking),
            chosen.launched if chosen else None,
            chosen.wait if chosen and not lacking else None,
            column,
        )


def _kept_key(spec: QuiescenceSpec) -> str:
    """The key a point's result is kept under (quiescence.json): its spec."""
    return stable_text(spec)


def _plausible(value: Any) -> bool:
    """A decoded result with the shape `QuiescenceAnalyzer.analyse` keeps."""
    return (
        isinstance(value, list)
        and len(value) == 5
        and isinstance(value[0], list)
        and all(isinstance(f, str) for f in value[0])
        and isinstance(value[1], list)
        and all(isinstance(s, CompletionSite) for s in value[1])
        and isinstance(value[2], list)
        and all(isinstance(b, WitnessStep) for b in value[2])
        and all(v is None or isinstance(v, str) for v in value[3:])
    )
