"""Callee walks in their own terms, so one walk serves every caller that reaches
the function through a differently named object.

A callee's facts name memory, streams and modes by access paths in the root's
terms (`self.worker.runner.attn.dense.req_to_token`). Walked under those names,
a function reached through many wrapper objects is walked once per path. Here
the paths a callee can see — its `self` and its parameters — are rewritten
onto symbolic bases (`self.worker.$0.dense`): the base is the object holding
them, the tail is kept. The walk is memoised under the symbolic names and its
outcome renamed back for each caller.

The rewrite keeps every property of a path the analysis reads: the `self.`
prefix and the root attribute after it, whether a `[]` occurs, and every tail
(a holder is found by cutting one attribute off a tail that always has one).
Bases are chosen so that no two can name the same memory: paths that share a
holder, or whose holders nest, share a base, and a path with no holder (the
root object itself, a root parameter) keeps its name. When such a path would
overlap a base, nothing is rewritten: the walk uses the real names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from syncscan.flow import alternatives as alt
from syncscan.flow.alternatives import Alternatives
from syncscan.flow.buffers import holder_of_path
from syncscan.flow.frames import ParamBinding
from syncscan.flow.identity import Anchors, within
from syncscan.flow.state import PathState
from syncscan.flow.streams import Key, Live, StreamFacts, Trace

MARK = "$"  # never part of a Python name: a string with it names a symbolic base
ROOT = "self"  # the root object: constant across callers, never rewritten


@dataclass(frozen=True)
class Symbols:
    """How one call's real paths map onto the symbolic names a callee is walked in."""

    self_path: str | None
    params: tuple[tuple[str, ParamBinding], ...]
    bases: tuple[tuple[str, str], ...]  # (symbol, real base), in numbering order
    anchors: Anchors = ()  # the symbolic bases and the objects above them, with classes

    def assumptions(self, state: PathState) -> PathState:
        """`state` with its assumptions' keys in the symbolic terms."""
        kept = tuple(sorted((_rebased(k, self.bases), v) for k, v in state.assumptions))
        return state if kept == state.assumptions else state.but(assumptions=kept)

    def renamer(self, memory: Callable[[str], str] = str) -> Renamer:
        return Renamer(self.bases, memory)


def symbolize(
    self_path: str | None,
    params: tuple[tuple[str, ParamBinding], ...],
    chain: Callable[[str], Anchors | None] = lambda _: None,
) -> Symbols | None:
    """The symbolic names for a callee's `self` and parameters; None when a
    rewrite could confuse two memories (then the walk keeps the real names).
    `chain` gives a real path's objects and their classes (identity.py)."""
    paths = [p for p in (self_path, *(b.path for _, b in params)) if p is not None]
    holders: list[str] = []
    anchors: list[str] = []
    for path in paths:
        holder = holder_of_path(path)
        if holder is None or not holder.startswith(ROOT + "."):
            anchors.append(path)
        elif holder not in holders:
            holders.append(holder)
    if not holders:
        return None
    # Nested holders share the outer one's base.
    bases = [h for h in holders if not any(o != h and within(h, o) for o in holders)]
    for anchor in anchors:
        if any(within(anchor, b) or within(b, anchor) for b in bases):
            return None
    named = tuple((_symbol(base, n), base) for n, base in enumerate(bases))
    classes: set[tuple[str, frozenset[str]]] = set()
    for symbol, base in named:
        found = chain(base)
        if found and found[-1][1]:
            # The objects above the base that the symbol's text still names:
            # the root and its attribute (a symbol never names another symbol).
            classes |= {a for a in found[:-1] if MARK not in a[0] and within(symbol, a[0])}
            classes.add((symbol, found[-1][1]))
    return Symbols(
        _rebased(self_path, named) if self_path is not None else None,
        tuple((name, _rebased_binding(b, named)) for name, b in params),
        named,
        tuple(sorted(classes, key=lambda a: (len(a[0]), a[0]))),
    )


def _rebased_binding(binding: ParamBinding, bases: tuple[tuple[str, str], ...]) -> ParamBinding:
    """A binding with its access path and stream memory in the symbolic terms."""
    path, memory = binding.path, binding.memory
    if path is None and memory is None:
        return binding
    return replace(
        binding,
        path=_rebased(path, bases) if path else path,
        memory=_rebased(memory, bases) if memory else memory,
    )


def _rebased(text: str, bases: tuple[tuple[str, str], ...]) -> str:
    """A real path (or a key starting with one) in the symbolic terms."""
    for symbol, base in bases:
        if within(text, base):
            return symbol + text[len(base) :]
    return text


def _symbol(base: str, number: int) -> str:
    """`self.<root attribute>.$N`, with `[]` when the base has one past that
    attribute (so `"[]" in path` reads the same)."""
    first = base.split(".")[1]
    rest = base[len(ROOT) + 1 + len(first) :]
    return f"{ROOT}.{first}.{MARK}{number}" + ("[]" if "[]" in rest else "")


