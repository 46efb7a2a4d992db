"""The step protocol: roots, phases, deferred waits, and each path's verdict.

A step is bounded when, on its path, a host wait is ordered after the step's
device reads of the pinned buffers it wrote: inline; deferred through the
returned object's resolution method (which the engine calls before admitting
more steps); or at the start of the next step, before its first write, on an
event recorded after this step's last write (the semaphore form).
"""

from __future__ import annotations

from dataclasses import dataclass

from syncscan.flow.state import DEVICE_BARRIER, PathState, WitnessStep
from syncscan.flow.walk import Incomplete, ReturnInfo, Walker, with_fall_through
from syncscan.index.summary import FunctionSummary
from syncscan.packs import PackSet, StepRootSpec
from syncscan.resolve.program import Program

UNBOUNDED = "unbounded"


@dataclass(frozen=True)
class StepRoot:
    function: FunctionSummary
    self_class: str
    continuation: tuple[str, ...]
    spec: StepRootSpec

    @property
    def name(self) -> str:
        return f"{self.self_class}.{self.function.name}"


@dataclass(frozen=True)
class StepPath:
    """One way a step can end, with what it did and why it is (un)bounded."""

    state: PathState
    returns: tuple[ReturnInfo, ...]
    verdict: str
    reason: str


@dataclass
class RootAnalysis:
    root: StepRoot
    paths: list[StepPath]
    incomplete: str | None = None


def find_roots(program: Program, packs: PackSet) -> tuple[list[StepRoot], list[str]]:
    """Step roots named by the packs; a root that does not exist is reported."""
    roots: list[StepRoot] = []
    missing: list[str] = []
    for spec in packs.step_roots:
        if program.find_class(spec.cls) is None:
            missing.append(f"step root class {spec.cls} (pack {spec.pack}) is not in the tree")
            continue
        # A subclass that inherits the step unchanged is analysed with its base.
        versions = program.overrides(spec.cls, spec.method)
        if not spec.subclasses:
            versions = [(c, m) for c, m in versions if c == spec.cls]
        if not versions or versions[0][0] != spec.cls:
            missing.append(f"step root {spec.cls}.{spec.method} does not exist")
        roots.extend(StepRoot(m, c, spec.continuation, spec) for c, m in versions)
    return roots, missing


