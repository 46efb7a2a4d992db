"""Memoised callee walks, each serving every start state that agrees with the
one it was walked from on what the walk read.

A callee is walked from the assumptions it could test (walk.py `_visible`).
Most of them it never reads: the modes of other objects under the same path,
or of its class where `self` escapes. Walked once per combination, the callees
of a large step path (SGLang's model runner) ran past the budget. Each walk
records the predicates looked up while it ran (state.CONSULTED); its outcome
drops the start's assumptions it only carried, and it is stored under the
start restricted to those it read. A later start is looked up under each read
set met for the same frame.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncscan.findings import WitnessStep
from syncscan.flow.host_syncs import HostSync, RegionSite, WalkRegions
from syncscan.flow.state import PathState, without_carried
from syncscan.flow.symbols import Renamer
from syncscan.resolve.callgraph import context_key

Completion = tuple[WitnessStep, list[PathState]]  # where, and the states reaching it
Assumptions = tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class CalleeWalk:
    """A memoised callee walk: its outcomes, the completions met inside, the
    functions active outside it whose recursion it cut, whether it changed
    nothing, and the start's predicates it read."""

    outs: list[PathState]
    inside: list[Completion]
    cuts: frozenset[tuple[str, str | None]]
    unchanged: bool
    read: frozenset[str] = frozenset()
    # The host syncs met inside, relative to the callee's entry (host_syncs.py).
    syncs: tuple[HostSync, ...] = ()
    # The summary items the walk read, memo hits included (reads.py): a reuse
    # of the walk reads them too.
    items: frozenset[str] | set[str] = frozenset()
    # The sanctioned regions it opened, with the sync sites met inside them,
    # and every sync site it met (host_syncs.py): a walk taken instead of
    # walked enters and meets them again.
    regions: WalkRegions = ()
    sites: frozenset[RegionSite] = frozenset()
    # How many levels of bodies below its own it walked (walk.py MAX_DEPTH), and
    # whether that depth limit cut a call in it: a walk cut short holds only at
    # the depth it was made.
    height: int = 0
    truncated: bool = False
    work: int = 0  # statement visits it cost (the budget), nested walks included
    # The functions it ran, nested walks' included ("qualname|self class"): a
    # walk reused where one of them is active would not be what walking gives.
    functions: frozenset[str] = frozenset()

    def renamed(self, renamer: Renamer) -> CalleeWalk:
        return replace(
            self,
            outs=[renamer.state(s) for s in self.outs],
            inside=[(where, [renamer.state(s) for s in states]) for where, states in self.inside],
            read=renamer.names(self.read),
        )

    def reusable(self, start: Assumptions) -> CalleeWalk:
        """This walk for any start agreeing with `start` on what it read."""
        given = dict(start)
        return replace(
            self,
            outs=[without_carried(s, given, self.read) for s in self.outs],
            inside=[
                (where, [without_carried(s, given, self.read) for s in states])
                for where, states in self.inside
            ],
        )


class CalleeMemo:
    """Walks by frame and by the part of the start they read."""

    def __init__(self) -> None:
        self._walks: dict[tuple, CalleeWalk] = {}
        self._reads: dict[tuple, list[frozenset[str]]] = {}

    def get(self, frame: tuple, start: Assumptions) -> CalleeWalk | None:
        for read in self._reads.get(frame, ()):
            found = self._walks.get((frame, _restricted(start, read)))
            if found is not None:
                return found
        return None

    def cut_functions(self) -> set[str]:
        """The functions the walks held here that met a recursion cut ran, and
        those they cut (context keys): walk.py `cut_functions`."""
        found: set[str] = set()
        for walk in self._walks.values():
            if walk.cuts:
                found |= walk.functions
                found.update(context_key(*cut) for cut in walk.cuts)
        return found

    def put(self, frame: tuple, start: Assumptions, walk: CalleeWalk) -> CalleeWalk:
        reads = self._reads.setdefault(frame, [])
        if walk.read not in reads:
            reads.append(walk.read)
        self._walks[(frame, _restricted(start, walk.read))] = walk
        return walk


def _restricted(start: Assumptions, read: frozenset[str]) -> Assumptions:
    return tuple((k, v) for k, v in start if k in read)