class Renamer:
    """Puts a callee's outcome, walked in symbolic names, back in its caller's.

    Only the names a state holds are renamed; witness traces carry source
    text, never an access path, so they are shared as they are."""

    def __init__(
        self, bases: tuple[tuple[str, str], ...], memory: Callable[[str], str] = str
    ) -> None:
        self._pattern, self._real = _pattern(bases)
        self._memory = memory  # a renamed memory's one name (identity.py)

    def text(self, value: str) -> str:
        if MARK not in value:
            return value
        return self._pattern.sub(lambda m: self._real[m.group(0)], value)

    def names(self, values: frozenset[str]) -> frozenset[str]:
        return frozenset(self.text(v) for v in values)

    def state(self, state: PathState) -> PathState:
        t, names = self.text, self.names
        assumptions = tuple(sorted((t(k), v) for k, v in state.assumptions))
        return state.but(
            assumptions=assumptions,
            alternatives=tuple(
                sorted(tuple(sorted((t(k), v) for k, v in m)) for m in state.alternatives)
            ),
            written=names(state.written),
            pending=tuple(sorted((t(b), k, trace) for b, k, trace in state.pending)),
            events=tuple(sorted((t(e), names(c)) for e, c in state.events)),
            exposed=tuple((t(b), trace, names(keys)) for b, trace, keys in state.exposed),
            waited=names(state.waited),
            races=tuple((t(b), w, a) for b, w, a in state.races),
            reloaded=names(state.reloaded),
            recorded=names(state.recorded),
            streams=self.streams(state.streams) if state.streams is not None else None,
        )

    def streams(self, facts: StreamFacts) -> StreamFacts:
        t, names = self.text, self.names

        def key(k: tuple[str, str, str]) -> tuple[str, str, str]:
            memory = t(k[0])
            return (self._memory(memory) if memory != k[0] else memory, k[1], t(k[2]))

        def tagged(tags: tuple[tuple[Key, Alternatives], ...]) -> tuple:
            return _one_mode_per_key(
                (key(k), tuple(tuple(sorted((t(p), v) for p, v in m)) for m in modes))
                for k, modes in tags
            )

        return StreamFacts(
            t(facts.current),
            _one_per_key((key(k), trace, names(o)) for k, trace, o in facts.live),
            tuple(
                sorted(
                    (t(e), frozenset(key(k) for k in c), names(a), t(s))
                    for e, c, a, s in facts.events
                )
            ),
            tuple(sorted((t(s), names(a)) for s, a in facts.knows)),
            _first_per_key((key(k), trace, names(a)) for k, trace, a in facts.exposed),
            frozenset((t(w), t(x), kind) for w, x, kind in facts.waits),
            tuple(
                replace(
                    h,
                    memory=self._memory(t(h.memory)),
                    first_stream=t(h.first_stream),
                    second_stream=t(h.second_stream),
                )
                for h in facts.hazards
            ),
            tagged(facts.left_in),
            tagged(facts.first_in),
            tuple(sorted({(key((m, "", s))[0], t(s)) for m, s in facts.allocated})),
            tuple(sorted({(key((m, "", s))[0], t(s)) for m, s in facts.recorded})),
        )


def _one_per_key(entries: Iterable[Live]) -> tuple[Live, ...]:
    """Live accesses whose memories got one name: one entry, ordered only
    where both were (the first trace stands for them)."""
    kept: dict[Key, tuple[Trace, frozenset[str]]] = {}
    for key, trace, orders in entries:
        kept[key] = (kept[key][0], kept[key][1] & orders) if key in kept else (trace, orders)
    return tuple(sorted((k, t, o) for k, (t, o) in kept.items()))


def _one_mode_per_key(
    entries: Iterable[tuple[Key, Alternatives]],
) -> tuple[tuple[Key, Alternatives], ...]:
    """The modes that left live accesses whose memories got one name: both's."""
    kept: dict[Key, Alternatives] = {}
    for key, modes in entries:
        kept[key] = alt.union([kept[key], modes]) if key in kept else modes
    return tuple(sorted((k, m) for k, m in kept.items() if m))


def _first_per_key(entries: Iterable[Live]) -> tuple[Live, ...]:
    """First accesses whose memories got one name: the first one stands."""
    kept: dict[Key, tuple[Trace, frozenset[str]]] = {}
    for key, trace, agents in entries:
        kept.setdefault(key, (trace, agents))
    return tuple((k, t, a) for k, (t, a) in kept.items())


@lru_cache(maxsize=4096)
def _pattern(bases: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One pass over a string replaces every symbol at once (longest first, so
    `$1` never matches inside `$10`)."""
    real = dict(bases)
    ordered = sorted(real, key=len, reverse=True)
    return re.compile("|".join(re.escape(s) for s in ordered)), real
