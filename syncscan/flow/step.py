"""The step protocol: roots, phases, and each path's verdict on the unrolled loop.

A path of step N leaves device accesses of pinned memory pending unless a host
wait covers them: inline; deferred through the returned object's resolution
method (the engine calls it before admitting more steps: that covers a pool's
slots, which come back only after `depth` steps); or in the next step, whose
host accesses are each ordered after a wait on an event recorded after the
access (the semaphore form). The next step is any path of any root on the same
object in the same instance mode; a host access it makes to what is still
pending, with no such wait before it, is a race.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count
from typing import TYPE_CHECKING, Any, NamedTuple

from syncscan.apart import can_fork
from syncscan.flow import parallel
from syncscan.flow.alternatives import Alternatives
from syncscan.flow.frames import Frame
from syncscan.flow.host_syncs import HostSync, Region, RegionSite
from syncscan.flow.identity import Anchors, root_anchors
from syncscan.flow.keys import assigned_key, entry_path
from syncscan.flow.modes import is_per_step
from syncscan.flow.root_resume import hold_root, root_key, walk_root
from syncscan.flow.state import (
    DEVICE_BARRIER,
    ENTRY_DRAINED,
    HOST_READ,
    PathState,
    Pending,
    Race,
    Trace,
    carried,
    covered_by,
    is_root_parameter,
    is_slot,
    racing_access,
    same_memory,
    site_of,
)
from syncscan.flow.stored import noted_apart
from syncscan.flow.streams import Hazard, StreamFacts, next_step_hazards
from syncscan.flow.verdicts import DISCARDED, OUTSIDE_GUARD, UNBOUNDED
from syncscan.flow.walk import Exit, Incomplete, ReturnInfo, Walker, with_fall_through
from syncscan.index import reads
from syncscan.index.summary import FunctionSummary
from syncscan.packs import PackSet, StepRootSpec
from syncscan.resolve.program import Program

if TYPE_CHECKING:
    from syncscan.flow.stored_roots import StoredRoots
    from syncscan.flow.stored_units import StoredUnits


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
    """One way a step can end, with what it did and why it is (un)bounded.

    `race` is the host write that the happens-before model finds unordered
    with an earlier device access of the same buffer: in this step
    (`across_steps` False) or in the next step the loop runs (`across_steps`).
    """

    state: PathState
    returns: tuple[ReturnInfo, ...]
    verdict: str
    reason: str
    race: Race | None = None
    across_steps: bool = False
    # Races with the writes of the loop's other entry points (a dummy batch),
    # one per entry point: each is a place the guard is missing.
    also: tuple[Race, ...] = ()
    # Accesses of the same memory by two streams with no order between them,
    # in this step or between this step and the next (SYNC004).
    hazards: tuple[Hazard, ...] = ()


@dataclass(frozen=True)
class RulesState(PathState):
    """A path's state as far as the rules read it: its assumptions (the mode),
    its first pinned write and that write's device reader (the witness); the
    rest (pending accesses, events, stream facts: most of a kept class
    analysis) is left at its default. A class analysis taken from the cache
    holds these (stored_units.py): the findings need nothing else, and the
    audit, which reads whole states, refuses them."""


Final = tuple[PathState, tuple[ReturnInfo, ...]]
# A root's result as plain data: paths, why incomplete, host syncs, regions.
Outcome = tuple[
    list[StepPath], str | None, tuple[HostSync, ...], dict[Region, frozenset[RegionSite]]
]


def for_rules(outcome: Outcome) -> Outcome:
    """`outcome` with each path's state reduced to what the rules read (`RulesState`)."""
    paths, incomplete, syncs, regions = outcome
    return (
        [
            replace(p, state=RulesState(p.state.assumptions, p.state.write, reader=p.state.reader))
            for p in paths
        ],
        incomplete,
        syncs,
        regions,
    )


NextStep = tuple[str, Final]  # a path of an entry point, with that entry point's name
# What a root's phases met: its host syncs, and its sanctioned regions with the syncs inside.
Met = tuple[tuple[HostSync, ...], dict[Region, frozenset[RegionSite]]]


