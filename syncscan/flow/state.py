"""Path states: the happens-before facts of one path, under its mode assumptions.

One agent is the host thread, the other the device (one stream: the current
one). A path state records, for each persistent pinned buffer (known by its
allocation site, and by its pool when it is a round-robin slot), the device
accesses launched on it that no host wait has covered yet (`pending`), the
event records that would cover them (`events`: a snapshot of what was pending
at the record), and every host write into a buffer the device still accesses
(`races`). The state is also a transfer function: walked from the empty state,
a callee's `exposed` writes (with the waits it made before each) and `waited`
keys are what `compose` needs to replay it after any caller state. States with
equal facts merge (their assumptions intersect), so the number of states stays
bounded however many branches a step has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from syncscan.findings import WitnessStep
from syncscan.flow import alternatives as alt
from syncscan.flow import streams as stream_model
from syncscan.flow.alternatives import Alternatives
from syncscan.flow.keys import is_set_key, is_step_fact
from syncscan.flow.streams import StreamFacts

Trace = tuple[WitnessStep, ...]

# The predicates looked up on any path while each callee walk under way runs,
# innermost last (walk.py): a walk's outcome depends on its start's assumptions
# only through these, so it serves every start that agrees on them.
CONSULTED: list[set[str]] = []

DEVICE_BARRIER = "<device>"  # a wait that orders every earlier launch on the stream
# A wait on an event this walk recorded on every path before it (`ev.record();
# ev.synchronize()`): it orders every launch made before the walk's entry, so a
# caller's pending accesses (or the previous step's) are covered by it.
ENTRY_DRAINED = "<entry>"

# A device access of host memory not yet covered by a host wait:
# (buffer identity, "read" | "write", the launch that makes it).
Pending = tuple[str, str, Trace]
# A host write that races a pending device access: (buffer, host write, device access).
Race = tuple[str, Trace, Trace]
# A write made during a walk, with the wait keys the walk had met before it.
Exposed = tuple[str, Trace, frozenset[str]]


@dataclass(frozen=True)
class PathState:
    assumptions: tuple[tuple[str, bool], ...] = ()
    write: Trace | None = None  # the first persistent pinned write (the witness)
    written: frozenset[str] = frozenset()
    reader: Trace | None = None  # the first device access of a buffer this path wrote
    pending: tuple[Pending, ...] = ()
    events: tuple[tuple[str, frozenset[str]], ...] = ()
    exposed: tuple[Exposed, ...] = ()
    waited: frozenset[str] = frozenset()
    races: tuple[Race, ...] = ()
    launched: Trace | None = None  # the last launch no host wait has followed
    wait: Trace | None = None  # the last host wait
    guarded: bool = False  # the host waited on an event on this path (a protocol is in use)
    reloaded: frozenset[str] = frozenset()  # written, then read again by the device
    recorded: frozenset[str] = frozenset()  # events this walk recorded on every path
    # The modes a joined path may be in, where its assumptions lost some (alternatives.py).
    alternatives: Alternatives = ()
    # The order between streams (streams.py); None until a stream fact is met.
    streams: StreamFacts | None = None

    @property
    def in_flight(self) -> bool:
        """Device work was launched and no host wait has followed it."""
        return self.launched is not None

    def facts(self) -> tuple:
        cached = self.__dict__.get("_facts")
        if cached is None:
            cached = self.__dict__["_facts"] = self._compute_facts()
        return cached

    def _compute_facts(self) -> tuple:
        return (
            self.write is not None,
            self.written,
            self.reader is not None,
            tuple((b, k) for b, k, _ in self.pending),
            self.events,
            tuple((b, keys) for b, _, keys in self.exposed),
            self.waited,
            tuple(b for b, _, _ in self.races),
            self.launched is not None,
            self.wait is not None,
            self.guarded,
            self.reloaded,
            self.recorded,
        )

    def verdict_facts(self) -> tuple:
        """The facts a verdict reads (coarser than `facts`: no buffer sets)."""
        return (
            self.write is not None,
            self.reader is not None,
            bool(self.pending),
            bool(self.races),
            self.launched is not None,
            self.wait is not None,
            self.guarded,
        )

    def key(self) -> tuple:
        streams = self.streams.facts() if self.streams is not None else None
        return (self.assumptions, self.alternatives, *self.facts(), streams)

    def modes(self) -> Alternatives:
        """The conjunctions this path's modes may be: its alternatives, or its assumptions."""
        return self.alternatives or (self.assumptions,)

    def admits(self, predicate: str, value: bool) -> bool:
        """Whether some mode this path may be in allows `predicate` to be `value`."""
        if CONSULTED:
            CONSULTED[-1].add(predicate)
        return alt.admits(self.alternatives, predicate, value)

    def assumed(self, predicate: str) -> bool | None:
        if CONSULTED:
            CONSULTED[-1].add(predicate)
        for key, value in self.assumptions:
            if key == predicate:
                return value
        return None

    def but(self, **changes: object) -> PathState:
        """A copy with `changes` (`dataclasses.replace` without its per-call checks)."""
        values = {**self.__dict__, **changes}
        values.pop("_facts", None)
        values.pop("_instance_modes", None)
        return _built(values)

    def assume(self, predicate: str, value: bool) -> PathState:
        return self.but(
            assumptions=tuple(sorted((*self.assumptions, (predicate, value)))),
            alternatives=alt.refine(self.alternatives, predicate, value),
        )

    def decide(self, predicate: str, value: bool) -> PathState:
        """`assume`, replacing what was assumed of `predicate` before."""
        kept = tuple((k, v) for k, v in self.assumptions if k != predicate)
        return self.but(
            assumptions=tuple(sorted((*kept, (predicate, value)))),
            alternatives=alt.redecide(self.alternatives, predicate, value),
        )

    def forget(self, predicate: str) -> PathState:
        """Drop what was assumed of `predicate` (it was set to an unknown value)."""
        if self.assumed(predicate) is None:
            return self
        return self.but(
            assumptions=tuple((k, v) for k, v in self.assumptions if k != predicate),
            alternatives=alt.redecide(self.alternatives, predicate, None),
        )

    def pending_ids(self) -> frozenset[str]:
        return frozenset(b for b, _, _ in self.pending)

    def event_snapshot(self, event: str) -> frozenset[str] | None:
        for name, covered in self.events:
            if name == event:
                return covered
        return None

    # ------------------------------------------------------------------ effects
    def on_write(self, trace: Trace, buffer: str) -> PathState:
        """A host write into persistent pinned memory."""
        races, exposed = self._recorded_access(trace, buffer)
        return self.but(
            write=self.write or trace,
            written=self.written | {buffer},
            races=races,
            exposed=exposed,
        )

    def on_host_read(self, trace: Trace, buffer: str) -> PathState:
        """A host read of persistent pinned memory: it races a pending D2H write."""
        races, exposed = self._recorded_access(trace, host_read_key(buffer))
        return self.but(races=races, exposed=exposed)

    def _recorded_access(
        self, trace: Trace, key: str
    ) -> tuple[tuple[Race, ...], tuple[Exposed, ...]]:
        """The races and exposed host accesses after a host access of `key` (a
        buffer, or its HOST_READ key): the first access of each key is kept."""
        races = self.races
        if key not in {b for b, _, _ in races}:
            access = racing_access(self.pending, key)
            if access is not None:
                races = (*races, (key, trace, access))
        exposed = self.exposed
        if key not in {b for b, _, _ in exposed}:
            exposed = (*exposed, (key, trace, self.waited))
        return races, exposed

    def on_launch(self, trace: Trace, accesses: tuple[tuple[str, str], ...] = ()) -> PathState:
        """Device work; `accesses` are the (buffer, read|write) of host memory it makes."""
        changes: dict[str, object] = {"launched": trace}
        if accesses:
            pending = dict(((b, k), t) for b, k, t in self.pending)
            reader = self.reader
            for buffer, kind in accesses:
                pending.setdefault((buffer, kind), trace)
                if reader is None and buffer in self.written:
                    reader = trace
            changes["pending"] = tuple(sorted((b, k, t) for (b, k), t in pending.items()))
            changes["reader"] = reader
            reread = {b for b, k in accesses if k == "read"}
            changes["races"] = refreshed(self.races, reread)
            written = reread & {b for b, _, _ in self.exposed}
            if written - self.reloaded:
                changes["reloaded"] = self.reloaded | written
        return self.but(**changes)

    def on_wait(self, trace: Trace, key: str, stream: str | None = None) -> PathState:
        """A host wait: on the whole device (DEVICE_BARRIER), on one stream
        (DEVICE_BARRIER with that `stream`: this model knows one stream, the
        stream model the others), or on one event."""
        facts = self.streams or StreamFacts()
        if key == DEVICE_BARRIER:
            return self.but(
                pending=(),
                launched=None,
                wait=trace,
                waited=self.waited | {key, ENTRY_DRAINED},
                events=(),
                streams=(
                    facts.device_barrier()
                    if stream is None
                    else facts.host_waits_stream(facts.resolve(stream))
                ),
            )
        covered = self.event_snapshot(key)
        pending = self.pending
        launched = self.launched
        if covered is not None:
            pending = tuple(p for p in pending if p[0] not in covered)
            launched = None
        drained = {ENTRY_DRAINED} if key in self.recorded else set()
        return self.but(
            pending=pending,
            launched=launched,
            wait=trace,
            waited=self.waited | {key} | drained,
            guarded=True,
            streams=facts.host_waits_event(key),
        )

    def on_record(self, event: str) -> PathState:
        snapshot = self.pending_ids()
        events = tuple(sorted((*(e for e in self.events if e[0] != event), (event, snapshot))))
        return self.but(events=events, recorded=self.recorded | {event})


