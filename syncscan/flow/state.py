"""Path states: what one path of the step has done, under which mode assumptions.

The abstraction is small on purpose: the first persistent pinned write, the
first device reader after it, whether a launch is still unwaited, the events
waited before the first write and recorded after the last. States with equal
facts merge (their assumptions intersect), so the number of states stays
bounded however many branches a step has.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WitnessStep:
    """One step of a witness path, as a maintainer follows it in an editor."""

    path: str
    line: int
    function: str
    note: str


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
        """A copy with `changes`: `dataclasses.replace` without its per-call
        validation, which was a tenth of a walk (states are copied per effect)."""
        new = object.__new__(PathState)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

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

    def made(trace: Trace | None) -> Trace | None:
        return (step, *trace) if trace is not None else None

    if out.assumptions == start or out.assumptions == before.assumptions:
        merged = before.assumptions
    else:
        assumptions = dict(before.assumptions)
        assumptions.update(out.assumptions)
        merged = tuple(sorted(assumptions.items()))
    wait = made(out.wait) or before.wait
    if before.write is None:
        return PathState(
            assumptions=merged,
            write=made(out.write),
            reader=made(out.reader),
            in_flight=out.in_flight,
            wait=wait,
            entry_syncs=before.entry_syncs | out.entry_syncs,
            records=out.records,
            rewrote=False,
        )
    touched = out.reader is not None or out.wait is not None
    return PathState(
        assumptions=merged,
        write=before.write,
        reader=before.reader or made(out.reader),
        in_flight=out.in_flight if touched else before.in_flight,
        wait=wait,
        entry_syncs=before.entry_syncs,
        records=out.records if out.rewrote else before.records | out.records,
        rewrote=before.rewrote or out.rewrote,
    )
