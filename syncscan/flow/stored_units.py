"""Class analyses kept from one run for the next (the cache's units.json).

The unit of the step analysis is the roots of one class (step.py
`analyse_class`: their walks, then each path's verdict against the class's
next steps). Its result is a function of the roots, the walker's
configuration and the summary items it read (reads.py: memo hits included;
parallel.py relies on the same to run units in any process and order). A run
keeps each unit's result with its items; the next run, where an edit changed
some items the recorded run read (reuse.py), takes the result of a unit none
of whose items changed instead of analysing it again — an edit to one engine
class re-analyses that class, not the others. A unit taken asks for what
analysing it asked (its modules and class headers, `Program.adopt_read`) and
holds the callee walks it relied on for the next run (stored.py). A unit
whose items only moved is taken with its lines where they went, as a walk is
(stored_results.py holds them). A kept result holds each path's state as
far as the rules read it (step.py `RulesState`): the findings are the same,
and most of a class analysis's text is the states it leaves out (vLLM 0.33.0's
V1 runner: 2.9 MB, 56 ms to decode on every edit to another class).

Judging the walks (each path's verdict against the class's next steps) is a
function of the paths the roots' walks ended in, the host syncs and regions
they met, the items judging read and the configuration. A row keeps, apart,
what judging read (and the walks it relied on) and the name each root's kept
walk gives the paths it ended in (root_record.py `KeptRoot.finals_id`: a walk
resumed from a kept one ends in those very paths, and keeps their name). An
edit to a root's body that its kept walk resumes from changes the class's
items, but not those: the kept result is then taken (`take_judged`) where the
syncs and regions met are the kept ones too, instead of judging again (vLLM
0.33.0's step root: 47 paths, 0.09 s of verdicts and 0.04 s of encoding, for a
0.04 s decode).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from syncscan.flow.codec import CLASSES
from syncscan.flow.state import PathState
from syncscan.flow.step import Outcome, RulesState, StepPath, StepRoot, for_rules
from syncscan.flow.stored import Row
from syncscan.flow.stored_results import StoredResults, Taken
from syncscan.flow.stored_roots import realigned_carrier
from syncscan.flow.walk import ReturnInfo
from syncscan.index.item_table import ItemTable, KeptIds
from syncscan.index.moves import LineMap
from syncscan.index.store_texts import Texts
from syncscan.relocate import NO_MOVES, Moves

FORMAT = 4  # 4: paths' states as the rules read them (step.py `RulesState`)
_UNIT_CLASSES = {
    **CLASSES,
    "StepPath": StepPath,
    "ReturnInfo": ReturnInfo,
    "RulesState": RulesState,
}


def unit_key(roots: list[StepRoot]) -> str:
    """The roots of a unit by name (what else they are is in the record's key)."""
    return json.dumps(
        [[r.self_class, r.function.qualname, r.spec.cls, r.spec.method] for r in roots]
    )


class Judging(NamedTuple):
    """What judging a unit's walks read apart from walking them, the walks it
    relied on, and the names of the finals judged (each root's, as its kept
    walk names them: KeptRoot.finals_id)."""

    items: list[str] | KeptIds
    walks: list[str]
    finals: list[str]


class StoredUnits(StoredResults):
    """The class analyses the recorded run kept that no change touched, and
    those this run makes, for the next run; and those whose roots' walks ended
    in the paths they judged, none of what judging read changed."""

    EXTRA = 3  # Judging's fields

    def __init__(
        self,
        document: Any,
        changed: frozenset[str] | None,
        config: str,
        texts: Texts,
        moves: Moves = NO_MOVES,
    ) -> None:
        self._judged: dict[str, Row] = {}  # key -> row whose judging read nothing changed
        self._judging: dict[str, Judging] = {}  # key -> this run's, for `keep_unit`
        self._judged_taken: dict[str, tuple[list[Outcome], bytes]] = {}
        self.judged = 0  # units whose judging was taken (`take_judged`)
        super().__init__(document, changed, config, texts, moves, _UNIT_CLASSES, FORMAT)

    def _loaded(self, rows: list[Row], touched: set[int]) -> None:
        self._judged = {r[0]: r for r in rows if touched.isdisjoint(r[4])}

    def _well_formed(self, row: Any) -> bool:
        return (
            super()._well_formed(row)
            and isinstance(row[4], list)
            and all(
                isinstance(row[i], list) and all(isinstance(x, str) for x in row[i]) for i in (5, 6)
            )
        )

    def _extra_kept(self, row: Row) -> list[Any]:
        return [KeptIds(row[4]), row[5], row[6]]

    def _extra_written(self, table: ItemTable, extra: list[Any]) -> list[Any]:
        items, walks, finals = extra
        return [table.of(items), walks, finals]

    def judging(
        self, roots: list[StepRoot], items: Iterable[str], walks: Iterable[str], finals: list[str]
    ) -> None:
        """What judging the unit's walks read, the walks it relied on and the
        finals it judged, for `keep_unit` to keep."""
        self._judging[unit_key(roots)] = Judging(sorted(items), sorted(walks), finals)

    def take_judged(
        self,
        roots: list[StepRoot],
        finals: list[str],
        realigned: list[tuple[str, LineMap]],
        fits: Callable[[list[Outcome]], bool],
    ) -> Taken | None:
        """The kept result of the unit of `roots` where it judged the finals
        `finals` names (each root's walk ended in them) and nothing its judging
        read changed, its lines where they went (the roots' own where their
        alignments put them: `realigned`), and `fits` accepts it; with what its
        judging read and the walks it relied on."""
        key = unit_key(roots)
        row = self._judged.get(key)
        if row is None or row[6] != finals:
            return None
        carrier = realigned_carrier(self._moves, realigned, self._classes)
        text = carrier(self._texts.text(row[2])) if carrier is not None else None
        decoded = self._decoded(text, row[4], lambda o: _plausible(o, len(roots)) and fits(o))
        if decoded is None:
            return None
        outcomes, names = decoded
        self.judged += 1
        self._judged_taken[key] = (outcomes, text)
        self._judging[key] = Judging(KeptIds(row[4]), row[5], finals)
        return outcomes, names, row[5]

    def take_unit(self, roots: list[StepRoot]) -> Taken | None:
        """The kept result of the unit of `roots` that no change touched: each
        root's outcome, the items it read and the walks it relied on."""
        return self.take(unit_key(roots), lambda outcomes: _plausible(outcomes, len(roots)))

    def keep_unit(
        self,
        roots: list[StepRoot],
        outcomes: list[Outcome],
        items: Iterable[str],
        walks: list[str],
    ) -> None:
        """A unit this run analysed, with what it read and the walks it relied on
        (its judging's text as taken, where its outcomes are those taken)."""
        key = unit_key(roots)
        judging = self._judging.pop(key, Judging([], [], []))
        taken = self._judged_taken.pop(key, None)
        if taken is not None and _same_objects(taken[0], outcomes):
            self.keep(key, outcomes, items, walks, judging, taken[1])
        else:
            self.keep(key, [for_rules(o) for o in outcomes], items, walks, judging)

    def news(self) -> dict[str, Judging]:
        """What judging read, of the units judged since the last call (a walk
        worker sends it back; it keeps no unit: its parent does)."""
        found, self._judging = self._judging, {}
        return found

    def adopt(self, news: dict[str, Judging]) -> None:
        """What a walk worker's judging read."""
        self._judging.update(news)


def _same_objects(taken: list[Outcome], outcomes: list[Outcome]) -> bool:
    """Whether `outcomes` hold the very objects of the outcomes taken (their
    text is theirs)."""
    return len(taken) == len(outcomes) and all(
        all(a is b for a, b in zip(t, o, strict=True)) for t, o in zip(taken, outcomes, strict=True)
    )


def _plausible(outcomes: Any, roots: int) -> bool:
    """Decoded outcomes with the shape a unit's have (the codec builds only
    known classes, not their fields' types)."""
    return (
        isinstance(outcomes, list)
        and len(outcomes) == roots
        and all(
            isinstance(o, tuple)
            and len(o) == 4
            and isinstance(o[0], list)
            and all(isinstance(p, StepPath) and isinstance(p.state, PathState) for p in o[0])
            and (o[1] is None or isinstance(o[1], str))
            and isinstance(o[2], tuple)
            and isinstance(o[3], dict)
            for o in outcomes
        )
    )
