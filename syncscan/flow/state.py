"""Path states: what one path of the step has done, under which mode assumptions.

The abstraction is small on purpose: the first persistent pinned write, the
first device reader after it, whether a launch is still unwaited, the events
waited before the first write and recorded after the last. States with equal
facts merge (their assumptions intersect), so the number of states stays
bounded however many branches a step has.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class WitnessStep:
    """One step of a witness path, as a maintainer follows it in an editor."""

    path: str
    line: int
    function: str
    note: str
    # For a pinned write: what was written ("writes pinned buffer Slots.buf") and
    # the round-robin pool it is a slot of. Rules read these, never the prose note.
    written: str = ""
    pool: str | None = None
    column: int = 1  # 1-based, of the call or statement at `line`


Trace = tuple[WitnessStep, ...]

DEVICE_BARRIER = "<device>"  # a full-device wait: orders every earlier launch


@dataclass(frozen=True)
class PathState:
    assumptions: tuple[tuple[str, bool], ...] = ()
    write: Trace | None = None
    reader: Trace | None = None
    in_flight: bool = False
    wait: Trace | None = None
    entry_syncs: frozenset[str] = frozenset()
    records: frozenset[str] = frozenset()
    rewrote: bool = False  # wrote again after the first write (for composing callees)

    def facts(self) -> tuple:
        return (
            self.write is not None,
            self.reader is not None,
            self.in_flight,
            self.wait is not None,
            self.entry_syncs,
            self.records,
            self.rewrote,
        )

    def key(self) -> tuple:
        return (self.assumptions, *self.facts())

    def assumed(self, predicate: str) -> bool | None:
        for key, value in self.assumptions:
            if key == predicate:
                return value
        return None

    def but(self, **changes: object) -> PathState:
        """A copy with `changes` (`dataclasses.replace` without its per-call checks)."""
        return _built({**self.__dict__, **changes})

    def assume(self, predicate: str, value: bool) -> PathState:
        return self.but(assumptions=tuple(sorted((*self.assumptions, (predicate, value)))))

    # ------------------------------------------------------------------ effects
    def on_write(self, trace: Trace) -> PathState:
        return self.but(
            write=self.write or trace, records=frozenset(), rewrote=self.write is not None
        )

    def on_launch(self, trace: Trace) -> PathState:
        if self.write is None:
            return self
        return self.but(in_flight=True, reader=self.reader or trace)

    def on_wait(self, trace: Trace, event: str | None) -> PathState:
        entry = self.entry_syncs
        if self.write is None and event is not None:
            entry = entry | {event}
        return self.but(in_flight=False, wait=trace, entry_syncs=entry)

    def on_record(self, event: str) -> PathState:
        if self.write is None:
            return self
        return self.but(records=self.records | {event})

    def semaphore(self) -> str | None:
        """The event that bounds this path in the semaphore form, if any."""
        if DEVICE_BARRIER in self.entry_syncs:
            return DEVICE_BARRIER
        common = sorted(self.entry_syncs & self.records)
        return common[0] if common else None


def merge(states: list[PathState]) -> list[PathState]:
    """Merge states with equal facts, keeping only the assumptions they share."""
    if len(states) < 2:
        return states
    groups: dict[tuple, list[PathState]] = {}
    for state in states:
        groups.setdefault(state.facts(), []).append(state)
    merged: list[PathState] = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            merged.append(first)
            continue
        shared = set(first.assumptions)
        for other in group[1:]:
            shared &= set(other.assumptions)
        merged.append(first.but(assumptions=tuple(sorted(shared))))
    return merged


def dedupe(states: list[PathState]) -> list[PathState]:
    seen: dict[tuple, PathState] = {}
    for state in states:
        seen.setdefault(state.key(), state)
    return list(seen.values())


def canonical(state: PathState) -> PathState:
    """The input a callee is walked from: only what changes its behaviour."""
    marker = state.write
    return PathState(assumptions=state.assumptions, write=marker)


def compose(before: PathState, out: PathState, step: WitnessStep, start: tuple = ()) -> PathState:
    """`before`, then a callee whose walk from `canonical(before)` ended in `out`.

    Traces made inside the callee get the call site in front; the caller's
    assumptions come back, with whatever the callee decided added. `start` is
    what the callee was walked from: when it decided nothing new, the caller's
    assumptions stand as they are.
    """
    if out.assumptions == start or out.assumptions == before.assumptions:
        merged = before.assumptions
    else:
        merged = _joined(before.assumptions, out.assumptions)
    wait = (step, *out.wait) if out.wait is not None else before.wait
    reader = (step, *out.reader) if out.reader is not None else None
    if before.write is None:
        return _state(
            merged,
            (step, *out.write) if out.write is not None else None,
            reader,
            out.in_flight,
            wait,
            before.entry_syncs | out.entry_syncs,
            out.records,
            False,
        )
    touched = out.reader is not None or out.wait is not None
    return _state(
        merged,
        before.write,
        before.reader or reader,
        out.in_flight if touched else before.in_flight,
        wait,
        before.entry_syncs,
        out.records if out.rewrote else before.records | out.records,
        before.rewrote or out.rewrote,
    )


@lru_cache(maxsize=1 << 16)
def _joined(before: tuple, decided: tuple) -> tuple:
    """The caller's assumptions with the callee's decisions (memoised: the same
    few pairs recur thousands of times in one walk)."""
    assumptions = dict(before)
    assumptions.update(decided)
    return tuple(sorted(assumptions.items()))


def _state(
    assumptions: tuple,
    write: Trace | None,
    reader: Trace | None,
    in_flight: bool,
    wait: Trace | None,
    entry_syncs: frozenset[str],
    records: frozenset[str],
    rewrote: bool,
) -> PathState:
    return _built(
        {
            "assumptions": assumptions,
            "write": write,
            "reader": reader,
            "in_flight": in_flight,
            "wait": wait,
            "entry_syncs": entry_syncs,
            "records": records,
            "rewrote": rewrote,
        }
    )


def _built(values: dict[str, object]) -> PathState:
    """A PathState from its field values, without the frozen dataclass's per-field
    setattr: states are made per effect and per call, and __init__ was a tenth
    of a walk."""
    state = object.__new__(PathState)
    state.__dict__.update(values)
    return state