@dataclass
class RootAnalysis:
    root: StepRoot
    paths: list[StepPath]
    incomplete: str | None = None
    # The host syncs the step's phases met, with their call chains (SYNC005).
    host_syncs: tuple[HostSync, ...] = ()
    # The sanctioned regions its phases entered, with the syncs met inside.
    sanctioned_regions: dict[Region, frozenset[RegionSite]] = field(default_factory=dict)


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


# The share of the walk budget past which a root walked with kept walks is
# walked again without them: their work is counted as it was when they were
# made, and a fresh walk's may differ a little (SGLang 0.5.23's step root, the
# largest known, counts 204,043 of the 400,000 walking afresh).
NEAR_BUDGET = 0.9


class StepAnalyzer:
    def __init__(
        self,
        program: Program,
        walker: Walker,
        packs: PackSet,
        workers: int = 1,
        cost: Callable[[StepRoot], int] | None = None,
        units: StoredUnits | None = None,
        roots: StoredRoots | None = None,
    ) -> None:
        self.program = program
        # Class analyses an earlier run kept, taken where nothing they read
        # changed, and this run's kept for the next (stored_units.py).
        self.units = units
        # Roots' walks statement by statement, resumed after an edit to a
        # root's body (root_resume.py).
        self.roots = roots
        self.walker = walker
        self.packs = packs
        # Processes to walk the roots in (parallel.py), and each root's expected
        # cost (what the partition balances).
        self.workers = workers
        self.cost = cost
        self.processes_used = 0  # worker processes the last roots were walked in
        # A path's resolution walk, shared by the classes a run analyses: a
        # Memo, so a class that reuses another's names what it was made from.
        self._resolved: reads.Memo[tuple, tuple[str, list[PathState]] | None] = reads.Memo()
        # (end, next step's stream facts) by identity -> their hazards (kept alive with them)
        self._pairs: dict[tuple[int, int], tuple[StreamFacts, StreamFacts, list[Hazard]]] = {}
        # (a's assumptions and alternatives, b's) -> whether b can follow a (`_same_mode`)
        self._modes_paired: dict[tuple, bool] = {}

    def analyse_all(
        self, roots: list[StepRoot], on_root: Callable[[int, int], None] | None = None
    ) -> list[RootAnalysis]:
        """Every root analysed (`on_root(k, n)` as the k-th of n begins, or
        once its class is done where workers analyse them), class by class:
        the entry points of one object judge each other's paths. A class an
        earlier run analysed, none of whose items changed, is taken from it
        (stored_units.py); the others are analysed in worker processes where
        there are workers to use and a fork to make them."""
        groups = _by_class(roots)
        units = [[roots[i] for i in group] for group in groups]
        outcomes: list[list[Outcome] | None] = [self._taken(unit) for unit in units]

        # Every class is kept, a lone one too: taken whole it seldom helps (the
        # findings are then reused whole), but after an edit its root's walk
        # resumed from, its judging is taken (SGLang 0.5.23's scheduler: 4.8 MB,
        # kept as the rules read its paths: `for_rules`).
        def analysed(k: int, out: list[Outcome], items: set[str], walks: list[str]) -> None:
            if self.units is not None:
                self.units.keep_unit(units[k], out, items, walks)
            outcomes[k] = out

        todo = [k for k, outcome in enumerate(outcomes) if outcome is None]
        finished = len(roots) - sum(len(units[k]) for k in todo)  # taken: done already
        workers = min(self.workers, len(todo))
        if workers > 1 and can_fork():
            costs = [sum(self.cost(root) if self.cost else 1 for root in units[k]) for k in todo]
            shares = parallel.partition(costs, workers)
            self.processes_used = len(shares)
            if self.walker.stored is not None:
                self.walker.stored.open()  # read here once: each worker would read it

            def done(index: int) -> None:
                nonlocal finished
                finished += len(units[todo[index]])
                if on_root is not None:
                    on_root(finished, len(roots))

            found = parallel.run_in_workers(
                [units[k] for k in todo], shares, self._worker_outcome, self.program, done
            )
            for k, (out, items, walks, news) in zip(todo, found, strict=True):
                walk_news, root_news, unit_news = news
                if walk_news is not None and self.walker.stored is not None:
                    self.walker.stored.adopt(walk_news)
                if root_news is not None and self.roots is not None:
                    self.roots.adopt(root_news)
                if unit_news is not None and self.units is not None:
                    self.units.adopt(unit_news)
                analysed(k, out, items, walks)
        else:
            if self.workers > 1 and todo:  # one class to walk: its core is this one
                self.program.walking_here()
            started = count(finished + 1)

            def walking(_: StepRoot) -> None:
                if on_root is not None:
                    on_root(next(started), len(roots))

            for k in todo:
                analysed(k, *self._unit_outcome(units[k], walking))
        by_index = {
            index: RootAnalysis(roots[index], *outcome)
            for group, found in zip(groups, outcomes, strict=True)
            for index, outcome in zip(group, found or (), strict=True)
        }
        return [by_index[index] for index in range(len(roots))]

    def _taken(self, unit: list[StepRoot]) -> list[Outcome] | None:
        """The unit's outcomes as an earlier run kept them, where nothing they
        read changed: the run asks what analysing it would ask, and the walks
        it relied on are kept for the next run."""
        taken = self.units.take_unit(unit) if self.units is not None else None
        if taken is None:
            return None
        outcomes, items, walks = taken
        self.program.adopt_read(items)
        if self.walker.stored is not None:
            self.walker.stored.hold(walks)
        if self.roots is not None:
            for root in unit:
                module = self.program.module_of(root.function.qualname)
                if module is not None:
                    key = _key(root)
                    relpath = self.program.project.relpath(module.path)
                    hold_root(self.roots, key, root.function, relpath, module)
        return outcomes

    def _unit_outcome(
        self, roots: list[StepRoot], walking: Callable[[StepRoot], None] | None = None
    ) -> tuple[list[Outcome], set[str], list[str]]:
        """`analyse_class` as plain data (each root's paths, why incomplete,
        host syncs and sanctioned regions), with the items it read and the
        callee walks it made or took (what a later run needs to take it)."""
        stored = self.walker.stored
        if stored is not None:
            stored.touched()  # what came before is another unit's
        outer = reads.push()
        try:
            found = [
                (a.paths, a.incomplete, a.host_syncs, a.sanctioned_regions)
                for a in self.analyse_class(roots, walking)
            ]
        finally:
            items = reads.pop(outer)
        return found, set(items), stored.touched() if stored is not None else []

    def _worker_outcome(
        self, roots: list[StepRoot]
    ) -> tuple[list[Outcome], set[str], list[str], Any]:
        """`_unit_outcome` for the trip from a worker: the roots (and their
        summaries) stay with the parent, which has them; with the walks the
        worker made and took for the next run (stored.py), the roots' walks it
        kept (stored_roots.py) and what judging its unit read (stored_units.py)."""
        stored = self.walker.stored
        found, items, walks = self._unit_outcome(roots)
        walk_news = stored.news() if stored is not None else None
        root_news = self.roots.news() if self.roots else None
        return (
            found,
            items,
            walks,
            (walk_news, root_news, self.units.news() if self.units else None),
        )

    def analyse_class(
        self, roots: list[StepRoot], walking: Callable[[StepRoot], None] | None = None
    ) -> list[RootAnalysis]:
        """Walk the roots of one class (`walking(root)` as each begins), then
        judge each path against the next step the loop may run: any path of
        any of them (a step, a dummy run, a warm-up: the entry points share
        the buffers)."""
        walked: list[tuple[StepRoot, list[Final] | str]] = []
        # Per root, the host syncs and sanctioned regions its phases met (the
        # resolution walks of `_verdict` come later and count for neither).
        met: list[Met] = []
        syncs = self.walker.host_syncs
        for root in roots:
            if walking is not None:
                walking(root)
            syncs.take()  # nothing met before this root's phases
            syncs.take_regions()
            walked.append((root, self._walk(root)))
            met.append((syncs.take(), syncs.take_regions()))
        judged = self._judged(roots, met)
        if judged is not None:
            return judged
        with noted_apart(self.walker.stored) as noted:
            results = self._judge(walked, met)
        if self.units is not None and noted.recording:
            self.units.judging(roots, noted.items, noted.walks, self._finals_named(roots) or [])
        return results

    def _judged(
        self,
        roots: list[StepRoot],
        met: list[Met],
    ) -> list[RootAnalysis] | None:
        """The roots' analyses as an earlier run judged them, where each root's
        walk ended in the paths judged then (its kept walk's, resumed: they are
        named alike), met the same host syncs and regions, and nothing judging
        read changed (stored_units.py `take_judged`): judging is a function of
        the paths, the items it reads and the configuration."""
        finals = self._finals_named(roots)
        if finals is None or self.units is None or self.roots is None:
            return None
        realigned = [
            found for root in roots if (found := self.roots.realigned.get(_key(root))) is not None
        ]

        def fits(outcomes: list[Outcome]) -> bool:
            return all(
                o[1] is None and (o[2], o[3]) == m for o, m in zip(outcomes, met, strict=True)
            )

        taken = self.units.take_judged(roots, finals, realigned, fits)
        if taken is None:
            return None
        outcomes, items, walks = taken
        self.program.adopt_read(items)
        if self.walker.stored is not None:
            self.walker.stored.rely_on(walks)
        return [RootAnalysis(root, *outcome) for root, outcome in zip(roots, outcomes, strict=True)]

    def _finals_named(self, roots: list[StepRoot]) -> list[str] | None:
        """The names of the finals each root's walk ended in this run (its kept
        walk's: root_record.py `KeptRoot.finals_id`); None where one is not kept."""
        if self.roots is None:
            return None
        found = [self.roots.walked.get(_key(root)) for root in roots]
        return None if None in found else found  # type: ignore[return-value]

    def _judge(
        self,
        walked: list[tuple[StepRoot, list[Final] | str]],
        met: list[Met],
    ) -> list[RootAnalysis]:
        """Each path's verdict against the next steps the loop may run: any path
        of any of the roots."""
        self._pairs.clear()
        next_steps: list[NextStep] = []
        for root, finals in walked:
            if isinstance(finals, str):
                continue
            if root.spec.discards_output:
                # As a next step, a dummy batch tears what it writes; what it
                # reads on the host reaches no output.
                finals = [(_writes_only(s), r) for s, r in finals]
            next_steps.extend((root.name, f) for f in finals)
        guarded = _guarded_buffers([final for _, final in next_steps])
        results = []
        for (root, finals), (host_syncs, regions) in zip(walked, met, strict=True):
            if isinstance(finals, str):
                results.append(RootAnalysis(root, [], finals, host_syncs, regions))
                continue
            if root.spec.discards_output:
                # A dummy batch's reads of torn memory reach no output: its paths
                # matter only as the next step of the others (their writes).
                paths = [_discarded(s, r) for s, r in finals]
            else:
                paths = [
                    replace(
                        self._verdict(state, returns, next_steps, guarded),
                        hazards=self._stream_hazards(state, next_steps),
                    )
                    for state, returns in finals
                ]
            results.append(RootAnalysis(root, paths, None, host_syncs, regions))
        return results

    def _stream_hazards(self, state: PathState, next_steps: list[NextStep]) -> tuple[Hazard, ...]:
        """The path's stream hazards: in the step, and with each next step the
        loop may run in the same mode (what this step left live on a stream
        against the next step's accesses)."""
        facts = state.streams
        if facts is None:
            return ()
        found = {h.key: h for h in facts.hazards}
        if facts.live:
            paired: set[tuple] = set()
            for _, (following, _) in next_steps:
                after = following.streams
                if after is None:
                    continue
                # Paths sharing stream facts pair alike, unless a join left some
                # live accesses in narrower modes: then the next step's mode counts.
                tagged = facts.left_in or after.first_in
                seen = (id(after), following.modes() if tagged else None)
                if seen in paired or not self._same_mode(state, following):
                    continue
                paired.add(seen)
                for hazard in self._pair(facts, after):
                    if self._left_in_mode(state, hazard, following):
                        found.setdefault(hazard.key, hazard)
        return tuple(found.values())

    def _pair(self, end: StreamFacts, following: StreamFacts) -> list[Hazard]:
        """`next_step_hazards`, once per pair of stream-fact objects: the paths of
        a large step share them (merges keep shared tuples), and each pair costs
        a composition over hundreds of live accesses."""
        key = (id(end), id(following))
        if key not in self._pairs:
            self._pairs[key] = (end, following, next_step_hazards(end, following))
        return self._pairs[key][2]

    def _entry_state(self, root: StepRoot) -> PathState:
        """The state a step begins in: on the pack's step stream, where the
        loop runs in its context and the root's class has that attribute."""
        stream = root.spec.stream
        attr = stream.removeprefix("self.")
        assigned = self.walker.types.attribute_assignments(root.self_class)
        if stream and any(target == attr for target, _, _ in assigned):
            return PathState(streams=StreamFacts(current=stream))
        return PathState()

    def _walk(self, root: StepRoot) -> list[Final] | str:
        """The root's distinct final paths, or why it could not be walked.

        Walked from a fresh memo, so that the paths and the work counted
        against the budget are the root's own, whichever roots went before
        (and whichever process walks it: parallel.py). Roots share few callee
        walks (vLLM 0.33.0: 0.2 s of 8 s)."""
        walker = self.walker
        walker.restart()
        try:
            finals = self._run_phases(root)
        except Incomplete as exc:
            if walker.stored is not None and walker.stored.taken:
                return self._walk_afresh(root)
            return str(exc)
        except RecursionError:  # a shape no depth limit foresaw: say so, never crash
            return "code nested too deeply to follow"
        taken = walker.stored is not None and walker.stored.taken
        if taken and walker.work > walker.budget * NEAR_BUDGET:
            return self._walk_afresh(root)
        unique: dict[tuple, Final] = {}
        for state, returns in finals:
            unique.setdefault((state.key(), returns), (state, returns))
        return list(unique.values())

    def _walk_afresh(self, root: StepRoot) -> list[Final] | str:
        """`_walk` without the walks an earlier run kept: where the budget came
        near (`NEAR_BUDGET`), the work a kept walk counts (what it cost when it
        was made) may not be what walking it here costs, so the root's result,
        complete or not, is the one a fresh walk gives."""
        walker, stored = self.walker, self.walker.stored
        walker.host_syncs.take()  # what the first try met is not this root's
        walker.host_syncs.take_regions()
        if self.roots is not None:  # its paths are not the kept walk's
            self.roots.walked.pop(_key(root), None)
        walker.stored = None
        try:
            return self._walk(root)
        finally:
            walker.stored = stored

    # ------------------------------------------------------------------ phases
    def _run_phases(self, root: StepRoot) -> list[tuple[PathState, tuple[ReturnInfo, ...]]]:
        """Phase one, then (where it returned None) each continuation method.

        The states reaching one `return None` continue together, so the
        walker's joins merge them as they do inside any function.
        """
        anchors = root_anchors(root.self_class)
        frame = self.walker.frame_for(
            root.function, root.self_class, "self", (), root.function.flag_params, anchors
        )
        assert frame is not None
        entry = [self._entry_state(root)]

        def after_body(
            fall: list[PathState], exits: list[Exit]
        ) -> list[tuple[PathState, tuple[ReturnInfo, ...]]]:
            return self._continued(root, frame, anchors, fall, exits)

        with self.walker.rooted(frame):
            if self.roots is not None and self.walker.stored is not None:
                key = _key(root)
                return walk_root(
                    self.walker, self.roots, self.program, key, frame, entry, after_body
                )
            fall, exits = self.walker.run(frame, entry)
            return after_body(fall, exits)

    def _continued(
        self,
        root: StepRoot,
        frame: Frame,
        anchors: Anchors,
        fall: list[PathState],
        exits: list[Exit],
    ) -> list[tuple[PathState, tuple[ReturnInfo, ...]]]:
        """The root's final paths, from those its body left: each that returned
        None walks on through the continuation methods."""
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
                cont = self.walker.frame_for(
                    method, root.self_class, "self", (), frozenset(), anchors
                )
                assert cont is not None
                c_fall, c_exits = self.walker.run(cont, states)
                for e in with_fall_through(c_exits, c_fall, cont):
                    finals.append((e.state, (ret, e.ret)))
        return finals

    # ------------------------------------------------------------------ verdicts
    def _verdict(
        self,
        state: PathState,
        returns: tuple[ReturnInfo, ...],
        next_steps: list[NextStep],
        guarded: frozenset[str],
    ) -> StepPath:
        """The path's verdict. A race is SYNC003's (outside the guard) when the
        path waits on an event (a protocol is in use and this access escapes it)
        or another path writes the buffer after an event wait (a mode or entry
        point without the guard); SYNC001's (unbounded) when nothing orders it."""
        idle = self.packs.vocabulary.names("idle_conditions")
        if any(value and key in idle for key, value in state.assumptions):
            return StepPath(
                state, returns, "no device reader", "the step has no work scheduled (pack)"
            )
        for predicate, value in state.assumptions:
            reason = self.packs.unread_reason(predicate, value)
            if reason is not None:
                return StepPath(state, returns, "no device reader", reason)
        races = [r for r in state.races if self._reaches_output(r[2], state)]
        if races:
            return StepPath(
                state, returns, OUTSIDE_GUARD,
                "a host write in this step races a device access launched before it",
                race=telling(races),
            )  # fmt: skip
        if state.write is None and not state.pending:
            return StepPath(
                state, returns, "no pinned writes", "writes no persistent pinned buffer"
            )
        if state.reader is None and not state.pending:
            return StepPath(
                state, returns, "no device reader", "no device work reads its pinned writes"
            )
        if not state.pending:
            return StepPath(state, returns, "waits inline", "a host wait follows its launches")
        pending = state.pending
        resolution = self._resolution(state, returns[-1])
        deferred = None  # set when the resolution waits on the host on every path
        if resolution is not None:
            resolver, resolved = resolution
            if all(end.wait is not None and end.wait != state.wait for end in resolved):
                deferred = f"{resolver} waits on the host"
            for end in resolved:
                if len(end.races) > len(state.races):
                    # A read of a copy still landing: outside the guard when the
                    # resolution waits on an event (after the read), else unbounded.
                    return StepPath(
                        state, returns, OUTSIDE_GUARD if end.guarded else UNBOUNDED,
                        f"{resolver} reads host memory before any wait that covers it",
                        race=telling(end.races[len(state.races) :]),
                    )  # fmt: skip
            # The engine resolves this step before it admits `bound` more, and a
            # round-robin pool is as deep as that bound: the slots the resolution
            # waits for are covered.
            left = self._left_pending(state, returns)
            pending = tuple(p for p in pending if not is_slot(p[0]) or p[0] in left)
            if not pending and deferred is not None:
                return StepPath(state, returns, "deferred", deferred)
        peer = next(
            (r for k, v in state.assumptions if (r := self.packs.bounded_reason(k, v))), None
        )
        if peer is not None:
            # A peer's wait bounds how far ahead this rank runs (the engine's
            # admission bound), as a deferred wait does: it covers pool slots,
            # not a buffer the very next step rewrites.
            pending = tuple(p for p in pending if not is_slot(p[0]))
            if not pending:
                return StepPath(state, returns, "bounded by peer", peer)
        race, also = self._next_step_races(state.but(pending=pending), next_steps)
        if race is None and peer is not None:
            return StepPath(state, returns, "bounded by peer", peer)
        if race is None and deferred is not None:
            return StepPath(state, returns, "deferred", deferred)
        if race is None and state.guarded:
            return StepPath(
                state, returns, "semaphore",
                "the next step waits before it rewrites what the device may still access",
            )  # fmt: skip
        if race is None:
            return StepPath(
                state, returns, "not rewritten",
                "no later step of this mode writes what the device may still access",
            )  # fmt: skip
        if state.guarded or race[0].removesuffix(HOST_READ) in guarded:
            return StepPath(
                state, returns, OUTSIDE_GUARD,
                "the next step rewrites a buffer before the wait that covers this step's access",
                race=race, across_steps=True, also=also,
            )  # fmt: skip
        return StepPath(
            state, returns, UNBOUNDED, "no host wait, inline or deferred",
            race=race, across_steps=True,
        )  # fmt: skip

    def _resolution(
        self, state: PathState, final: ReturnInfo
    ) -> tuple[str, list[PathState]] | None:
        """The path after the engine resolves what the step returned: the pack's
        resolution method of the returned class (`get_output`), walked from the
        path's end, so its waits cover only what its events recorded and its
        host reads meet the copies still landing. None when nothing resolves it."""
        return self._resolved.made((state.key(), final), lambda: self._resolve(state, final))

    def _resolve(self, state: PathState, final: ReturnInfo) -> tuple[str, list[PathState]] | None:
        found = None
        for t in sorted(final.types):
            if self.program.find_class(t) is None:
                continue
            for name in sorted(self.packs.resolution_methods):
                method = self.program.find_method(t, name)
                frame = self.walker.frame_for(method, t, None) if method else None
                if frame is None:
                    continue
                try:
                    fall, exits = self.walker.run(frame, [state])
                except (Incomplete, RecursionError):
                    # Unwalkable: judged as unresolved, which can only add findings.
                    continue
                ends = fall + [e.state for e in exits]
                if ends:
                    found = (f"returns {t.rsplit('.', 1)[-1]}, whose {name}()", ends)
                    break
            if found is not None:
                break
        return found

    def _left_pending(self, state: PathState, returns: tuple[ReturnInfo, ...]) -> frozenset[str]:
        """What the path leaves pending once the engine resolved it (its own
        pending when nothing resolves it)."""
        resolution = self._resolution(state, returns[-1])
        if resolution is None:
            return frozenset(state.pending_ids())
        return frozenset(b for end in resolution[1] for b in end.pending_ids())

    def _next_step_races(
        self, end: PathState, next_steps: list[NextStep]
    ) -> tuple[Race | None, tuple[Race, ...]]:
        """Unroll the loop once, compositionally: the next step is any of
        `next_steps` in the same mode, and each path of the walk from the empty
        state already says which buffers it writes and after which waits
        (`exposed`). A write to what this path left pending, with no wait that
        covers it before, races it. A slot of a pool comes back only after
        `depth` steps, so it races only when the next path leaves the pool
        unwaited too (the path can repeat). Per entry point the race shown is
        its host read where there is one (`telling`); the first entry point's
        (else the one with a host read) is the path's race, the others' come
        with it: each entry point is a place the guard is missing."""
        by_root: dict[str, list[Race]] = {}
        # What this path left pending, by allocation site: memory of another
        # site is never the same memory (same_memory).
        left: dict[str, list[Pending]] = {}
        for pending in carried(end.pending):
            left.setdefault(site_of(pending[0]), []).append(pending)
        # Next steps share their host accesses (one entry point's paths): whether
        # this path's events cover one, and which of its accesses one races,
        # is asked once.
        covered: dict[tuple[str, frozenset[str]], bool] = {}
        raced: dict[str, Trace | None] = {}
        for root, (state, returns) in next_steps:
            if not self._same_mode(end, state):
                continue
            for buffer, write, keys in state.exposed:
                same_site = left.get(site_of(buffer.removesuffix(HOST_READ)))
                if same_site is None:
                    continue
                ordered = covered.get((buffer, keys))
                if ordered is None:
                    ordered = covered[(buffer, keys)] = covered_by(keys, buffer, end)
                if ordered:
                    continue
                if buffer not in raced:
                    raced[buffer] = racing_access(tuple(same_site), buffer)
                access = raced[buffer]
                if access is None or not self._reaches_output(access, end):
                    continue
                if is_slot(buffer) and not self._leaves_slot_unwaited(state, returns, buffer):
                    continue
                by_root.setdefault(root, []).append((buffer, write, access))
        shown = [telling(races) for races in by_root.values()]
        if not shown:
            return None, ()
        first = telling(shown)
        return first, tuple(r for r in shown if r is not first)

    def _reaches_output(self, access: Trace, state: PathState) -> bool:
        """Whether the device work that reads what `access` uploaded runs on this
        path: a pack's `unread_upload` row names uploads (by the function that
        launches them) whose only readers do not run in some modes."""
        functions = {step.function for step in access}
        return self.packs.unread_upload(functions, state.assumptions) is None

    def _same_mode(self, a: PathState, b: PathState) -> bool:
        """Two paths the loop can take one after the other: their instance modes agree
        (per-step data, like an idle step or an attribute set this step, may not).
        A function of the two paths' modes, asked of every path and next step:
        many paths share their modes, so each pair of modes is decided once."""
        key = (a.assumptions, a.alternatives, b.assumptions, b.alternatives)
        found = self._modes_paired.get(key)
        if found is None:
            found = self._modes_paired[key] = self._modes_pair(a, b)
        return found

    def _modes_pair(self, a: PathState, b: PathState) -> bool:
        idle = self.packs.vocabulary.names("idle_conditions")
        if not any(
            _modes_agree(mode, other)
            for mode in _instance_modes(a, idle)
            for other in _instance_modes(b, idle)
        ):
            return False
        # A per-step flag `b` found at its entry is what `a` left it as.
        for key, value in b.assumptions:
            path = entry_path(key)
            if path is not None and a.assumed(assigned_key(path)) not in (None, value):
                return False
        return True

    def _left_in_mode(self, end_state: PathState, hazard: Hazard, following: PathState) -> bool:
        """Whether the path that left the end's live access in `hazard` and the
        one that made the next step's access can run one after the other: their
        instance modes agree (a join may hold either for some of its paths only)."""
        end = end_state.streams
        left = end.modes_left((hazard.memory, hazard.first_kind, hazard.first_stream))
        first = following.streams.modes_first(
            (hazard.memory, hazard.second_kind, hazard.second_stream)
        )
        if left is None and first is None:
            return True
        idle = self.packs.vocabulary.names("idle_conditions")
        earlier = _access_modes(left, end_state, idle)
        return any(
            _modes_agree(a, b) for a in earlier for b in _access_modes(first, following, idle)
        )

    def _leaves_slot_unwaited(
        self, state: PathState, returns: tuple[ReturnInfo, ...], buffer: str
    ) -> bool:
        return any(same_memory(buffer, b) for b in self._left_pending(state, returns))


