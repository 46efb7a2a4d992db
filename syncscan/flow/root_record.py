"""A step root's walk, kept statement by statement for the next run; and an
edited root resumed from it (root_resume.py).

An edit to a step root's body (a statement added to `execute_model`) changes
the root's function, so every store counts its walk as changed, while most of
its statements are what they were. The walk of a root's body is a fold over its
top-level statements: the paths before a statement, walked through it, are the
paths before the next one. A run that walks a root records, for each top-level
statement, the paths before it and what walking it did besides (its returns,
the host syncs and region sites it met in order, the summary items it read, the
callee walks it relied on, its work, the functions it ran), and what the
phases after the body did; it keeps them in a few runs of statements
(`BOUNDARIES`), with the root's final paths and its shape. The next run aligns
the new body with the kept one (`align`: the statements before and after the
edit agree but for their lines, positions.py `layout`), walks the statements up
to the first kept run after the edit and, where the paths and returns there are
the kept walk's, takes the rest (`met_again`), its lines where they went.

What a statement's walk reads besides the paths before it is the summary
items it read (checked as any kept result's are: stored_results.py), the walks
memoised before it, and the root's own function, which some analyses read as a
whole (local names' values, fresh tensors, the `if` chains whose fall-through
raises, marker comments beside a line). `align` refuses an edit that may change
that whole-function reading for the statements taken: a name the edited
statements bind is named elsewhere in the function, the fresh tensors differ,
a marker no longer stands beside its line. root_resume.py refuses a resume
whose memoised walks may differ in the other order (a function whose walks met
a recursion cut or the depth limit running in the edited statements); no walk
runs the root itself as a callee (a call back into it is a recursion cut).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from syncscan.flow.frames import Frame
from syncscan.flow.host_syncs import HostSync, Journal, Region, RegionSite
from syncscan.flow.state import PathState
from syncscan.flow.stored import noted_apart
from syncscan.flow.walk import Exit, ReturnInfo, Walker
from syncscan.index import ir
from syncscan.index.moves import LineMap, add_pairs, in_order, markers_agree
from syncscan.index.positions import layout
from syncscan.index.summary import FunctionSummary

Final = tuple[PathState, tuple[ReturnInfo, ...]]

# Where a root's kept walk can resume: the paths are kept before this many runs
# of its statements (each costs its encoding, every run that walks the root).
BOUNDARIES = 8


@dataclass(frozen=True)
class Segment:
    """What walking one top-level statement (or the phases after the body) did
    besides the paths it left: its returns, the syncs and region sites it met
    (host_syncs.py `Journal`), the summary items it read (by index into the
    row's items, then the record's `own`), the callee walks it relied on and the
    work it counted."""

    exits: tuple[Exit, ...]
    syncs: tuple[HostSync, ...]
    regions: tuple[tuple[Region, RegionSite | None], ...]
    items: tuple[int, ...]
    walks: tuple[str, ...]
    work: int
    called: tuple[int, ...]  # the functions its callee walks ran (into the record's)


@dataclass(frozen=True)
class Shape:
    """A root's function as its kept walk saw it: what aligning a new body with
    it needs (kept as plain data and never carried: its lines are those the
    kept walk saw)."""

    header: str  # digest of the header's layout (all but the body)
    header_lines: tuple[int, ...]
    statements: tuple[str, ...]  # digest of each top-level statement's layout
    statement_lines: tuple[tuple[int, ...], ...]
    bound: tuple[tuple[str, ...], ...]  # the names each statement binds
    markers: tuple[tuple[int, str], ...]  # marker comments on the function's lines
    fresh: tuple[tuple[str, str], ...]  # fresh tensors (fresh.py), by local name


@dataclass(frozen=True)
class KeptRoot:
    """A root's walk in runs of top-level statements: where each run begins
    (`at`, the first at 0), the paths before it, what walking it did; what the
    phases after the body did, and the root's final paths. The runs are a few
    (`BOUNDARIES`), of about equal work: a resumed walk walks again the
    statements from the end of the edit to the next run's start."""

    at: tuple[int, ...]
    states_at: tuple[tuple[PathState, ...], ...]
    segments: tuple[Segment, ...]
    tail: Segment
    own: tuple[str, ...]  # the root function's own items read (the row holds the rest)
    functions: tuple[str, ...]  # the functions the segments ran (context keys)
    cut: tuple[str, ...]  # of those, the ones whose walks hold only in their order
    finals: tuple[Final, ...]
    # Names the finals: a fresh walk's are named anew, a resumed walk's keep the
    # name of those it took (a class analysis judged them: stored_units.py).
    finals_id: str
    # How many resumes appended to the kept text's table since it was written
    # whole (stored_roots.py `keep_root`): what the table holds that the walk
    # no longer names grows with each.
    spliced: int

    def ran_in(self, start: int, stop: int) -> set[str]:
        """The functions the runs holding any of statements `start` to `stop`
        (exclusive) ran (the last run holds every statement after its start)."""
        if start >= stop:
            return set()
        ends: list[int | None] = [*self.at[1:], None]
        return {
            self.functions[i]
            for first, end, segment in zip(self.at, ends, self.segments, strict=True)
            if first < stop and (end is None or end > start)
            for i in segment.called
        }


