"""Stream facts: the happens-before order between streams on one path.

The host model (state.py) knows one stream. Engines overlap work on several:
a copy stream, a scheduling stream, an auxiliary compute stream. Their order
comes only from device-side edges — `s.wait_stream(t)`, `s.wait_event(e)`,
`e.wait(s)` after `e.record(t)` — or from the host waiting for one of them
before it launches more work. Two accesses of the same memory by two streams,
at least one a write, with no such edge between them are a hazard (SYNC004).

Each device access not yet ordered for every agent is `live`, with the set of
streams already ordered after it (`orders`: its own stream at first; a stream
that waits on one of those joins it). A host wait that covers an access
removes it: whatever the host launches later follows it. That is PyTorch's
CUDA sanitizer's vector-clock question, kept per access so a path's state
stays small and joins stay simple.

A callee is walked once from the empty state, so the state is also a transfer
function: `knows` says, per stream, which streams' work from before the walk
it is now ordered after (`exposed` keeps that per first access), in terms of
the walk's entry; `compose` replays it after any caller state. `CURRENT` is
the stream current when the walk began: the caller's current stream.

Path states of different modes that merge join their stream facts; each live
and first access then keeps the modes of the paths that made it (`left_in`,
`first_in`), so a step is paired with the next only where those agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from syncscan.flow import alternatives as alt

CURRENT = "<current>"  # the stream current at the walk's entry
DEFAULT = "<default>"  # the default stream, named by a call (`torch.cuda.default_stream()`)
HOST = "<host>"  # the host thread, as an agent that knows what it waited for
ALL = "<all>"  # every stream's work before the walk's entry (a device barrier)
EVENT = "event:"  # prefix: the work a caller recorded on this event (not recorded here)

Derived = TypeVar("Derived")

Trace = tuple  # a witness trace (state.Trace): WitnessSteps, the innermost last
Key = tuple[str, str, str]  # (memory, "read" | "write", stream)
Live = tuple[Key, Trace, frozenset[str]]

# Why the later access is not ordered after the earlier one (remedy per shape).
NO_EDGE = "no edge"
ONE_WAY = "one direction only"
WAIT_TOO_EARLY = "wait before the access"
STALE_EVENT = "stale event"
FREED_IN_USE = "freed in use"  # the caching allocator may reuse a block another stream uses


@dataclass(frozen=True)
class Hazard:
    """Two accesses of `memory` by two streams, at least one a write, unordered."""

    memory: str
    first: Trace
    first_kind: str
    first_stream: str
    second: Trace
    second_kind: str
    second_stream: str
    shape: str
    across_steps: bool = False

    @property
    def key(self) -> tuple:
        a, b = self.first[-1], self.second[-1]
        return (self.memory, a.path, a.line, b.path, b.line)

    @property
    def conflict(self) -> str:
        """write-after-read, read-after-write or write-after-write."""
        return f"{self.second_kind}-after-{self.first_kind}"


@dataclass(frozen=True)
class StreamFacts:
    current: str = CURRENT
    live: tuple[Live, ...] = ()
    # event -> (live accesses its record covers, entry-time agents it covers, recording stream)
    events: tuple[tuple[str, frozenset[Key], frozenset[str], str], ...] = ()
    knows: tuple[tuple[str, frozenset[str]], ...] = ()  # stream (or HOST) -> entry agents
    exposed: tuple[tuple[Key, Trace, frozenset[str]], ...] = ()
    waits: frozenset[tuple[str, str, str]] = frozenset()  # (waiter, waited, "stream" | "event")
    hazards: tuple[Hazard, ...] = ()
    # Live access -> the instance modes of the paths that left it live, where a
    # join of paths in different modes holds it; absent, the state's own modes.
    left_in: tuple[tuple[Key, alt.Alternatives], ...] = ()
    # The same for first accesses (`exposed`): the modes of the paths that made them.
    first_in: tuple[tuple[Key, alt.Alternatives], ...] = ()
    # Fresh tensors allocated on this walk: (memory, the stream current at the allocation).
    allocated: tuple[tuple[str, str], ...] = ()
    # `x.record_stream(s)`: (memory, s); the allocator will not reuse x before s's work.
    recorded: tuple[tuple[str, str], ...] = ()

    def facts(self) -> tuple:
        return self._derived("_facts", self._compute_facts)

    def _compute_facts(self) -> tuple:
        return (
            self.current,
            tuple((k, o) for k, _, o in self.live),
            tuple((e, c, a) for e, c, a, _ in self.events),
            self.knows,
            tuple((k, a) for k, _, a in self.exposed),
            tuple(h.key for h in self.hazards),
            self.left_in,
            self.first_in,
            self.allocated,
            self.recorded,
        )

    def agents(self) -> frozenset[str]:
        """The streams this path ran work on (and the one it is on): paths of
        different modes that used different streams are kept apart, so a merge
        never pairs one mode's stream with another's."""
        return self._derived(
            "_agents", lambda: self.live_streams() | self.exposed_streams() | {self.current}
        )

    def live_streams(self) -> frozenset[str]:
        """The streams of the live accesses."""
        return self._derived("_live_streams", lambda: frozenset(k[2] for k, _, _ in self.live))

    def exposed_streams(self) -> frozenset[str]:
        """The streams of the first accesses."""
        return self._derived(
            "_exposed_streams", lambda: frozenset(k[2] for k, _, _ in self.exposed)
        )

    def exposed_keys(self) -> frozenset[Key]:
        """The first accesses' keys."""
        return self._derived("_exposed_keys", lambda: frozenset(k for k, _, _ in self.exposed))

    def live_by_memory(self) -> dict[str, list[Live]]:
        """The live accesses, by the memory they access."""

        def group() -> dict[str, list[Live]]:
            found: dict[str, list[Live]] = {}
            for entry in self.live:
                found.setdefault(entry[0][0], []).append(entry)
            return found

        return self._derived("_by_memory", group)

    def _derived(self, name: str, compute: Callable[[], Derived]) -> Derived:
        """A fact derived from the fields, computed once per state: a step's
        states are composed and joined many times over (`_but` drops them)."""
        found = self.__dict__.get(name)
        if found is None:
            found = compute()
            object.__setattr__(self, name, found)
        return found

    def __getstate__(self) -> dict[str, object]:
        # The fields only: derived facts are rebuilt where they are asked
        # (a worker's paths travel to the parent).
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    # ------------------------------------------------------------------ queries
    def resolve(self, stream: str) -> str:
        """A stream as this path sees it: CURRENT is the stream current here;
        DEFAULT is the stream current when the walk began (the step runs on the
        default stream unless the engine says otherwise)."""
        if stream == CURRENT:
            return self.current
        return CURRENT if stream == DEFAULT else stream

    def known(self, stream: str) -> frozenset[str]:
        """The entry-time agents whose work `stream`'s next launch follows."""
        own = _lookup(self.knows, stream)
        host = _lookup(self.knows, HOST)
        return own | host if host else own

    def modes_left(self, key: Key) -> alt.Alternatives | None:
        """The modes of the paths that left live access `key`, where a join
        narrowed them below the state's own (None: the state's modes)."""
        return _tagged(self.left_in, key)

    def modes_first(self, key: Key) -> alt.Alternatives | None:
        """The same for the first access `key` (`exposed`)."""
        return _tagged(self.first_in, key)

    def event(self, name: str) -> tuple[frozenset[Key], frozenset[str], str] | None:
        for event, covered, agents, stream in self.events:
            if event == name:
                return covered, agents, stream
        return None

    # ------------------------------------------------------------------ effects
    def access(self, memory: str, kind: str, trace: Trace) -> StreamFacts:
        """`memory` read or written by work launched on the current stream."""
        stream = self.current
        hazards = list(self.hazards)
        seen = {h.key for h in hazards}
        for (m, k, other), earlier, orders in self.live:
            if m != memory or other == stream or "write" not in (k, kind) or stream in orders:
                continue
            hazard = Hazard(
                memory, earlier, k, other, trace, kind, stream, _shape(self.waits, stream, other)
            )
            if hazard.key not in seen:
                hazards.append(hazard)
                seen.add(hazard.key)
        key = (memory, kind, stream)
        # The latest access of a key is the least ordered one (stream order):
        # it stands for the earlier ones.
        kept = (x for x in self.live if x[0] != key)
        live = tuple(sorted((*kept, (key, trace, frozenset({stream})))))
        exposed = self.exposed
        if key not in self.exposed_keys():
            exposed = (*exposed, (key, trace, self.known(stream)))
        left_in = tuple(x for x in self.left_in if x[0] != key) if self.left_in else ()
        return StreamFacts(
            self.current,
            live,
            self.events,
            self.knows,
            exposed,
            self.waits,
            tuple(hazards),
            left_in,
            self.first_in,
            self.allocated,
            self.recorded,
        )

    def allocate(self, memory: str, trace: Trace) -> StreamFacts:
        """A fresh tensor allocated on the current stream: the block may be one
        this stream's earlier work still uses, so the allocation counts as this
        stream's write."""
        facts = self.access(memory, "write", trace)
        allocated = tuple(sorted({*facts.allocated, (memory, self.current)}))
        return facts._but(allocated=allocated)

    def record_stream(self, memory: str, stream: str) -> StreamFacts:
        """`x.record_stream(s)`: the allocator waits for s's work before reusing x."""
        return self._but(recorded=tuple(sorted({*self.recorded, (memory, stream)})))

    def free(self, memory: str, trace: Trace) -> StreamFacts:
        """The last reference to a fresh tensor goes: the stream that allocated it
        may hand its block to its next allocation, which races every other
        stream's access not ordered before that stream and not recorded with
        `record_stream`. The memory is gone after this."""
        owners = [s for m, s in self.allocated if m == memory]
        if not owners:
            return self
        recorded = {s for m, s in self.recorded if m == memory}
        hazards = list(self.hazards)
        seen = {h.key for h in hazards}
        for (m, kind, other), earlier, orders in self.live:
            if m != memory or other in recorded:
                continue
            for owner in owners:
                if other == owner or owner in orders:
                    continue
                hazard = Hazard(memory, earlier, kind, other, trace, "write", owner, FREED_IN_USE)
                if hazard.key not in seen:
                    hazards.append(hazard)
                    seen.add(hazard.key)
        return self._but(
            live=tuple(x for x in self.live if x[0][0] != memory),
            hazards=tuple(hazards),
            allocated=tuple(x for x in self.allocated if x[0] != memory),
            recorded=tuple(x for x in self.recorded if x[0] != memory),
        )

    def with_current(self, stream: str) -> StreamFacts:
        return self._but(current=stream)

    def wait_stream(self, waiter: str, waited: str) -> StreamFacts:
        """`waiter.wait_stream(waited)`: later work on waiter follows all of waited's."""
        live = tuple((k, t, o | {waiter} if waited in o else o) for k, t, o in self.live)
        knows = _with(self.knows, waiter, self.known(waiter) | self.known(waited) | {waited})
        return self._but(live=live, knows=knows, waits=self.waits | {(waiter, waited, "stream")})

    def record(self, event: str, stream: str) -> StreamFacts:
        covered = frozenset(k for k, _, o in self.live if stream in o)
        entry = self.known(stream) | {stream}
        events = tuple(
            sorted((*(e for e in self.events if e[0] != event), (event, covered, entry, stream)))
        )
        return self._but(events=events)

    def wait_event(self, waiter: str, event: str) -> StreamFacts:
        """`waiter.wait_event(event)` / `event.wait(waiter)`."""
        found = self.event(event)
        if found is None:
            # Recorded before this walk (by a caller, or by the previous step).
            knows = _with(self.knows, waiter, self.known(waiter) | {EVENT + event})
            return self._but(knows=knows, waits=self.waits | {(waiter, EVENT + event, "event")})
        covered, agents, stream = found
        live = tuple((k, t, o | {waiter} if k in covered else o) for k, t, o in self.live)
        knows = _with(self.knows, waiter, self.known(waiter) | agents)
        return self._but(live=live, knows=knows, waits=self.waits | {(waiter, stream, "event")})

    def host_waits_event(self, event: str) -> StreamFacts:
        found = self.event(event)
        if found is None:
            return self._but(knows=_with(self.knows, HOST, self.known(HOST) | {EVENT + event}))
        covered, agents, _ = found
        live = tuple(x for x in self.live if x[0] not in covered)
        return self._but(live=live, knows=_with(self.knows, HOST, self.known(HOST) | agents))

    def host_waits_stream(self, stream: str) -> StreamFacts:
        live = tuple(x for x in self.live if stream not in x[2])
        agents = self.known(HOST) | self.known(stream) | {stream}
        return self._but(live=live, knows=_with(self.knows, HOST, agents))

    def device_barrier(self) -> StreamFacts:
        return self._but(live=(), knows=_with(self.knows, HOST, frozenset({ALL})))

    def _but(self, **changes: object) -> StreamFacts:
        values = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        values.update(changes)
        if self.left_in and "live" in changes:
            keys = {k for k, _, _ in values["live"]}
            values["left_in"] = tuple(x for x in self.left_in if x[0] in keys)
        if self.first_in and "exposed" in changes:
            keys = {k for k, _, _ in values["exposed"]}
            values["first_in"] = tuple(x for x in self.first_in if x[0] in keys)
        return StreamFacts(**values)

    def carried(self) -> StreamFacts:
        """What the next step sees of this one: its live accesses (with the modes
        that left them) and event records."""
        return StreamFacts(
            live=self.live, events=self.events, waits=self.waits, left_in=self.left_in
        )


