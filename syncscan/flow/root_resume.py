"""A step root walked statement by statement, from its kept walk where an edit
left the rest of its body as it was (root_record.py says why that holds).

`walk_root` walks a root's body and the phases after it (`after_body`),
keeping the walk for the next run (stored_roots.py); where a walk is kept and
the new body aligns with it, it walks only up to the end of the edit and, if
the paths there are the kept walk's, takes the rest. `hold_root` keeps the
walk of a root whose class analysis was taken whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import NamedTuple

from syncscan.flow.codec import Written
from syncscan.flow.frames import Frame
from syncscan.flow.root_record import (
    Alignment,
    Final,
    KeptRoot,
    Recorder,
    Shape,
    align,
    met_again,
    shape_of,
)
from syncscan.flow.state import PathState
from syncscan.flow.stored_roots import StoredRoots
from syncscan.flow.walk import Exit, Walker
from syncscan.index import reads
from syncscan.index.summary import FunctionSummary, ModuleSummary, markers_unnoted
from syncscan.resolve.program import Program

AfterBody = Callable[[list[PathState], list[Exit]], list[Final]]

# How many resumes in a row write a root's walk after the text they resumed
# from (its table appended to, the rows it no longer names left in), before it
# is written whole again. A vLLM 0.33.0 statement edit at the top of
# `execute_model`: writing the walk 0.10 -> 0.01 s; the text (3.7 MB) grows by
# 0.375 MB a time, which each decode pays (about 0.01 s more).
SPLICES = 4


class Resume(NamedTuple):
    """A kept walk (and the items it read, as its segments number them), how
    the new body aligns with it, and the kept run the walk resumes at."""

    kept: KeptRoot
    names: list[str]
    alignment: Alignment
    run: int
    written: Written  # the kept walk's text as decoded

    @property
    def at(self) -> int:
        """The statement of the new body the kept run begins at."""
        return self.alignment.resume_at + self.kept.at[self.run] - self.alignment.kept_at


def root_key(self_class: str, function: FunctionSummary, continuation: tuple[str, ...]) -> str:
    """A root by what it is (what else its walk depends on is in the record's key
    and the walker's configuration)."""
    return json.dumps([self_class, function.qualname, list(continuation)])


def walk_root(
    walker: Walker,
    store: StoredRoots,
    program: Program,
    key: str,
    frame: Frame,
    entry: list[PathState],
    after_body: AfterBody,
) -> list[Final]:
    """The root's final paths: its body walked from `entry` (or resumed from its
    kept walk), then `after_body` (its end and continuation phases)."""
    function = frame.function
    statements = len(function.body)
    now = shape_of(function, markers_unnoted(frame.scope.module), _fresh(walker, frame))
    recorder = Recorder(walker)
    resume = _resume_point(store, key, frame, now)
    stop = resume.at if resume is not None else statements
    states, exits = recorder.walk(frame, entry, 0, stop)
    if resume is not None:
        kept, run = resume.kept, resume.run
        before = [e for segment in kept.segments[:run] for e in segment.exits]
        same = tuple(states) == kept.states_at[run] and exits == before
        if same and _order_free(walker, recorder, resume):
            shift = resume.at - kept.at[run]
            finals = _resumed(walker, program, recorder, kept, resume.names, run, shift)
            store.realigned[key] = (frame.relpath, resume.alignment.lines)
            _keep(store, key, frame, recorder, finals, now, resume)
            return finals
        states, more = recorder.walk(frame, states, stop, statements)
        exits += more
    with recorder.after_body():
        fall, exits = walker.finish(frame, states, exits)
        finals = after_body(fall, exits)
    _keep(store, key, frame, recorder, finals, now)
    return finals


def _resume_point(store: StoredRoots, key: str, frame: Frame, now: Shape) -> Resume | None:
    """Where the root resumes its kept walk; None where it does not (nothing
    kept, the bodies do not align, no run begins after the edit)."""
    shape = store.shape(key)
    alignment = align(shape, now, frame.function) if shape is not None else None
    if alignment is None:
        return None
    taken = store.take_root(key, frame.relpath, alignment)
    if taken is None:
        return None
    kept, names, written = taken
    # The first run that begins after the edit: the statements before it are
    # walked again (they agree: the walk there is the kept one).
    for run, start in enumerate(kept.at):
        if start >= alignment.kept_at:
            return Resume(kept, names, alignment, run, written)
    return None


def _order_free(walker: Walker, recorder: Recorder, resume: Resume) -> bool:
    """Whether the kept walk's rest is what walking it after this run's
    statements gives. The walks are what they are in any order, but those that
    met a recursion cut or the depth limit (walk.py `cut_functions`): a later
    call reuses such a walk from where it was made first. The edited
    statements, kept and new, run none of those functions: the statements
    around them make the same such walks in the same order."""
    kept, edit = resume.kept, resume.alignment
    cut = walker.cut_functions() | set(kept.cut)
    edited = kept.ran_in(edit.edited, edit.kept_at) | recorder.ran_in(edit.edited, edit.resume_at)
    return cut.isdisjoint(edited)


def _resumed(
    walker: Walker,
    program: Program,
    recorder: Recorder,
    kept: KeptRoot,
    names: list[str],
    run: int,
    shift: int,
) -> list[Final]:
    """The kept walk's rest, from its run `run`: what walking it did is done
    again in order, its paths are taken."""
    program.adopt_read(met_again(walker, [*kept.segments[run:], kept.tail], names))
    if walker.stored is not None:
        walker.stored.taken += 1  # its work counts as it was (step.py NEAR_BUDGET)
    recorder.resumed(kept, names, run, shift)
    return list(kept.finals)


def _keep(
    store: StoredRoots,
    key: str,
    frame: Frame,
    recorder: Recorder,
    finals: list[Final],
    shape: Shape,
    resumed: Resume | None = None,
) -> None:
    """Keep the root's walk for the next run. No walk in it ran the root's own
    function as a callee (which would have read the whole body): the root is
    active while it is walked (walk.py `rooted`). A walk `resumed` from a kept
    one is written after its text (`SPLICES` times, then whole again)."""
    function = frame.function
    spliced = resumed.kept.spliced + 1 if resumed is not None else 0
    finals_id = resumed.kept.finals_id if resumed is not None else os.urandom(8).hex()
    kept, names = recorder.kept(finals, _own_items(function), finals_id, spliced % (SPLICES + 1))
    walks = sorted({w for s in (*kept.segments, kept.tail) for w in s.walks})
    store.keep_root(key, shape, kept, names, walks, resumed.written if resumed else None)
    store.walked[key] = finals_id


def hold_root(
    store: StoredRoots, key: str, function: FunctionSummary, relpath: str, module: ModuleSummary
) -> None:
    """Keep the kept walk of a root whose class analysis was taken whole: its
    function agrees with the walk's, but for lines that may have moved."""
    if not store.moved(key, _own_items(function)):
        store.hold_as_is(key)
        return
    shape = store.shape(key)
    if shape is None:
        return
    now = shape_of(function, markers_unnoted(module), dict(shape.fresh))
    alignment = align(shape, now, function)
    if alignment is not None and alignment.resume_at == alignment.kept_at == 0:
        store.hold(key, relpath, alignment, now)


def _fresh(walker: Walker, frame: Frame) -> dict[str, str]:
    """The fresh tensors of the root's function (fresh.py), as its end frees them."""
    streams = walker.streams
    return streams.fresh.of(frame) if streams.enabled else {}


def _own_items(function: FunctionSummary) -> set[str]:
    """The root function's own item (reads.py "function"), in both its forms,
    which an edit to its body changes: what aligning the bodies checks in its
    place."""
    items = getattr(function, "_read_items", None)
    if items is None:
        return set()
    own = items()[0]
    return {own, reads.movable(own)}