def shape_of(
    function: FunctionSummary, markers: tuple[tuple[int, str], ...], fresh: dict[str, str]
) -> Shape:
    """`function`'s shape; `markers`: its module's marker comments; `fresh`: its
    fresh tensors."""
    header, header_lines = _header(function)
    texts, lines, bound = [], [], []
    for stmt in function.body:
        text, found = layout(stmt)
        texts.append(_digest(text))
        lines.append(tuple(found))
        bound.append(tuple(sorted(bound_names((stmt,)))))
    first, last = function.header_line - 1, function.end_line + 1
    return Shape(
        header,
        tuple(header_lines),
        tuple(texts),
        tuple(lines),
        tuple(bound),
        tuple((line, text) for line, text in markers if first <= line <= last),
        tuple(sorted(fresh.items())),
    )


def _header(function: FunctionSummary) -> tuple[str, list[int]]:
    fn = function
    text, lines = layout(
        (fn.name, fn.qualname, fn.params, fn.decorators, fn.returns, fn.is_generator, fn.nested)
    )
    return _digest(f"{text}|{fn.col}"), [fn.line, fn.end_line, fn.header_line, *lines]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


# ---------------------------------------------------------------------- names
def bound_names(stmts: Iterable[ir.Stmt]) -> set[str]:
    """Every name the statements (and the blocks in them) bind, or name inside
    a target (`x.y = ...` counts `x`: conservative)."""
    found: set[str] = set()
    for stmt in ir.iter_statements(tuple(stmts)):
        targets: list[ir.Expr | None] = []
        if isinstance(stmt, ir.Assign):
            targets.extend(stmt.targets)
        elif isinstance(stmt, ir.Loop):
            targets.append(stmt.target)
        elif isinstance(stmt, ir.With):
            targets.extend(item.target for item in stmt.items)
        for target in targets:
            found |= _names(target)
        for expr in _exprs(stmt):
            found.update(n.target for n in ir.walk(expr) if isinstance(n, ir.NamedExpr))
    return found


def mentioned_names(stmts: Iterable[ir.Stmt]) -> set[str]:
    """Every name the statements (and the blocks in them) name."""
    found: set[str] = set()
    for stmt in ir.iter_statements(tuple(stmts)):
        for expr in _exprs(stmt):
            found |= _names(expr)
    return found


def _exprs(stmt: ir.Stmt) -> list[ir.Expr]:
    annotation = stmt.annotation if isinstance(stmt, ir.Assign) else None
    return [*ir.statement_exprs(stmt), *([annotation] if annotation is not None else [])]


def _names(expr: ir.Expr | None) -> set[str]:
    found: set[str] = set()
    for node in ir.walk(expr):
        if isinstance(node, ir.Name):
            found.add(node.id)
        elif isinstance(node, ir.NamedExpr):
            found.add(node.target)
    return found


def _function_names(function: FunctionSummary) -> set[str]:
    """The names `function`'s nested functions name (a closure may capture one)."""
    found = mentioned_names(function.body) | {p.name for p in function.params}
    for nested in function.nested:
        found |= _function_names(nested)
    return found


# ---------------------------------------------------------------------- alignment
@dataclass(frozen=True)
class Alignment:
    """Where a kept walk resumes in a new body: after the new body's statement
    `resume_at - 1` (the kept body's `kept_at - 1`), the two bodies agree to
    their ends; before the edit (statement `edited`), from their starts.
    `lines`: each kept line of the agreeing statements and the header, where
    it is now."""

    edited: int
    resume_at: int
    kept_at: int
    lines: LineMap