def merge(states: list[PathState]) -> list[PathState]:
    """Join states under the same assumptions, then merge equal facts.

    The join is a may/must join: what some path may have done (pending
    accesses, writes, races, an unwaited launch) is kept from every state;
    what a path must have done (the waits met before a write, the waits made)
    only where all did. States left with equal facts merge where their modes
    combine exactly (`exact_modes`): `x` and `not x` into neither, a mode into a
    more general one. So a step's states stay as few as its mode assignments,
    and a merged state never claims a mode none of its paths had.
    """
    if len(states) < 2:
        return states
    by_mode: dict[tuple, list[PathState]] = {}
    for state in states:
        by_mode.setdefault(state.assumptions, []).append(state)
    joined = [group[0] if len(group) == 1 else join(group) for group in by_mode.values()]
    if len(joined) < 2:
        return joined
    groups: dict[tuple, list[PathState]] = {}
    for state in joined:
        # Per-step flags as the step found them stay apart: they say which
        # previous steps this one can follow.
        streams = state.streams.agents() if state.streams is not None else None
        groups.setdefault((state.facts(), _entries(state), streams), []).append(state)
    merged: list[PathState] = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            merged.append(first)
            continue
        lost: alt.Alternatives = ()
        if any(s.alternatives for s in group):
            lost = alt.joined(((s.assumptions, s.alternatives) for s in group), ())
        # Stream facts do not keep states apart (they would multiply them by every
        # set of memory a path touched); a merged state joins them.
        streams = stream_model.join([s.streams for s in group], _modes_apart(group))
        for mode in alt.exact_modes([s.assumptions for s in group]):
            alternatives = alt.within(lost, mode) if lost else ()
            merged.append(first.but(assumptions=mode, alternatives=alternatives, streams=streams))
    if len(merged) <= MAX_STATES:
        return merged
    # Widening: past the cap, states that agree on what decides a verdict (a
    # write, a reader, an unwaited launch, a wait, a race, a protocol) join,
    # whatever buffers they left pending; the mode they share is kept.
    # Root parameters (`dummy_run`, names without a dot) stay apart: they select
    # an entry point's whole behaviour; so do per-step flags as the step found
    # them (which previous steps it can follow).
    coarse: dict[tuple, list[PathState]] = {}
    for state in merged:
        params = tuple(
            (k, v) for k, v in state.assumptions if is_root_parameter(k) or is_step_fact(k)
        )
        # The waits made stay apart too: joining a state that waited on a guard's
        # event with one that did not would strip the guard from every write.
        # So do the streams a path ran on: one mode's stream is not another's.
        streams = state.streams.agents() if state.streams is not None else None
        key = (params, state.verdict_facts(), state.waited, streams)
        coarse.setdefault(key, []).append(state)
    return [
        group[0] if len(group) == 1 else join(group, _shared(group)) for group in coarse.values()
    ]