class InstanceMode(NamedTuple):
    """One conjunction of instance modes, with each predicate's opposite: two
    conjunctions agree unless one names the opposite of the other's (a set test,
    asked of every path and every next step)."""

    holds: frozenset[tuple[str, bool]]
    opposite: frozenset[tuple[str, bool]]


def _instance_modes(state: PathState, idle: frozenset[str]) -> tuple[InstanceMode, ...]:
    """The state's modes less per-step data and root parameters (computed once
    per state: the pairing compares every path with every next step)."""
    cached = state.__dict__.get("_instance_modes")
    if cached is None:
        # Modes that differ only in per-step data are one instance mode: kept once.
        cached = state.__dict__["_instance_modes"] = tuple(
            dict.fromkeys(_instance_mode(mode, idle) for mode in state.modes())
        )
    return cached


def _access_modes(
    tags: Alternatives | None, state: PathState, idle: frozenset[str]
) -> tuple[InstanceMode, ...]:
    """The instance modes of the paths that made an access: its tags, else the state's."""
    if tags is None:
        return _instance_modes(state, idle)
    return tuple(dict.fromkeys(_instance_mode(mode, idle) for mode in tags))


def _instance_mode(mode: tuple[tuple[str, bool], ...], idle: frozenset[str]) -> InstanceMode:
    holds = frozenset(
        (k, v) for k, v in mode if not is_per_step(k, idle) and not is_root_parameter(k)
    )
    return InstanceMode(holds, frozenset((k, not v) for k, v in holds))