def align(shape: Shape, now: Shape, function: FunctionSummary) -> Alignment | None:
    """How `function`, of shape `now`, resumes the walk kept with `shape`; None
    where the edit may change what the walk reads of the function as a whole
    (the module docstring)."""
    if now.header != shape.header or now.fresh != shape.fresh:
        return None
    lines: LineMap = {}
    if not add_pairs(lines, zip(shape.header_lines, now.header_lines, strict=True)):
        return None
    old, new = shape.statements, now.statements
    # The longest agreeing end first: a body that agrees whole resumes at its start.
    suffix = 0
    while suffix < min(len(old), len(new)) and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if suffix == 0:
        return None  # the last statement changed: the function's end is another
    prefix = 0
    while prefix < min(len(old), len(new)) - suffix and old[prefix] == new[prefix]:
        prefix += 1
    edited_old = range(prefix, len(old) - suffix)
    edited_new = range(prefix, len(new) - suffix)
    bound = {name for k in edited_old for name in shape.bound[k]}
    bound |= bound_names(function.body[k] for k in edited_new)
    outside = [*function.body[:prefix], *function.body[len(new) - suffix :]]
    named = mentioned_names(outside) | {p.name for p in function.params}
    for nested in function.nested:
        named |= _function_names(nested)
    if bound & named:
        return None
    agreeing = [*range(prefix), *range(len(old) - suffix, len(old))]
    offset = len(new) - len(old)
    for k in agreeing:
        now_k = k if k < prefix else k + offset
        pairs = zip(shape.statement_lines[k], now.statement_lines[now_k], strict=True)
        if not add_pairs(lines, pairs):
            return None
    if not in_order(lines) or not markers_agree(shape.markers, now.markers, lines):
        return None
    return Alignment(prefix, len(new) - suffix, len(old) - suffix, lines)


# ---------------------------------------------------------------------- recording
@dataclass
class Recorder:
    """Records a root's walk statement by statement (`walk`, `after_body`). A
    segment's items and functions stay names (`read`, `ran_by`, beside
    `segments`) until the walk is kept: most walks of a large root are not."""

    walker: Walker
    at: list[int] = field(default_factory=list)
    states_at: list[tuple[PathState, ...]] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    read: list[Collection[str]] = field(default_factory=list)
    ran_by: list[Collection[str]] = field(default_factory=list)
    tail: Segment | None = None
    _cut: set[str] = field(default_factory=set)  # a kept walk's, resumed

    def walk(
        self, frame: Frame, states: list[PathState], start: int, stop: int
    ) -> tuple[list[PathState], list[Exit]]:
        """Walk the body's statements `start` to `stop` (exclusive) from
        `states`, noting the paths before each."""
        body = frame.function.body
        exits: list[Exit] = []
        for k in range(start, stop):
            self.at.append(k)
            self.states_at.append(tuple(states))
            with self._segment() as made:
                if states:  # as `Walker.block`: no path walks on
                    states, more = self.walker.counted(body[k], frame, states, 0)
                    made.extend(more)
                    exits.extend(more)
        return states, exits

    @contextmanager
    def after_body(self) -> Iterator[None]:
        """What the phases after the body do (the tail: the last segment noted)."""
        with self._segment() as made:
            yield
        assert not made
        self.tail = self.segments.pop()

    @contextmanager
    def _segment(self) -> Iterator[list[Exit]]:
        walker = self.walker
        syncs = walker.host_syncs
        syncs.journal()
        work = walker.work
        walker.called = called = set()
        exits: list[Exit] = []
        try:
            with noted_apart(walker.stored) as noted:
                yield exits
        finally:
            walker.called = None
            journal = syncs.journaled()
        self.segments.append(
            Segment(
                tuple(exits),
                tuple(journal.syncs),
                tuple(journal.regions),
                (),
                tuple(sorted(noted.walks)),
                walker.work - work,
                (),
            )
        )
        self.read.append(noted.items)
        self.ran_by.append(called)

    def ran(self) -> set[str]:
        """The functions the walk's callee walks ran, in any segment."""
        return set().union(*self.ran_by)

    def cut(self) -> set[str]:
        """The functions whose walks hold only in their order (walk.py
        `cut_functions`), where the walk made or met them."""
        return self.walker.cut_functions() | self._cut

    def ran_in(self, start: int, stop: int) -> set[str]:
        """The functions the callee walks of statements `start` to `stop` ran."""
        return set().union(*self.ran_by[start:stop])

    def resumed(self, kept: KeptRoot, names: list[str], run: int, shift: int) -> None:
        """The kept walk's runs from its `run`-th on, their statements `shift`
        further on in this body (`names`: its items, as its segments number them),
        and what the phases after its body did."""
        for position, states, segment in zip(
            kept.at[run:], kept.states_at[run:], kept.segments[run:], strict=True
        ):
            self.at.append(position + shift)
            self.states_at.append(states)
            self.segments.append(segment)
            self.read.append([names[i] for i in segment.items])
            self.ran_by.append([kept.functions[i] for i in segment.called])
        self.tail = kept.tail
        self.read.append([names[i] for i in kept.tail.items])
        self.ran_by.append([kept.functions[i] for i in kept.tail.called])
        self._cut |= set(kept.cut)

    def kept(
        self, finals: list[Final], own: set[str], finals_id: str, spliced: int = 0
    ) -> tuple[KeptRoot, list[str]]:
        """The walk as kept, its statements in runs of about equal work, and the
        items it read but the root function's `own` (which the record holds), in
        the order its segments number them; `finals_id`, `spliced`: as
        `KeptRoot` says."""
        assert self.tail is not None and len(self.read) == len(self.segments) + 1
        read = set().union(*self.read)
        names = sorted(read - own)
        order = {name: k for k, name in enumerate([*names, *sorted(read & own)])}
        functions = sorted(self.ran())
        index = {name: k for k, name in enumerate(functions)}
        segments = [
            _numbered(
                segment,
                tuple(sorted(order[name] for name in items)),
                tuple(sorted(index[name] for name in ran)),
            )
            for segment, items, ran in zip(
                [*self.segments, self.tail], self.read, self.ran_by, strict=True
            )
        ]
        body, tail = segments[:-1], segments[-1]
        starts = _run_starts([s.work for s in body], BOUNDARIES)
        runs = [*starts, len(body)]
        kept = KeptRoot(
            tuple(self.at[k] for k in starts),
            tuple(self.states_at[k] for k in starts),
            tuple(_joined(body[k:end]) for k, end in zip(runs, runs[1:], strict=False)),
            tail,
            tuple(sorted(read & own)),
            tuple(functions),
            tuple(sorted(self.cut())),
            tuple(finals),
            finals_id,
            spliced,
        )
        return kept, names


