"""The modes a joined path may be in, when no single conjunction says it.

A join keeps the assumptions its paths share, so `hybrid and not align`,
`not hybrid` and `not spec` joined claim every mode, `hybrid and align`
included; a next step paired by mode would then meet a step the loop cannot
run. A state that lost assumptions in a join keeps its paths' conjunctions
here (a few; past the cap it keeps none and claims what it shares), and only
the pairing of steps reads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from syncscan.flow.keys import is_step_fact

Mode = tuple[tuple[str, bool], ...]
Alternatives = tuple[Mode, ...]  # () means: exactly the state's own assumptions

MAX_ALTERNATIVES = 16


def refine(alternatives: Alternatives, key: str, value: bool) -> Alternatives:
    """The alternatives where `key` may be `value`, now assuming it."""
    if not alternatives:
        return ()
    kept = tuple(
        tuple(sorted({*mode, (key, value)})) for mode in alternatives if admitted(mode, key, value)
    )
    return _distinct(kept)


def redecide(alternatives: Alternatives, key: str, value: bool | None) -> Alternatives:
    """Each alternative with `key` set to `value` (None: no longer known)."""
    if not alternatives:
        return ()
    changed = []
    for mode in alternatives:
        rest = [(k, v) for k, v in mode if k != key]
        changed.append(tuple(sorted(rest if value is None else [*rest, (key, value)])))
    return _distinct(tuple(changed))


def admits(alternatives: Alternatives, key: str, value: bool) -> bool:
    return not alternatives or any(admitted(mode, key, value) for mode in alternatives)


def admitted(mode: Mode, key: str, value: bool) -> bool:
    return all(v == value for k, v in mode if k == key)


def joined(states: Iterable[tuple[Mode, Alternatives]], shared: Mode) -> Alternatives:
    """The alternatives of a join under `shared`: every path's own, or none when
    `shared` loses nothing (or there are too many to keep)."""
    modes: list[Mode] = []
    for assumptions, alternatives in states:
        modes.extend(alternatives or (assumptions,))
    if all(mode == shared for mode in modes):
        return ()  # a join under the same assumptions loses nothing
    distinct = _distinct(tuple(modes))
    if len(distinct) > MAX_ALTERNATIVES or distinct == _distinct((shared,)):
        return ()
    return distinct


def union(modes: Iterable[Alternatives]) -> Alternatives:
    """The modes of several paths together, in their fewest exact conjunctions;
    past the cap, the one conjunction they all share."""
    return _union_of(tuple(m for alternatives in modes for m in alternatives))


@cache
def _union_of(modes: Alternatives) -> Alternatives:
    distinct = _distinct(modes)
    if len(distinct) <= MAX_ALTERNATIVES:
        return distinct
    shared = set(distinct[0])
    for mode in distinct[1:]:
        shared &= set(mode)
    return (tuple(sorted(shared)),)


def within(alternatives: Alternatives, mode: Mode) -> Alternatives:
    """The alternatives compatible with `mode` (a merged state's assumptions)."""
    return _distinct(tuple(a for a in alternatives if compatible(a, mode)))


def combined(
    before: Mode,
    before_alts: Alternatives,
    after: Mode,
    after_alts: Alternatives,
    overrides: frozenset[str] = frozenset(),
) -> Alternatives:
    """A caller's alternatives after a callee's (each in full terms): the
    compatible pairs, joined; none past the cap. `overrides` are what the
    callee set (its value stands, whatever the caller's was)."""
    if not before_alts and not after_alts:
        return ()
    pairs = [
        _union(a, b)
        for a in before_alts or (before,)
        for b in after_alts or (after,)
        if compatible(a, b, overrides)
    ]
    distinct = _distinct(tuple(pairs))
    return distinct if 0 < len(distinct) <= MAX_ALTERNATIVES else ()


def compatible(a: Mode, b: Mode, ignored: frozenset[str] = frozenset()) -> bool:
    other = dict(b)
    return all(other.get(k, v) == v for k, v in a if k not in ignored)


def _union(a: Mode, b: Mode) -> Mode:
    merged = dict(a)
    merged.update(b)
    return tuple(sorted(merged.items()))


@cache
def _distinct(modes: Alternatives) -> Alternatives:
    """The modes, less per-step facts (what a step set: steps are paired by
    instance modes only), in their fewest exact conjunctions (pure, and met
    with the same few inputs at every join: cached for the run)."""
    kept = [tuple((k, v) for k, v in mode if not is_step_fact(k)) for mode in modes]
    return tuple(sorted(exact_modes(kept)))


def exact_modes(modes: list[tuple[tuple[str, bool], ...]]) -> list[tuple[tuple[str, bool], ...]]:
    """`_exact_modes`, of a list."""
    return list(_exact_modes(tuple(modes)))


@cache
def _exact_modes(modes: tuple[Mode, ...]) -> tuple[Mode, ...]:
    """The fewest conjunctions whose union is exactly the union of `modes`, as far
    as two rules find it: a mode absorbs any mode that assumes more (`x` absorbs
    `x and y`), and two modes that differ only in one predicate's value join
    without it (`x and y`, `x and not y`: `x`). Keeping only the shared
    assumptions instead would claim combinations no path had: `not spec` and
    `spec and not hybrid` would become a path of any mode, `spec and hybrid`
    included, and a next step the loop cannot run would pair with this one."""
    sets = list(dict.fromkeys(frozenset(m) for m in modes))
    changed = True
    while changed and len(sets) > 1:
        changed = False
        kept = [m for m in sets if not any(o < m for o in sets)]
        if len(kept) < len(sets):
            sets, changed = kept, True
            continue
        for i, a in enumerate(sets):
            for b in sets[i + 1 :]:
                differ = a ^ b
                if len(differ) == 2 and len({k for k, _ in differ}) == 1:
                    sets = [m for m in sets if m is not a and m is not b] + [a - differ]
                    changed = True
                    break
            if changed:
                break
    return tuple(tuple(sorted(m)) for m in sets)