MAX_STATES = 16  # states per program point before the widening joins them


def is_root_parameter(predicate: str) -> bool:
    """A root parameter (`dummy_run`; no dot, no operator): chosen per call, so
    it selects an entry point's whole behaviour and the next call may differ."""
    return "." not in predicate and " " not in predicate


def _entries(state: PathState) -> tuple[tuple[str, bool], ...]:
    """What the path knows of per-step attributes: as it found them, as it left them."""
    return tuple((k, v) for k, v in state.assumptions if is_step_fact(k))


def _shared(states: list[PathState]) -> tuple[tuple[str, bool], ...]:
    shared = set(states[0].assumptions)
    for other in states[1:]:
        shared &= set(other.assumptions)
    return tuple(sorted(shared))


def join(states: list[PathState], assumptions: tuple | None = None) -> PathState:
    """One state for several paths (under the same assumptions unless given)."""
    first = states[0]
    pending: dict[tuple[str, str], Trace] = {}
    events: dict[str, frozenset[str]] = {}
    exposed: dict[str, tuple[Trace, frozenset[str]]] = {}
    races: dict[str, tuple[Trace, Trace]] = {}
    written: frozenset[str] = frozenset()
    waited = first.waited
    recorded = first.recorded
    write = reader = launched = None
    wait = first.wait
    guarded = False
    for state in states:
        for b, k, t in state.pending:
            pending.setdefault((b, k), t)
        for name, covered in state.events:
            events[name] = events.get(name, frozenset()) | covered
        for b, t, keys in state.exposed:
            if b not in exposed:
                exposed[b] = (t, keys)
            elif not keys >= exposed[b][1]:
                # The least guarded write stands for all: its trace, and the waits
                # every path met before its own write.
                exposed[b] = (t, keys & exposed[b][1])
        for b, w, a in state.races:
            races.setdefault(b, (w, a))
        written |= state.written
        waited &= state.waited
        recorded &= state.recorded
        write = write or state.write
        reader = reader or state.reader
        launched = launched or state.launched
        if state.wait is None:
            wait = None
        guarded = guarded or state.guarded
    # A write is reloaded only if every path that made it read it again.
    if any(s.reloaded for s in states):
        made = [{x for x, _, _ in s.exposed} for s in states]
        reloaded = frozenset(
            b
            for b in exposed
            if all(b in s.reloaded or b not in m for s, m in zip(states, made, strict=True))
        )
    else:
        reloaded = frozenset()
    # An event covers an access only if every path that left it pending
    # recorded the event after it (a path that did not record it leaves it stale).
    if events:
        left = [s.pending_ids() for s in states]
    for name in list(events):
        snapshots = [s.event_snapshot(name) or frozenset() for s in states]
        events[name] = frozenset(
            b
            for b in events[name]
            if all(b in snap or b not in p for snap, p in zip(snapshots, left, strict=True))
        )
    shared = first.assumptions if assumptions is None else assumptions
    return _built(
        {
            "assumptions": shared,
            "alternatives": alt.joined(((s.assumptions, s.alternatives) for s in states), shared),
            "write": write,
            "written": written,
            "reader": reader,
            "pending": tuple(sorted((b, k, t) for (b, k), t in pending.items())),
            "events": tuple(sorted(events.items())),
            "exposed": tuple((b, t, keys) for b, (t, keys) in exposed.items()),
            "waited": waited,
            "races": tuple((b, w, a) for b, (w, a) in races.items()),
            "launched": launched,
            "wait": wait,
            "guarded": guarded,
            "reloaded": reloaded,
            "recorded": recorded,
            "streams": stream_model.join([s.streams for s in states], _modes_apart(states)),
        }
    )