def _run_starts(work: list[int], runs: int) -> list[int]:
    """The first statement of each of at most `runs` runs of about equal work
    (the first run starts at the first statement). A statement of a run's work
    or more begins a run of its own: an edit above it resumes before it, not
    after it (SGLang's `run_batch` is a few lines, then one `if` holding
    nearly all of the step)."""
    if not work:
        return []
    total = sum(work)
    starts, done = [0], 0
    for k, cost in enumerate(work[:-1]):
        done += cost
        heavy = work[k + 1] * runs >= total
        if (done * runs >= total * len(starts) or heavy) and len(starts) < runs:
            starts.append(k + 1)
    return starts


def _numbered(segment: Segment, items: tuple[int, ...], called: tuple[int, ...]) -> Segment:
    """`segment` with its items and functions numbered so; itself where they
    are (a resumed run's, kept as it was read: its text names it, not a copy)."""
    if segment.items == items and segment.called == called:
        return segment
    return replace(segment, items=items, called=called)


def _joined(segments: list[Segment]) -> Segment:
    """Consecutive segments as one: in order, their items, walks and functions
    together (a run of one is that segment)."""
    if len(segments) == 1:
        return segments[0]
    return Segment(
        tuple(e for s in segments for e in s.exits),
        tuple(x for s in segments for x in s.syncs),
        tuple(r for s in segments for r in s.regions),
        tuple(sorted({i for s in segments for i in s.items})),
        tuple(sorted({w for s in segments for w in s.walks})),
        sum(s.work for s in segments),
        tuple(sorted({f for s in segments for f in s.called})),
    )


def met_again(walker: Walker, segments: Iterable[Segment], names: list[str]) -> set[str]:
    """What walking kept segments did besides their paths, done again here: the
    syncs and regions met, the walks relied on, the work counted; the items they
    read are handed back (the caller adopts them: `Program.adopt_read`)."""
    items: set[str] = set()
    for segment in segments:
        walker.host_syncs.rejoin(Journal(list(segment.syncs), list(segment.regions)))
        if walker.stored is not None:
            walker.stored.rely_on(segment.walks)
        walker.work += segment.work
        items.update(names[i] for i in segment.items)
    return items