def _shape(waits: frozenset[tuple[str, str, str]], waiter: str, waited: str) -> str:
    """Why `waiter`'s access is not ordered after `waited`'s, from the waits made."""
    if (waiter, waited, "event") in waits:
        return STALE_EVENT
    if any(w[0] == waiter and w[2] == "event" and w[1].startswith(EVENT) for w in waits):
        return STALE_EVENT  # on an event an earlier step recorded, not after this access
    if (waiter, waited, "stream") in waits:
        return WAIT_TOO_EARLY
    if any(w[0] == waited and w[1] == waiter for w in waits):
        return ONE_WAY
    return NO_EDGE


def _lookup(pairs: tuple[tuple[str, frozenset[str]], ...], name: str) -> frozenset[str]:
    for key, value in pairs:
        if key == name:
            return value
    return frozenset()


def _with(
    pairs: tuple[tuple[str, frozenset[str]], ...], name: str, value: frozenset[str]
) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple(sorted((*(p for p in pairs if p[0] != name), (name, value))))


# ---------------------------------------------------------------------- composition
class _Composition:
    """A callee's stream facts (`out`, walked from the empty state) read in the
    terms of a caller state (`before`): its CURRENT is the caller's current
    stream, its entry agents the caller's live accesses they order."""

    def __init__(self, before: StreamFacts, out: StreamFacts) -> None:
        self.before = before
        self.out = out
        self._covers: dict[frozenset[str], tuple[bool, frozenset[str], tuple]] = {}

    def name(self, stream: str) -> str:
        return self.before.current if stream == CURRENT else stream

    def translate(self, agents: frozenset[str]) -> frozenset[str]:
        """Entry agents of the callee, in the caller's entry terms."""
        result: set[str] = set()
        for agent in agents:
            if agent in (ALL, HOST):
                result.add(agent)
            elif agent.startswith(EVENT):
                found = self.before.event(agent.removeprefix(EVENT))
                result |= found[1] if found is not None else {agent}
            else:
                stream = self.name(agent)
                result |= self.before.known(stream) | {stream}
        return frozenset(result)

    def covers(self, agents: frozenset[str], key: Key, orders: frozenset[str]) -> bool:
        """Whether callee entry agents order the caller's live access `key`:
        all work, a stream ordered after it, or a caller's record covering it."""
        split = self._covers.get(agents)
        if split is None:
            streams = frozenset(self.name(a) for a in agents if not a.startswith(EVENT))
            recorded = tuple(
                found[0]
                for a in agents
                if a.startswith(EVENT) and (found := self.before.event(a.removeprefix(EVENT)))
            )
            split = self._covers[agents] = (ALL in agents, streams, recorded)
        everything, streams, recorded = split
        return everything or not streams.isdisjoint(orders) or any(key in r for r in recorded)

    def hazards(self, at, seen: set[tuple]) -> list[Hazard]:
        """The callee's first accesses that race what the caller left live."""
        before, out, name = self.before, self.out, self.name
        streams = before.live_streams()
        if not streams or len(streams | {name(s) for s in out.exposed_streams()}) < 2:
            return []  # one stream: its own order is enough
        by_memory = before.live_by_memory()
        waits: frozenset[tuple[str, str, str]] | None = None  # made for the first hazard
        found: list[Hazard] = []
        for (memory, kind, stream), trace, agents in out.exposed:
            stream = name(stream)
            for key, earlier, orders in by_memory.get(memory, ()):
                _, k, other = key
                if other == stream or "write" not in (k, kind):
                    continue
                if stream in orders or self.covers(agents, key, orders):
                    continue
                if waits is None:
                    waits = before.waits | {(name(a), name(b), how) for a, b, how in out.waits}
                shape = _shape(waits, stream, other)
                hazard = Hazard(memory, earlier, k, other, at(trace), kind, stream, shape)
                if hazard.key not in seen:
                    found.append(hazard)
                    seen.add(hazard.key)
        return found