def _modes_apart(states: list[PathState]) -> list[alt.Alternatives] | None:
    """Each state's modes, for a stream join, where they are not all one or
    some stream state already holds accesses of narrower modes."""
    modes = [s.modes() for s in states]
    if all(m == modes[0] for m in modes[1:]) and not any(
        s.streams is not None and (s.streams.left_in or s.streams.first_in) for s in states
    ):
        return None
    return modes


def dedupe(states: list[PathState]) -> list[PathState]:
    seen: dict[tuple, PathState] = {}
    for state in states:
        seen.setdefault(state.key(), state)
    return list(seen.values())


def consistent(before: PathState, out: PathState) -> bool:
    """Whether a callee's outcome (walked without some of the caller's
    assumptions) can follow the caller's state: it assumed no mode, and no
    per-step flag at the step's entry, otherwise than the caller. What a path
    has set (` is set`) the callee may have changed."""
    for key, value in out.assumptions:
        if is_set_key(key):
            continue
        known = before.assumed(key)
        if known is not None and known != value:
            return False
    return True


def without_carried(state: PathState, start: dict[str, bool], read: frozenset[str]) -> PathState:
    """`state` less the start's assumptions it carried unread and unchanged: a
    walk's outcome for any start that agrees with this one on `read`."""

    def own(assumptions: tuple) -> tuple:
        return tuple((k, v) for k, v in assumptions if k in read or start.get(k, not v) != v)

    kept = own(state.assumptions)
    modes = tuple(own(m) for m in state.alternatives)
    streams = state.streams
    if streams is not None and (streams.left_in or streams.first_in):
        left_in = tuple((k, tuple(own(m) for m in ms)) for k, ms in streams.left_in)
        first_in = tuple((k, tuple(own(m) for m in ms)) for k, ms in streams.first_in)
        if left_in != streams.left_in or first_in != streams.first_in:
            streams = replace(streams, left_in=left_in, first_in=first_in)
    if kept == state.assumptions and modes == state.alternatives and streams is state.streams:
        return state
    return state.but(assumptions=kept, alternatives=modes, streams=streams)