class StepAnalyzer:
    def __init__(self, program: Program, walker: Walker, packs: PackSet) -> None:
        self.program = program
        self.walker = walker
        self.packs = packs
        self._resolution_cache: dict[str, str | None] = {}

    def analyse(self, root: StepRoot) -> RootAnalysis:
        self.walker.work = 0
        try:
            finals = self._run_phases(root)
        except Incomplete as exc:
            return RootAnalysis(root, [], incomplete=str(exc))
        except RecursionError:  # a shape no depth limit foresaw: say so, never crash
            return RootAnalysis(root, [], incomplete="code nested too deeply to follow")
        unique: dict[tuple, tuple[PathState, tuple[ReturnInfo, ...]]] = {}
        for state, returns in finals:
            unique.setdefault((state.key(), returns), (state, returns))
        paths = [self._verdict(state, returns) for state, returns in unique.values()]
        return RootAnalysis(root, _bound_by_mode(paths))

    # ------------------------------------------------------------------ phases
    def _run_phases(self, root: StepRoot) -> list[tuple[PathState, tuple[ReturnInfo, ...]]]:
        """Phase one, then (where it returned None) each continuation method.

        The states reaching one `return None` continue together, so the
        walker's joins merge them as they do inside any function.
        """
        frame = self.walker.frame_for(
            root.function, root.self_class, "self", (), root.function.flag_params
        )
        assert frame is not None
        fall, exits = self.walker.run(frame, [PathState()])
        continuations = [
            m
            for name in root.continuation
            if (m := self.program.find_method(root.self_class, name)) is not None
        ]
        finals: list[tuple[PathState, tuple[ReturnInfo, ...]]] = []
        continuing: dict[ReturnInfo, list[PathState]] = {}
        for exit_ in with_fall_through(exits, fall, frame):
            if exit_.ret.is_none and continuations:
                continuing.setdefault(exit_.ret, []).append(exit_.state)
            else:
                finals.append((exit_.state, (exit_.ret,)))
        for ret, states in continuing.items():
            for method in continuations:
                cont = self.walker.frame_for(method, root.self_class, "self", (), frozenset())
                assert cont is not None
                c_fall, c_exits = self.walker.run(cont, states)
                for e in with_fall_through(c_exits, c_fall, cont):
                    finals.append((e.state, (ret, e.ret)))
        return finals

    # ------------------------------------------------------------------ verdicts
    def _verdict(self, state: PathState, returns: tuple[ReturnInfo, ...]) -> StepPath:
        if state.write is None:
            return StepPath(
                state, returns, "no pinned writes", "writes no persistent pinned buffer"
            )
        if state.reader is None:
            return StepPath(
                state, returns, "no device reader", "no device work follows its pinned writes"
            )
        if not state.in_flight:
            return StepPath(state, returns, "waits inline", "a host wait follows its launches")
        final = returns[-1]
        for t in sorted(final.types):
            method = self._waiting_resolution(t)
            if method is not None:
                return StepPath(
                    state, returns, "deferred",
                    f"returns {t.rsplit('.', 1)[-1]}, whose {method}() waits on the host",
                )  # fmt: skip
        event = state.semaphore()
        if event is not None:
            what = "a full-device wait" if event == DEVICE_BARRIER else f"event {event}"
            return StepPath(
                state, returns, "semaphore",
                f"{what} is waited before the first pinned write and recorded after the last",
            )  # fmt: skip
        for predicate, value in state.assumptions:
            reason = self.packs.bounded_reason(predicate, value)
            if reason is not None:
                return StepPath(state, returns, "bounded by peer", reason)
        return StepPath(state, returns, UNBOUNDED, "no host wait, inline or deferred")

    def _waiting_resolution(self, class_qualname: str) -> str | None:
        """The resolution method of `class_qualname` that waits on every path."""
        if class_qualname in self._resolution_cache:
            return self._resolution_cache[class_qualname]
        found = None
        if self.program.find_class(class_qualname) is not None:
            for name in sorted(self.packs.resolution_methods):
                method = self.program.find_method(class_qualname, name)
                if method is None:
                    continue
                frame = self.walker.frame_for(method, class_qualname, None)
                if frame is None:
                    continue
                probe = PathState(
                    write=(WitnessStep("", 0, "", "probe"),),
                    reader=(WitnessStep("", 0, "", "probe"),),
                    in_flight=True,
                )
                try:
                    fall, exits = self.walker.run(frame, [probe])
                except Incomplete:
                    continue
                ends = fall + [e.state for e in exits]
                if ends and all(not s.in_flight for s in ends):
                    found = name
                    break
        self._resolution_cache[class_qualname] = found
        return found


def _compatible(a: tuple[tuple[str, bool], ...], b: tuple[tuple[str, bool], ...]) -> bool:
    other = dict(b)
    return all(other.get(k, v) == v for k, v in a)


# How a bounded step waits, as the end of "the mode's other steps ...".
_WAITS = {
    "waits inline": "wait inline",
    "deferred": "wait through their deferred output",
    "semaphore": "wait at the start of the next step",
}


def _bound_by_mode(paths: list[StepPath]) -> list[StepPath]:
    """An unwaited exit taken only on some steps of a mode that otherwise waits
    is bounded by those steps: the host cannot run ahead of the mode for long."""
    bounded: dict[tuple[tuple[str, bool], ...], str] = {}
    for p in paths:
        if p.verdict in ("waits inline", "deferred", "semaphore"):
            bounded.setdefault(p.state.assumptions, p.verdict)
    peer_of: dict[tuple[tuple[str, bool], ...], str | None] = {}
    out: list[StepPath] = []
    for path in paths:
        if path.verdict == UNBOUNDED:
            mode = path.state.assumptions
            if mode not in peer_of:
                peer_of[mode] = next(
                    (v for other, v in bounded.items() if _compatible(mode, other)), None
                )
            peer = peer_of[mode]
            if peer is not None:
                out.append(
                    StepPath(
                        path.state,
                        path.returns,
                        "bounded by the mode's other steps",
                        f"a data-dependent exit; the mode's other steps {_WAITS[peer]}",
                    )
                )
                continue
        out.append(path)
    return out