def compose(before: StreamFacts | None, out: StreamFacts | None, at) -> StreamFacts | None:
    """`before`, then a callee whose walk from the empty state ended in `out`;
    `at` puts the call site in front of a callee's trace."""
    if out is None:
        return before
    if before is None:
        before = StreamFacts()
    composition = _Composition(before, out)
    name, covers, translate = composition.name, composition.covers, composition.translate
    hazards = list(before.hazards)
    seen = {h.key for h in hazards}
    hazards += composition.hazards(at, seen)
    for h in out.hazards:
        moved = replace(
            h,
            first=at(h.first),
            first_stream=name(h.first_stream),
            second=at(h.second),
            second_stream=name(h.second_stream),
        )
        if moved.key not in seen:
            hazards.append(moved)
            seen.add(moved.key)

    host = _lookup(out.knows, HOST)
    waiters = [(name(s), agents) for s, agents in out.knows if s != HOST]
    if host or waiters:
        kept: list[Live] = []
        for key, trace, orders in before.live:
            if host and covers(host, key, orders):
                continue  # the host waited for it inside the callee
            added = {s for s, agents in waiters if s not in orders and covers(agents, key, orders)}
            kept.append((key, trace, orders | added if added else orders))
        live_before: tuple[Live, ...] = tuple(kept)
    else:
        live_before = before.live
    if out.live:
        live = {k: (t, o) for k, t, o in live_before}
        in_caller: dict[frozenset[str], frozenset[str]] = {}  # a callee's accesses share them
        for (memory, kind, stream), trace, orders in out.live:
            if CURRENT in orders:
                found = in_caller.get(orders)
                if found is None:
                    found = in_caller[orders] = frozenset(name(s) for s in orders)
                orders = found
            live[(memory, kind, name(stream))] = (at(trace), orders)
        merged_live = tuple(sorted((k, t, o) for k, (t, o) in live.items()))
    else:
        merged_live = live_before

    if out.events:
        events = {e: (c, a, s) for e, c, a, s in before.events}
        for event, covered, agents, stream in out.events:
            inherited = {k for k, _, o in before.live if covers(agents, k, o)}
            keys = frozenset((m, k, name(s)) for m, k, s in covered) | inherited
            events[event] = (keys, translate(agents), name(stream))
        merged_events = tuple(sorted((e, c, a, s) for e, (c, a, s) in events.items()))
    else:
        merged_events = before.events

    knows = dict(before.knows)
    for stream, agents in out.knows:
        target = stream if stream == HOST else name(stream)
        knows[target] = before.known(target) | translate(agents)

    exposed = list(before.exposed)
    before_keys = before.exposed_keys()
    added: set[Key] = set()
    # What a first access's stream knows, by stream and entry agents: a callee's
    # first accesses share a few of each (SGLang 0.5.23: 1.5 M composed).
    knowing: dict[tuple[str, frozenset[str]], frozenset[str]] = {}
    for (memory, kind, stream), trace, agents in out.exposed:
        key = (memory, kind, name(stream))
        if key not in before_keys and key not in added:
            known = knowing.get((key[2], agents))
            if known is None:
                known = knowing[(key[2], agents)] = before.known(key[2]) | translate(agents)
            exposed.append((key, at(trace), known))
            added.add(key)

    waits = before.waits | {(name(a), name(b), how) for a, b, how in out.waits}
    left_in = before.left_in
    if left_in or out.left_in:
        # The callee's own live accesses carry its tags (or its path's modes).
        narrowed = dict(before.left_in)
        for (memory, kind, stream), _, _ in out.live:
            narrowed.pop((memory, kind, name(stream)), None)
        for (memory, kind, stream), modes in out.left_in:
            narrowed[(memory, kind, name(stream))] = modes
        live_keys = {k for k, _, _ in merged_live}
        left_in = tuple(sorted((k, m) for k, m in narrowed.items() if k in live_keys))
    first_in = before.first_in
    if out.first_in:
        renamed = {(m, k, name(s)): modes for (m, k, s), modes in out.first_in}
        new = {key: modes for key, modes in renamed.items() if key not in before_keys}
        first_in = tuple(sorted({**dict(before.first_in), **new}.items()))
    return StreamFacts(
        before.current,
        merged_live,
        merged_events,
        tuple(sorted(knows.items())),
        tuple(exposed),
        waits,
        tuple(hazards),
        left_in,
        first_in,
        _pairs(before.allocated, ((m, name(s)) for m, s in out.allocated)),
        _pairs(before.recorded, ((m, name(s)) for m, s in out.recorded)),
    )