def canonical(state: PathState) -> PathState:
    """The input a callee is walked from: only what changes its behaviour."""
    return PathState(assumptions=state.assumptions)


CARRIED = "*"  # marks an access made by the previous step (the loop unrolled)


SLOT = "[slot]"  # ends the identity of a round-robin pool's slots


def slot_identity(site: str, pool: str | None = None) -> str:
    """The slots of the pool allocated at `site`, held by the object at `pool` (in
    the root's terms, when known): one slot comes back `depth` steps later, so the
    model knows a pool's slots together; two pools are two identities."""
    return f"{site}@{pool}{SLOT}" if pool else site + SLOT


def is_slot(buffer: str) -> bool:
    return buffer.endswith(SLOT)


FRESH = "@new"  # ends the identity of memory allocated in this step (a D2H landing)


def fresh_identity(site: str) -> str:
    """Memory a call allocates each time it runs (`x.to("cpu", non_blocking=True)`):
    whoever holds it later, it is this step's allocation at `site`."""
    return site + FRESH


def is_fresh(buffer: str) -> bool:
    return buffer.endswith(FRESH)


def site_of(buffer: str) -> str:
    """The allocation site an identity starts with."""
    return buffer.split("@", 1)[0]


def same_memory(a: str, b: str) -> bool:
    """Identities are `site@holder` (the object holding the buffer, in the root's
    terms, when known), `site` alone (holder unknown), a pool's slots, or this
    step's fresh allocation. One allocation site serves every instance of a
    class, so a known holder is never taken for another, and an identity whose
    holder is unknown races nothing: silent where no conflicting access is known.
    A fresh allocation is the memory its site made this step, held by anyone."""
    if a == b:
        return "@" in a or is_slot(a)
    if is_fresh(a) or is_fresh(b):
        return site_of(a) == site_of(b)
    return False


HOST_READ = "#read"  # marks a host read among the host accesses of a walk


def host_read_key(buffer: str) -> str:
    return buffer + HOST_READ


def racing_access(pending: tuple[Pending, ...], buffer: str) -> Trace | None:
    """The pending device access a host access of `buffer` races, if any.

    A host write races any pending device access; a host read (`buffer` ends
    with HOST_READ) only a pending device write (a D2H copy still landing).
    A pool rotates to its next slot before each write, so a slot write races
    only an access carried from an earlier step (the slot comes back after
    `depth` steps of the same path), never one made earlier in this step.
    """
    reading = buffer.endswith(HOST_READ)
    buffer = buffer.removesuffix(HOST_READ)
    slot = is_slot(buffer)
    for b, kind, trace in pending:
        if reading and not kind.startswith("write"):
            continue
        if same_memory(b, buffer) and (not slot or kind.endswith(CARRIED)):
            return trace
    return None


def carried(pending: tuple[Pending, ...]) -> tuple[Pending, ...]:
    """The accesses a step leaves pending, as the next step sees them (the next
    step's fresh allocations are other memory)."""
    return tuple(
        (b, k if k.endswith(CARRIED) else k + CARRIED, t) for b, k, t in pending if not is_fresh(b)
    )


def refreshed(races: tuple[Race, ...], reread: set[str]) -> tuple[Race, ...]:
    """In-step races whose buffer the device reads again after the write.

    The re-upload idiom (`buf.np[:n] = ...; buf.copy_to_gpu()` after an earlier
    `buf.copy_to_gpu()` in the same step): the second copy runs after the
    first in stream order and overwrites its destination with what the host
    wrote, so the torn first copy is never what the device computes with.
    """
    if not races or not reread:
        return races
    return tuple(r for r in races if r[0] not in reread)


