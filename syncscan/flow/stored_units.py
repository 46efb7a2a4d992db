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
(stored_results.py holds them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from syncscan.flow.codec import CLASSES
from syncscan.flow.state import PathState
from syncscan.flow.step import Outcome, StepPath, StepRoot
from syncscan.flow.stored_results import StoredResults, Taken
from syncscan.flow.walk import ReturnInfo
from syncscan.index.store_texts import Texts
from syncscan.relocate import NO_MOVES, Moves

FORMAT = 2
_UNIT_CLASSES = {**CLASSES, "StepPath": StepPath, "ReturnInfo": ReturnInfo}


def unit_key(roots: list[StepRoot]) -> str:
    """The roots of a unit by name (what else they are is in the record's key)."""
    return json.dumps(
        [[r.self_class, r.function.qualname, r.spec.cls, r.spec.method] for r in roots]
    )


class StoredUnits(StoredResults):
    """The class analyses the recorded run kept that no change touched, and
    those this run makes, for the next run."""

    def __init__(
        self,
        document: Any,
        changed: frozenset[str] | None,
        config: str,
        texts: Texts,
        moves: Moves = NO_MOVES,
    ) -> None:
        super().__init__(document, changed, config, texts, moves, _UNIT_CLASSES, FORMAT)

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
        """A unit this run analysed, with what it read and the walks it relied on."""
        self.keep(unit_key(roots), outcomes, items, walks)


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