def _pairs(*groups) -> tuple[tuple[str, str], ...]:
    """(memory, stream) pairs of several states or walks together, once each."""
    return tuple(sorted({pair for group in groups for pair in group}))


def join(
    facts: list[StreamFacts | None], modes: list[alt.Alternatives] | None = None
) -> StreamFacts | None:
    """One stream state for several paths: what some path may have left live
    (ordered only where every path ordered it), what every path must know.
    `modes`: each path's instance modes, where they differ; a live access that
    only some of them left keeps theirs (`left_in`), so the next step is paired
    with it only in a mode where it can be live."""
    present = [f for f in facts if f is not None]
    if not present:
        return None
    if len(present) == len(facts) and all(f == present[0] for f in present[1:]):
        return present[0]
    states = [f if f is not None else StreamFacts() for f in facts]
    first = states[0]
    live: dict[Key, tuple[Trace, frozenset[str]]] = {}
    exposed: dict[Key, tuple[Trace, frozenset[str]]] = {}
    hazards: dict[tuple, Hazard] = {}
    met_live: list[tuple] = []
    met_exposed: list[tuple] = []
    for state in states:
        _meet(live, state.live, met_live)
        _meet(exposed, state.exposed, met_exposed)
        for h in state.hazards:
            hazards.setdefault(h.key, h)
    streams = {s for state in states for s, _ in state.knows}
    knows = {
        s: frozenset.intersection(*(_lookup(state.knows, s) for state in states)) for s in streams
    }
    events = {}
    names = {e for state in states for e, _, _, _ in state.events}
    if names:
        by_state = [{k: t for k, t, _ in state.live} for state in states]
    shown: dict[Key, Trace] = {}  # a stale access's trace, as the last event left it
    for event in sorted(names):
        found = [state.event(event) for state in states]
        agents = frozenset.intersection(*(f[1] if f else frozenset() for f in found))
        # A record covers an access only if every path that left it live recorded
        # after it; the access is then shown by the first path that did not.
        stale: set[Key] = set()
        for f, traces in zip(found, by_state, strict=True):
            newly = (traces.keys() if f is None else traces.keys() - f[0]) - stale
            shown.update(zip(newly, map(traces.__getitem__, newly), strict=True))  # in C
            stale |= newly
        recorder = next(f[2] for f in found if f is not None)
        events[event] = (frozenset(live.keys() - stale), agents, recorder)
    for k, trace in shown.items():
        live[k] = (trace, live[k][1])
    return StreamFacts(
        first.current,
        tuple(sorted((k, t, o) for k, (t, o) in live.items())),
        tuple(sorted((e, c, a, s) for e, (c, a, s) in events.items())),
        tuple(sorted((s, a) for s, a in knows.items() if a)),
        tuple((k, t, a) for k, (t, a) in exposed.items()),
        frozenset().union(*(s.waits for s in states)),
        tuple(hazards.values()),
        _narrowed([(s.live, s.left_in) for s in states], modes) if modes is not None else (),
        _narrowed([(s.exposed, s.first_in) for s in states], modes) if modes is not None else (),
        # A tensor some path allocated (or recorded) is: the allocator keeps one rule.
        _pairs(*(s.allocated for s in states)),
        _pairs(*(s.recorded for s in states)),
    )