def covered_by(keys: frozenset[str], buffer: str, state: PathState) -> bool:
    """Whether waits on `keys` (made after `state`, in a walk entered after it)
    order the pending access of `buffer`."""
    if DEVICE_BARRIER in keys or ENTRY_DRAINED in keys:
        return True
    buffer = buffer.removesuffix(HOST_READ)
    site = site_of(buffer)
    return any(
        any(site_of(b) == site and same_memory(buffer, b) for b in state.event_snapshot(k) or ())
        for k in keys
    )


def compose(before: PathState, out: PathState, step: WitnessStep, start: tuple = ()) -> PathState:
    """`before`, then a callee whose walk from `canonical(before)` ended in `out`.

    Traces made inside the callee get the call site in front; the caller's
    assumptions come back, with whatever the callee decided added. `start` is
    what the callee was walked from: when it decided nothing new, the caller's
    assumptions stand as they are. The callee's writes are checked against
    what the caller left pending, less what the waits before each write cover.
    """
    if out.assumptions == start or out.assumptions == before.assumptions:
        merged = before.assumptions
    else:
        merged = _joined(before.assumptions, out.assumptions)

    def at(trace: Trace) -> Trace:
        return (step, *trace)

    races = list(before.races)
    raced = {b for b, _, _ in races}
    for buffer, trace, keys in out.exposed:
        if buffer in raced or buffer in out.reloaded or covered_by(keys, buffer, before):
            continue
        access = racing_access(before.pending, buffer)
        if access is not None:
            races.append((buffer, at(trace), access))
            raced.add(buffer)
    races = list(refreshed(tuple(races), {b for b, k, _ in out.pending if k == "read"}))
    raced = {b for b, _, _ in races}
    for buffer, write, access in out.races:
        if buffer not in raced:
            races.append((buffer, at(write), at(access)))
            raced.add(buffer)

    left = tuple(p for p in before.pending if not covered_by(out.waited, p[0], before))
    pending = dict(((b, k), t) for b, k, t in left)
    for b, k, t in out.pending:
        pending.setdefault((b, k), at(t))
    remaining = frozenset(b for b, _, _ in left)
    events = dict(before.events) if DEVICE_BARRIER not in out.waited else {}
    for name, covered in out.events:
        events[name] = covered | remaining

    reader = before.reader
    if reader is None:
        seen = before.written
        for b, _, t in out.pending:
            if b in seen:
                reader = at(t)
                break
        if reader is None and out.reader is not None:
            reader = at(out.reader)

    exposed = list(before.exposed)
    known = {b for b, _, _ in exposed}
    for buffer, trace, keys in out.exposed:
        if buffer not in known:
            exposed.append((buffer, at(trace), before.waited | keys))
            known.add(buffer)

    return _built(
        {
            "assumptions": merged,
            "alternatives": alt.combined(
                before.assumptions,
                before.alternatives,
                merged,
                tuple(_joined(before.assumptions, m) for m in out.alternatives),
                frozenset(k for k, _ in out.assumptions if is_set_key(k)),
            ),
            "write": before.write or (at(out.write) if out.write is not None else None),
            "written": before.written | out.written,
            "reader": reader,
            "pending": tuple(sorted((b, k, t) for (b, k), t in pending.items())),
            "events": tuple(sorted(events.items())),
            "exposed": tuple(exposed),
            "waited": before.waited | out.waited,
            "races": tuple(races),
            "launched": (
                at(out.launched)
                if out.launched is not None
                else (None if out.waited & {DEVICE_BARRIER} else before.launched)
            ),
            "wait": at(out.wait) if out.wait is not None else before.wait,
            "guarded": before.guarded or out.guarded,
            "reloaded": before.reloaded
            | out.reloaded
            | ({b for b, k, _ in out.pending if k == "read"} & {b for b, _, _ in before.exposed}),
            "recorded": before.recorded | out.recorded,
            "streams": stream_model.compose(before.streams, out.streams, at),
        }
    )


@lru_cache(maxsize=1 << 16)
def _joined(before: tuple, decided: tuple) -> tuple:
    """The caller's assumptions with the callee's decisions (memoised: the same
    few pairs recur thousands of times in one walk)."""
    assumptions = dict(before)
    assumptions.update(decided)
    return tuple(sorted(assumptions.items()))


def _built(values: dict[str, object]) -> PathState:
    """A PathState from its field values, without the frozen dataclass's per-field
    setattr: states are made per effect and per call, and __init__ was a tenth
    of a walk."""
    state = object.__new__(PathState)
    state.__dict__.update(values)
    return state