def _modes_agree(a: InstanceMode, b: InstanceMode) -> bool:
    """Two conjunctions of modes agree on every instance mode both name."""
    return a.holds.isdisjoint(b.opposite)


def telling(races: tuple[Race, ...] | list[Race]) -> Race:
    """The race a finding shows: the first host read of memory a copy is still
    writing (the host computes with data that has not landed), else the first
    race. A host write that a landing copy overwrites corrupts only where the
    written value is read again; a read uses the wrong value at once."""
    return next((r for r in races if r[0].endswith(HOST_READ)), races[0])


def _key(root: StepRoot) -> str:
    """The root's key among the roots' kept walks (stored_roots.py)."""
    return root_key(root.self_class, root.function, root.continuation)


def _writes_only(state: PathState) -> PathState:
    return state.but(exposed=tuple(e for e in state.exposed if not e[0].endswith(HOST_READ)))


def _discarded(state: PathState, returns: tuple[ReturnInfo, ...]) -> StepPath:
    return StepPath(state, returns, DISCARDED, "a dummy batch: no output reads what it computes")


def _guarded_buffers(finals: list[Final]) -> frozenset[str]:
    """Buffers some path accesses on the host after waiting on an event: the
    engine has an event protocol for them (in some mode, on some entry point)."""
    return frozenset(
        buffer.removesuffix(HOST_READ)
        for state, _ in finals
        for buffer, _, keys in state.exposed
        if keys - {DEVICE_BARRIER, ENTRY_DRAINED}
    )


def _by_class(roots: list[StepRoot]) -> list[list[int]]:
    """Root indices grouped by class, in the order each class first appears."""
    groups: dict[str, list[int]] = {}
    for index, root in enumerate(roots):
        groups.setdefault(root.self_class, []).append(index)
    return list(groups.values())