def _tagged(tags: tuple[tuple[Key, alt.Alternatives], ...], key: Key) -> alt.Alternatives | None:
    for entry, modes in tags:
        if entry == key:
            return modes
    return None


def _narrowed(
    paths: list[tuple[tuple[Live, ...], tuple[tuple[Key, alt.Alternatives], ...]]],
    modes: list[alt.Alternatives],
) -> tuple[tuple[Key, alt.Alternatives], ...]:
    """Per live (or first) access, the modes of the joined paths that made it
    (each path's entries and their tags, with its own modes), where narrower
    than all the paths' modes together."""
    every = alt.union(modes)
    # The stream model's costliest step (SGLang 0.5.23: 16,414 joins of up to
    # thousands of accesses each): no list made for an access already met.
    contributed: dict[Key, list[alt.Alternatives]] = {}
    for (entries, tags), own in zip(paths, modes, strict=True):
        tagged = dict(tags)
        for key, _, _ in entries:
            modes_made = tagged.get(key) or own
            made = contributed.get(key)
            if made is None:
                contributed[key] = [modes_made]
            else:
                made.append(modes_made)
    # One union per distinct list of contributions: most accesses were made
    # by the same paths, with the same tags.
    unions: dict[tuple[int, ...], alt.Alternatives] = {}
    found = []
    for key, lists in contributed.items():
        signature = tuple(map(id, lists))
        narrowed = unions.get(signature)
        if narrowed is None:
            narrowed = unions[signature] = alt.union(lists)
        if narrowed and narrowed != every:
            found.append((key, narrowed))
    return tuple(sorted(found))


def _meet(
    into: dict[Key, tuple[Trace, frozenset[str]]],
    entries: tuple[tuple[Key, Trace, frozenset[str]], ...],
    met: list[tuple],
) -> None:
    """Join one path's entries into `into`: the first trace, and the streams
    (agents) every path has. Paths of one branch often share a tuple: once is enough."""
    if any(entries is other for other in met):
        return
    met.append(entries)
    for key, trace, known in entries:
        got = into.get(key)
        if got is None:
            into[key] = (trace, known)
        elif got[1] is not known:  # paths share most of what they know: nothing to meet
            into[key] = (got[0], got[1] & known)


def next_step_hazards(end: StreamFacts | None, following: StreamFacts | None) -> list[Hazard]:
    """Hazards between what a step left live and the next step's accesses (the
    loop unrolled once): the next step's walk read after this one's end."""
    if end is None or following is None or not end.live or not following.exposed:
        return []
    found = _Composition(end.carried(), following).hazards(lambda trace: trace, set())
    return [replace(h, across_steps=True) for h in found]
