"""The path walker: runs a step root abstractly, inlining what it calls.

Each statement maps a list of path states to a list of path states; a `return`
turns a state into an exit. Calls to project code are inlined (memoised per
callee context and input facts); calls the packs give a meaning to become
effects: a pinned write, a launch, a host wait, an event record. `with` on a
`@contextmanager` runs the code before `yield`, then the body, then what
follows `yield` and its `finally` — the shape of an event-guarded region.
Work is bounded: past the budget the root is reported incomplete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

from syncscan.flow.attributes import SelfAttributes, relevant
from syncscan.flow.buffers import (
    BufferOracle,
    moves_to_device,
    non_blocking,
    non_blocking_at_run_time,
)
from syncscan.flow.frames import BufferFact, Frame, ParamBinding
from syncscan.flow.host_syncs import HostSyncs
from syncscan.flow.identity import Anchors, ObjectNames
from syncscan.flow.keys import assigned_key
from syncscan.flow.mask_index import boolean_locals, mask_indexed
from syncscan.flow.memo import Assumptions, CalleeMemo, CalleeWalk, Completion
from syncscan.flow.modes import ModeOracle
from syncscan.flow.state import (
    CONSULTED,
    DEVICE_BARRIER,
    PathState,
    Trace,
    WitnessStep,
    canonical,
    compose,
    consistent,
    dedupe,
    fresh_identity,
    merge,
)
from syncscan.flow.stored import StoredWalks, stable_text
from syncscan.flow.stream_effects import StreamEffects, current_of
from syncscan.flow.streams import CURRENT
from syncscan.flow.symbols import symbolize
from syncscan.flow.unbound import raising_fallthroughs
from syncscan.index import ir, reads
from syncscan.index.reads import Memo
from syncscan.index.summary import FunctionSummary, markers
from syncscan.packs import Vocabulary
from syncscan.resolve.callgraph import context_key
from syncscan.resolve.calls import Callee, CallResolver, CallSite, passed_arguments
from syncscan.resolve.program import Program
from syncscan.resolve.types import Scope, TypeOracle

# Levels of callee walks below a root. Each costs its Python frames (about 15,
# more inside nested blocks: SGLang 0.5.23 used 455 at 30 levels), and the
# interpreter stops at 1,000: past this depth a call is cut (the walk holds only
# at its depth: `cut_functions`) rather than the root left unwalked ("code
# nested too deeply"). tests/test_stored.py holds a chain nested five blocks a
# level to it; at 40 levels that chain runs out of stack.
MAX_DEPTH = 24
RELEASES = "releases device memory"
DEFAULT_BUDGET = 400_000


class Incomplete(Exception):
    """The root needed more work than the budget allows."""


@dataclass(frozen=True)
class ReturnInfo:
    path: str
    line: int
    function: str
    types: frozenset[str]
    is_none: bool
    text: str
    column: int = 1  # 1-based, of the `return` (the body's indentation for a fall-through)


@dataclass(frozen=True)
class Exit:
    state: PathState
    ret: ReturnInfo
    outer: bool = False  # a return from a `with` body, seen inside a context manager


YieldHook = Callable[[list[PathState]], tuple[list[PathState], list[Exit]]]


class Walker:
    def __init__(
        self,
        program: Program,
        types: TypeOracle,
        resolver: CallResolver,
        buffers: BufferOracle,
        modes: ModeOracle,
        vocabulary: Vocabulary,
        budget: int = DEFAULT_BUDGET,
        barriers_only: bool = False,
        dead_stores: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self.program = program
        self.types = types
        self.resolver = resolver
        self.buffers = buffers
        self.modes = modes
        self.vocab = vocabulary
        # (function, buffer) pairs whose writes a pack says nothing reads.
        self.dead_stores = dead_stores
        self._dead_store_functions = frozenset(f for f, _ in dead_stores)
        self.budget = budget
        self.work = 0
        self._memo = CalleeMemo()
        self._self_attributes = SelfAttributes(program)
        # The callee walks under way (the functions active), innermost last, each
        # with the functions active outside it whose recursion it cut.
        self._active: dict[tuple[str, str | None], set[tuple[str, str | None]]] = {}
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._raising: Memo[str, frozenset[int]] = Memo()
        self._calls: dict[int, tuple[ir.Expr, tuple[ir.Call, ...]]] = {}
        self._masks: dict[int, tuple[ir.Stmt, bool]] = {}
        self._mask_locals: Memo[int, tuple[FunctionSummary, frozenset[str]]] = Memo()
        self._event_types = vocabulary.names("event_types")
        self._stream_types = vocabulary.names("stream_types")
        # Quiescence walks (barriers_only) ask nothing of the streams.
        self.names = ObjectNames(program, types)
        self.streams = StreamEffects(
            resolver, buffers, self.names, vocabulary, enabled=not barriers_only
        )
        # Quiescence questions count only full-device barriers as waits, and
        # collect the completion calls (future.set_result) they meet.
        self.barriers_only = barriers_only
        self.completions: list[Completion] = []
        self.cpu_barriers: list[WitnessStep] = []
        self._completion_stack: list[list[Completion]] = []
        # Host syncs met on the way, for SYNC005 only: never a path fact.
        self.host_syncs = HostSyncs(vocabulary, enabled=not barriers_only)
        # Walks an earlier run kept, and where this run's go (stored.py).
        self.stored: StoredWalks | None = None
        # Per callee walk under way, the walks nested in it; the deepest body
        # depth reached and whether the depth limit cut a call, in the walk
        # under way.
        self._nested: list[list[CalleeWalk]] = []
        self._made_nested: list[CalleeWalk] = []
        self._reach = 0
        self._truncating = False
        # The functions (context keys) whose walks in this root may be other
        # ones in another order of walks: walks the depth limit cut, or used
        # where a walk made here would meet it or cut a recursion.
        self._order_bound: set[str] = set()
        # The functions of reused walks that are order-bound here, by the id of
        # their (shared, frozen) set: SGLang's step reuses walks that run
        # thousands of functions thousands of times; `cut_functions` unions them once.
        self._order_bound_walks: dict[int, frozenset[str]] = {}
        # The functions this root walked in a way no run keeps (stored.py).
        self._unkept: set[str] = set()
        # Where a root's statements are recorded (root_record.py): the functions
        # (context keys) the callee walks used since ran, themselves or nested.
        self.called: set[str] | None = None

    def restart(self) -> None:
        """Forget the callee walks and the work done: a new root begins."""
        self._memo = CalleeMemo()
        self.work = 0
        self._unkept = set()
        self._reach, self._truncating = 0, False
        self._order_bound = set()
        self._order_bound_walks = {}
        if self.stored is not None:
            self.stored.restart()

    @contextmanager
    def rooted(self, frame: Frame) -> Iterator[None]:
        """The root's function is active while its step is walked, as a callee's
        is while its walk is under way: a call back into it (SGLang's prebuilt
        batch runs `run_batch` on its inner idle batch) is a recursion cut, not
        a second walk of the whole step below the first."""
        context = (frame.function.qualname, frame.scope.self_class)
        self._active[context] = set()
        try:
            yield
        finally:
            del self._active[context]

    def cut_functions(self) -> set[str]:
        """The functions (context keys) whose walks in this root hold only in the
        order they were made: walks that met a recursion cut, what they ran and
        the functions they cut (a later call of one reuses the cut walk); and
        the walks the depth limit made depend on where they were made
        (`_order_bound`). Every other walk is what it is in any order."""
        return self._memo.cut_functions().union(
            self._order_bound, *self._order_bound_walks.values()
        )

    def configuration(self) -> str:
        """What a callee walk depends on besides its frame, start and items:
        the modes' inputs, the walk's limits and switches (stored.py)."""
        modes = self.modes
        return stable_text(
            (
                sorted(modes.root_mode_params),
                sorted(modes.assigned_on_step),
                sorted(modes.step_flags),
                self.barriers_only,
                sorted(self.dead_stores),
                self.budget,
                MAX_DEPTH,
            )
        )

    def _cut_by_depth(self) -> None:
        """A call the depth limit leaves out: the walks under way hold only at
        this depth (stored.py keeps none of them)."""
        self._truncating = True
        self._order_bound |= self._active_functions()

    # ------------------------------------------------------------------ entry points
    def frame_for(
        self,
        function: FunctionSummary,
        self_class: str | None,
        self_path: str | None,
        params: tuple[tuple[str, ParamBinding], ...] = (),
        mode_params: frozenset[str] = frozenset(),
        anchors: Anchors = (),
    ) -> Frame | None:
        module = self.program.module_of(function.qualname)
        if module is None:
            return None
        return Frame(
            Scope(module, function, self_class),
            self_path,
            params,
            mode_params,
            self.program.project.relpath(module.path),
            anchors,
        )

    def run(
        self, frame: Frame, states: list[PathState], depth: int = 0
    ) -> tuple[list[PathState], list[Exit]]:
        """Walk a whole function: (states falling off its end, its returns).
        Its fresh tensors are freed where it returns (stream_effects.on_exit)."""
        fall, exits = self.block(frame.function.body, frame, states, depth, None)
        return self.finish(frame, fall, exits)

    def finish(
        self, frame: Frame, fall: list[PathState], exits: list[Exit]
    ) -> tuple[list[PathState], list[Exit]]:
        """What leaving the function does to the paths that walked its body:
        its fresh tensors are freed (`run`'s end)."""
        if not self.streams.fresh_in(frame):
            return fall, exits
        fn = frame.function
        fall = self.streams.on_exit(frame, fall, fn.end_line, fn.body[-1].col if fn.body else 0)
        on_exit = self.streams.on_exit
        exits = [
            replace(e, state=on_exit(frame, [e.state], e.ret.line, e.ret.column)[0])
            if not e.outer
            else e
            for e in exits
        ]
        return fall, exits

    # ------------------------------------------------------------------ statements
    def block(
        self,
        stmts: tuple[ir.Stmt, ...],
        frame: Frame,
        states: list[PathState],
        depth: int,
        on_yield: YieldHook | None,
    ) -> tuple[list[PathState], list[Exit]]:
        exits: list[Exit] = []
        if depth > self._reach:
            self._reach = depth
        for stmt in stmts:
            if not states:
                break
            states, more = self.counted(stmt, frame, states, depth, on_yield)
            exits.extend(more)
        return states, exits

    def counted(
        self,
        stmt: ir.Stmt,
        frame: Frame,
        states: list[PathState],
        depth: int,
        on_yield: YieldHook | None = None,
    ) -> tuple[list[PathState], list[Exit]]:
        """`statement`, its work counted against the budget."""
        # A statement costs more where the paths carry many live stream
        # accesses (every join and call composes them): the budget counts it.
        self.work += 1 + _stream_weight(states)
        if self.work > self.budget:
            raise Incomplete(f"more than {self.budget} statement visits")
        return self.statement(stmt, frame, states, depth, on_yield)

    def statement(
        self,
        stmt: ir.Stmt,
        frame: Frame,
        states: list[PathState],
        depth: int,
        on_yield: YieldHook | None,
    ) -> tuple[list[PathState], list[Exit]]:
        if self.host_syncs.enabled and isinstance(stmt, ir.Eval | ir.Assign | ir.Return):
            self.mask_indexing(stmt, frame, states)
        if isinstance(stmt, ir.Eval):
            if isinstance(stmt.value, ir.Yield) and on_yield is not None:
                states = self.expr(stmt.value.value, frame, states, depth)
                return on_yield(states)
            return self.expr(stmt.value, frame, states, depth), []
        if isinstance(stmt, ir.Assign):
            if isinstance(stmt.value, ir.Yield) and on_yield is not None:
                states = self.expr(stmt.value.value, frame, states, depth)
                return on_yield(states)
            states = self.expr(stmt.value, frame, states, depth)
            for target in stmt.targets:
                states = self.assignment(target, stmt, frame, states, depth == 0)
            return states, []
        if isinstance(stmt, ir.If):
            states = self.expr(stmt.test, frame, states, depth)
            decided = self.streams.split_comparison(stmt.test, frame, states)
            true_states, false_states = decided or self.modes.split(stmt.test, frame, states)
            if not stmt.orelse and id(stmt) in self._raising_fallthroughs(frame.function):
                false_states = []  # no branch bound the name read next: it raises
            t_states, t_exits = self.block(stmt.body, frame, true_states, depth, on_yield)
            f_states, f_exits = self.block(stmt.orelse, frame, false_states, depth, on_yield)
            return merge(t_states + f_states), t_exits + f_exits
        if isinstance(stmt, ir.Loop):
            states = self.expr(stmt.iter, frame, states, depth)
            body_states, exits = self.block(stmt.body, frame, states, depth, on_yield)
            # A loop may run no iteration, unless it counts to a positive constant.
            after = body_states if _runs_once(stmt.iter) else merge(states + body_states)
            else_states, more = self.block(stmt.orelse, frame, after, depth, on_yield)
            return merge(else_states), exits + more
        if isinstance(stmt, ir.With):
            return self.with_stmt(stmt, 0, frame, states, depth, on_yield)
        if isinstance(stmt, ir.Try):
            return self.try_stmt(stmt, frame, states, depth, on_yield)
        if isinstance(stmt, ir.Return):
            states = self.expr(stmt.value, frame, states, depth)
            info = self.return_info(stmt, frame)
            return [], [Exit(s, info) for s in states]
        if isinstance(stmt, ir.Raise):
            self.expr(stmt.value, frame, states, depth)
            return [], []  # an exception is not a completion of the step
        return states, []

    def _raising_fallthroughs(self, function: FunctionSummary) -> frozenset[int]:
        return self._raising.made(function.qualname, lambda: raising_fallthroughs(function))

    def try_stmt(
        self,
        stmt: ir.Try,
        frame: Frame,
        states: list[PathState],
        depth: int,
        on_yield: YieldHook | None,
    ) -> tuple[list[PathState], list[Exit]]:
        body_states, exits = self.block(stmt.body, frame, states, depth, on_yield)
        handler_states: list[PathState] = []
        for handler in stmt.handlers:
            h_states, h_exits = self.block(handler, frame, states, depth, on_yield)
            handler_states += h_states
            exits += h_exits
        else_states, else_exits = self.block(stmt.orelse, frame, body_states, depth, on_yield)
        exits += else_exits
        states = merge(else_states + handler_states)
        if not stmt.finalbody:
            return states, exits
        states, final_exits = self.block(stmt.finalbody, frame, states, depth, on_yield)
        # Returns inside the try run the finally block on their way out.
        passed: list[Exit] = []
        for exit_ in exits:
            after, more = self.block(stmt.finalbody, frame, [exit_.state], depth, None)
            passed.extend(replace(exit_, state=s) for s in after)
            final_exits.extend(more)
        return states, passed + final_exits

    def with_stmt(
        self,
        stmt: ir.With,
        index: int,
        frame: Frame,
        states: list[PathState],
        depth: int,
        on_yield: YieldHook | None,
    ) -> tuple[list[PathState], list[Exit]]:
        if index >= len(stmt.items):
            return self.block(stmt.body, frame, states, depth, on_yield)
        item = stmt.items[index]

        def body(inner: list[PathState]) -> tuple[list[PathState], list[Exit]]:
            return self.with_stmt(stmt, index + 1, frame, inner, depth, on_yield)

        context = item.context
        site = None
        if isinstance(context, ir.Call):
            # Arguments first, then the context manager itself.
            for arg in (*context.args, *(v for _, v in context.kwargs)):
                states = self.expr(arg, frame, states, depth)
            site = self.resolver.resolve(context, frame.scope)
            if self.host_syncs.is_sanctioned(self._names_of(site)):
                body = self.sanctioned(stmt, frame, body)
            managers = [c for c in site.callees if c.function.has_decorator("contextmanager")]
            if managers and depth < MAX_DEPTH:
                return self.enter_generator(site, managers, frame, states, depth, body)
            if managers:
                self._cut_by_depth()
            if site.constructs is not None:
                return self.enter_object(site, frame, states, depth, body)
        else:
            if self._sanctioned_choice(context, frame):
                body = self.sanctioned(stmt, frame, body)
            states = self.expr(context, frame, states, depth)
        stream = self.streams.context_stream(context, frame)
        if stream is not None:
            return self.on_stream(stream, states, body)
        if site is not None:
            states = self.effects(site, frame, states, depth)
        return body(states)

    def _sanctioned_choice(self, context: ir.Expr, frame: Frame) -> bool:
        """`with (nullcontext() if c else <sanctioned>()):`: the engine sanctions
        the body's syncs where they happen; in the other branch it holds that
        there are none (vLLM's DP all-reduce: on the host there, on the device
        here), so the body is a sanctioned region."""
        if not self.host_syncs.enabled or not isinstance(context, ir.IfExp):
            return False
        return any(
            isinstance(branch, ir.Call)
            and self.host_syncs.is_sanctioned(
                self._names_of(self.resolver.resolve(branch, frame.scope))
            )
            for branch in (context.body, context.orelse)
        )

    def sanctioned(self, stmt: ir.With, frame: Frame, body: YieldHook) -> YieldHook:
        """The body of `with <sanctioned_sync_contexts>():`: its host syncs are meant."""
        region = (frame.relpath, stmt.line)
        # Where, with its file: a kept state carries its lines (relocate.py).
        why = f"inside a sanctioned region ({frame.relpath}:{stmt.line})"

        def inside(states: list[PathState]) -> tuple[list[PathState], list[Exit]]:
            self.host_syncs.open(region, why)
            try:
                return body(states)
            finally:
                self.host_syncs.close()

        return inside

    def on_stream(
        self, stream: str, states: list[PathState], body: YieldHook
    ) -> tuple[list[PathState], list[Exit]]:
        """`with torch.cuda.stream(s):` — the body's work runs on `s`; the stream
        current before comes back after it."""
        previous = current_of(states)
        fall, exits = body(self.streams.entered(states, stream))
        return self.streams.left(fall, previous), exits

    def enter_generator(
        self,
        site: CallSite,
        managers: list[Callee],
        frame: Frame,
        states: list[PathState],
        depth: int,
        body: YieldHook,
    ) -> tuple[list[PathState], list[Exit]]:
        """Run a @contextmanager: code before yield, the with-body, code after."""
        out_states: list[PathState] = []
        out_exits: list[Exit] = []
        for callee in managers:
            callee_frame = self.callee_frame(site, callee, frame)
            if callee_frame is None:
                continue

            def hook(inner: list[PathState]) -> tuple[list[PathState], list[Exit]]:
                fall, exits = body(inner)
                return fall, [replace(e, outer=True) for e in exits]

            fall, exits = self.block(
                callee_frame.function.body, callee_frame, states, depth + 1, hook
            )
            for exit_ in exits:
                if exit_.outer:
                    out_exits.append(replace(exit_, outer=False))
                else:
                    out_states.append(exit_.state)  # generator return: the with ends
            out_states.extend(fall)
        return merge(out_states), out_exits

    def enter_object(
        self,
        site: CallSite,
        frame: Frame,
        states: list[PathState],
        depth: int,
        body: YieldHook,
    ) -> tuple[list[PathState], list[Exit]]:
        """`with C(...)`: __init__, __enter__, the body, __exit__."""
        class_qualname = site.constructs
        assert class_qualname is not None
        states = self.effects(site, frame, states, depth)
        states = self.call_method(class_qualname, "__enter__", site.call, frame, states, depth)
        states, exits = body(states)
        states = self.call_method(class_qualname, "__exit__", site.call, frame, states, depth)
        return states, exits

    def call_method(
        self,
        class_qualname: str,
        name: str,
        call: ir.Call,
        frame: Frame,
        states: list[PathState],
        depth: int,
    ) -> list[PathState]:
        method = self.program.find_method(class_qualname, name)
        if method is None:
            return states
        callee = Callee(method, class_qualname, "with")
        site = CallSite(call, (callee,), method=name, receiver_types=frozenset({class_qualname}))
        return self.inline(site, frame, states, depth)

    # ------------------------------------------------------------------ expressions
    def expr(
        self, expr: ir.Expr | None, frame: Frame, states: list[PathState], depth: int
    ) -> list[PathState]:
        if expr is None or not states:
            return states
        if isinstance(expr, ir.IfExp) and (
            self._calls_in(expr.body) or self._calls_in(expr.orelse)
        ):
            # `a() if P else b()`: each arm runs only where its side of P holds.
            states = self.expr(expr.test, frame, states, depth)
            true_states, false_states = self.modes.split(expr.test, frame, states)
            return merge(
                self.expr(expr.body, frame, true_states, depth)
                + self.expr(expr.orelse, frame, false_states, depth)
            )
        if isinstance(expr, ir.BoolOp) and any(self._calls_in(v) for v in expr.values[1:]):
            # `P and t.item()`: an operand runs only where those before it did not
            # decide the result (short-circuit).
            decided: list[PathState] = []
            for value in expr.values[:-1]:
                states = self.expr(value, frame, states, depth)
                true_states, false_states = self.modes.split(value, frame, states)
                go_on, stop = (
                    (true_states, false_states) if expr.op == "and" else (false_states, true_states)
                )
                decided += stop
                states = go_on
            return merge(decided + self.expr(expr.values[-1], frame, states, depth))
        for call in self._calls_in(expr):
            site = self.resolver.resolve(call, frame.scope)
            states = self.effects(site, frame, states, depth)
            if not states:
                break
        return states

    def _calls_in(self, expr: ir.Expr) -> tuple[ir.Call, ...]:
        """The calls of an expression, computed once per expression per run."""
        entry = self._calls.get(id(expr))
        if entry is None or entry[0] is not expr:
            entry = self._calls[id(expr)] = (expr, tuple(ir.iter_calls(expr)))
        return entry[1]

    def assignment(
        self,
        target: ir.Expr,
        stmt: ir.Assign,
        frame: Frame,
        states: list[PathState],
        at_root: bool = False,
    ) -> list[PathState]:
        if isinstance(target, ir.Subscript):
            states = self.streams.on_store(target.base, frame, states, (stmt.line, stmt.col))
            return self.write(target.base, frame, states, (stmt.line, stmt.col), "writes")
        if isinstance(target, ir.Name):
            return self.streams.on_allocate(target, stmt, frame, states)
        if isinstance(target, ir.Seq):
            for element in target.elts:
                states = self.assignment(element, stmt, frame, states)
        if not (isinstance(target, ir.Attr) and stmt.aug_op is None and stmt.value):
            return states
        flag = target.attr in self.modes.step_flags
        if at_root or flag:
            # `self.state = State(...)` / `= None` in a phase of the step: a later
            # `if self.state is None` on this path (the continuation) is decided
            # by it. Only the root's own phases and per-step flags (whose value
            # the next step reads): deeper, it would split callees.
            path = self.buffers.access_path(target, frame)
            if path is None:
                return states
            key = assigned_key(path)
            known = self._surely_not_none(stmt.value, frame)
            if known is not None:
                return [s.decide(key, known) for s in states]
            if flag:  # set to what cannot be told: the path no longer knows it
                return [s.forget(key) for s in states]
        return states

    def _surely_not_none(self, value: ir.Expr, frame: Frame) -> bool | None:
        """The type oracle's answer, a tensor method's result (`x.unsqueeze(1)`,
        the torch pack's `tensor_methods`), and an event or stream the packs'
        constructors make (`torch.cuda.Event()`): never None."""
        known = self.types.surely_not_none(value, frame.scope)
        if known is not None or not isinstance(value, ir.Call):
            return known
        tensor_methods = self.vocab.names("tensor_methods")
        if isinstance(value.func, ir.Attr) and value.func.attr in tensor_methods:
            return True
        made = self.types.expr_types(value, frame.scope)
        return True if made & (self._event_types | self._stream_types) else None

    def write(
        self,
        buffer: ir.Expr,
        frame: Frame,
        states: list[PathState],
        where: tuple[int, int],
        verb: str,
    ) -> list[PathState]:
        """A host write of `buffer` at (line, column), when it is shared pinned
        memory and a pack does not say the value written is dead."""
        access = self._host_access(buffer, frame, where, f"{verb} pinned buffer")
        if access is None or self._dead_store(buffer, frame):
            return states
        trace, identity = access
        return [s.on_write(trace, identity) for s in states]

    def _dead_store(self, buffer: ir.Expr, frame: Frame) -> bool:
        function = frame.function.qualname
        if function not in self._dead_store_functions:
            return False
        fact = self.buffers.provenance(buffer, frame)
        return fact is not None and (function, fact.origin) in self.dead_stores

    def host_read(
        self, buffer: ir.Expr, frame: Frame, states: list[PathState], where: tuple[int, int]
    ) -> list[PathState]:
        """`pinned.tolist()`: the host reads pinned memory a pending D2H copy may
        still write."""
        access = self._host_access(buffer, frame, where, "reads pinned buffer", reading=True)
        if access is None:
            return states
        trace, identity = access
        return [s.on_host_read(trace, identity) for s in states]

    def _host_access(
        self,
        buffer: ir.Expr,
        frame: Frame,
        where: tuple[int, int],
        what: str,
        reading: bool = False,
    ) -> tuple[Trace, str] | None:
        """The witness step and buffer identity of a host access of shared pinned
        memory, or a read of any pinned memory (a landing copy may still write
        it); None for other memory: a write through a UVA view is device work,
        on the stream."""
        fact = self.buffers.provenance(buffer, frame)
        if fact is None or fact.uva or not (fact.shared_pinned or (reading and fact.pinned)):
            return None
        allocated = f"{self.program.project.relpath(fact.path)}:{fact.line}" if fact.path else "?"
        text = f"{what} {fact.origin}"
        note = f"{text} (allocated at {allocated})"
        if fact.pool:
            note += f"; slot of round-robin pool {fact.pool}"
        line, column = where
        step = WitnessStep(
            frame.relpath, line, frame.function.qualname, note, text, fact.pool, column
        )
        return (step,), self.buffers.identity(buffer, fact, frame)

    def effects(
        self, site: CallSite, frame: Frame, states: list[PathState], depth: int
    ) -> list[PathState]:
        call = site.call
        vocab = self.vocab
        method = site.method
        kwargs = dict(call.kwargs)

        def trace(note: str) -> Trace:
            return (self.site_step(frame, call, note),)

        arguments = (*call.args, *(v for _, v in call.kwargs))
        states = self.streams.on_call(site, frame, states, trace)
        if site.kernel is not None:
            note = f"launches kernel {site.kernel.name}"
            reads = self.buffers.accesses(arguments, frame)
            return [s.on_launch(trace(note), reads) for s in states]
        if method is not None and method in vocab.names("completion_methods"):
            self._completion_sink().append(
                (self.site_step(frame, call, f"completes: .{method}(...)"), list(states))
            )
        released = self._released(site)
        if released is not None:
            # Device memory is unmapped or offloaded here: work still running on
            # it must have finished, as before a completion.
            note = f"{RELEASES} ({released})"
            self._completion_sink().append((self.site_step(frame, call, note), list(states)))
        if site.external is not None:
            if site.external in vocab.names("cpu_barriers"):
                note = f"{site.external}() is a CPU barrier, not a device barrier"
                self.cpu_barriers.append(self.site_step(frame, call, note))
                return states
            if site.external in vocab.names("full_device_waits"):
                t = trace(f"host waits for the whole device ({site.external})")
                self.host_sync(frame, t, states)
                return [s.on_wait(t, DEVICE_BARRIER) for s in states]
            if site.external in vocab.names("write_functions") and call.args:
                return self.write(
                    call.args[0], frame, states, (call.line, call.col), "writes (copy into)"
                )
            if any(site.external.startswith(p) for p in vocab.names("launch_prefixes")):
                reads = self.buffers.accesses(arguments, frame)
                return [s.on_launch(trace(f"launches {site.external}"), reads) for s in states]
        if self.host_syncs.enabled:
            self.hidden_syncs(site, frame, states)
        out = kwargs.get(vocab.scalar("out_keyword", "out"))
        if out is not None:
            states = self.write(out, frame, states, (call.line, call.col), "writes (out=)")
        if method is not None and site.receiver is not None:
            receiver_kind = self._receiver_kind(site)
            if receiver_kind is not None:
                # An object the root cannot name (built inside a callee: an
                # output's own event) is known by its class and text, so two
                # classes' `self.copy_event` are two events; where the receiver
                # has no text, by where it is used (with its file: a kept walk
                # carries its lines, relocate.py).
                unnamed = f"<{receiver_kind}@{frame.relpath}:{call.line}>"
                event = self.streams.object_name(site.receiver, frame, unnamed)
                if method in vocab.names("host_wait_methods"):
                    if self.barriers_only:
                        return states  # one event or stream is not the whole device
                    # The receiver as written: the witness names source text.
                    text = ir.dotted(site.receiver) or unnamed
                    t = trace(f"host waits on {receiver_kind} {text}.{method}()")
                    self.host_sync(frame, t, states)
                    if receiver_kind == "event":
                        return [s.on_wait(t, event) for s in states]
                    stream = self.streams.stream_of(site.receiver, frame) or CURRENT
                    return [s.on_wait(t, DEVICE_BARRIER, stream) for s in states]
                if receiver_kind == "event":
                    states = self.streams.on_event(method, event, site, frame, states)
                if method in vocab.names("event_record_methods") and receiver_kind == "event":
                    return [s.on_record(event) for s in states]
                if method in vocab.names("device_wait_methods"):
                    return states  # orders streams on the device, never the host
            if method in vocab.names("implicit_wait_methods"):
                states = self.host_read(site.receiver, frame, states, (call.line, call.col))
            if (
                not self.barriers_only
                and method in vocab.names("implicit_wait_methods")
                and self._copies_device_data(site, frame)
            ):
                t = trace(f"host waits: .{method}() copies a device tensor to the host")
                self.host_sync(frame, t, states)
                states = self.streams.on_copy_to_host(site, frame, states, t)
                return [s.on_wait(t, DEVICE_BARRIER, CURRENT) for s in states]
            if (
                self.host_syncs.enabled
                and not self.barriers_only
                and method in vocab.names("implicit_wait_methods")
                and not self._known_host(site.receiver, frame)
            ):
                self.maybe_sync(frame, call, f".{method}() of a tensor of unknown origin", states)
            if method in vocab.names("copy_methods"):
                copied = self.copy(site, frame, states)
                if copied is not None:
                    states = copied
                    return self.inline(site, frame, states, depth) if site.callees else states
            if method in vocab.names("inplace_write_methods"):
                where = (call.line, call.col)
                states = self.write(site.receiver, frame, states, where, f"writes (.{method})")
            if self._launches_device_work(site, frame):
                t = trace(f"launches device work (.{method}())")
                reads = self.buffers.accesses((site.receiver, *arguments), frame)
                states = [s.on_launch(t, reads) for s in states]
        if site.callees and depth < MAX_DEPTH:
            return self.inline(site, frame, states, depth)
        if site.callees:
            self._cut_by_depth()
        return states

    def copy(self, site: CallSite, frame: Frame, states: list[PathState]) -> list[PathState] | None:
        """`dst.copy_(src, non_blocking=...)` and `src.to(device, non_blocking=...)`.

        A `non_blocking` copy between pinned host memory and the device runs
        later: it reads (H2D) or writes (D2H) the pinned buffer after the call
        returns. From or into pageable memory, and without `non_blocking`, the
        copy is staged and the host waits for the stream. None when the call is
        not a copy this model can place (unknown memory on both sides).
        """
        call, method = site.call, site.method
        assert method is not None and site.receiver is not None
        asynchronous = non_blocking(call, self.vocab)
        if method == "copy_":
            dst = self.buffers.provenance(site.receiver, frame)
            src = self.buffers.provenance(call.args[0], frame) if call.args else None
        else:
            dst, src = None, self.buffers.provenance(site.receiver, frame)
            if method == "to" and not moves_to_device(call, self.vocab.names("host_devices")):
                return self.landing(site, frame, states) if asynchronous else None
        if method == "copy_" and (viewed := self._uva_copy(site, frame, src, dst)) is not None:
            return [s.on_launch(*viewed) for s in states]
        host_src = src is not None and src.host and not src.uva
        host_dst = dst is not None and dst.host and not dst.uva
        if not (host_src or host_dst):
            if asynchronous:
                t = (self.site_step(frame, call, f"launches an asynchronous copy (.{method})"),)
                return [s.on_launch(t) for s in states]
            if method == "copy_" and not self.barriers_only:
                what = "a blocking copy between tensors of unknown origin"
                self.maybe_sync(frame, call, what, states)
            return None
        if method == "copy_" and host_dst and src is not None and src.host:
            return None  # host to host: an ordinary write, handled by the caller
        if method == "copy_" and host_dst and src is None and not (asynchronous and dst.pinned):
            return None  # a blocking copy from unknown memory: written as the caller sees it
        # `pinned.copy_(x, non_blocking=True)` from memory not known to be on the
        # host is the device-to-host idiom: the DMA writes the pinned buffer later.
        pinned_side = src if host_src else dst
        assert pinned_side is not None
        if asynchronous and pinned_side.pinned:
            kind = "read" if host_src else "write"
            direction = "reads" if host_src else "writes"
            note = (
                f"launches an asynchronous copy (.{method}(non_blocking=True)) that {direction} "
                f"pinned {pinned_side.origin} on the device's schedule"
            )
            t = (self.site_step(frame, call, note),)
            side = call.args[0] if host_src and method == "copy_" else site.receiver
            touched = (
                ((self.buffers.identity(side, pinned_side, frame), kind),)
                if pinned_side.persistent
                else ()
            )
            return [s.on_launch(t, touched) for s in states]
        if self.barriers_only:
            # A blocking copy synchronizes its stream (measured: tests/gpu): it
            # leaves no work running, but one stream is not the whole device.
            return states
        note = f"host waits: a blocking copy (.{method}) to or from pageable or host memory"
        t = (self.site_step(frame, call, note),)
        if asynchronous:
            staged = (
                f"host waits: .{method}(non_blocking=True) from pageable memory "
                "is staged synchronously"
            )
            self.host_sync(frame, (self.site_step(frame, call, staged),), states)
        else:
            # `non_blocking=<expression>` may well be true: the sync is uncertain.
            certain = not non_blocking_at_run_time(call, self.vocab)
            self.host_sync(frame, t, states, certain=certain)
        return [s.on_wait(t, DEVICE_BARRIER, CURRENT) for s in states]

    def _uva_copy(
        self, site: CallSite, frame: Frame, src: BufferFact | None, dst: BufferFact | None
    ) -> tuple[Trace, tuple[tuple[str, str], ...]] | None:
        """`dst.copy_(src)` where a side is a device view of pinned host memory
        (the packs' `uva_view_functions`): a copy on the device, queued whatever
        `non_blocking` says, that reads or writes the pinned buffer when it runs
        (the launch and what it touches), or None."""
        side, fact, kind = None, None, ""
        if src is not None and src.uva and site.call.args:
            side, fact, kind = site.call.args[0], src, "read"
        elif dst is not None and dst.uva:
            side, fact, kind = site.receiver, dst, "write"
        if side is None or fact is None or not fact.pinned:
            return None
        direction = "reads" if kind == "read" else "writes"
        note = (
            f"launches a copy (.copy_) on the device that {direction} pinned {fact.origin} "
            "through its device view, on the device's schedule"
        )
        trace = (self.site_step(frame, site.call, note),)
        touched = ((self.buffers.identity(side, fact, frame), kind),) if fact.persistent else ()
        return trace, touched

    def landing(
        self, site: CallSite, frame: Frame, states: list[PathState]
    ) -> list[PathState] | None:
        """`x.to("cpu", non_blocking=True)` from the device: the copy writes the
        fresh pinned result later, so a host read of it must wait first."""
        fact = self.buffers.provenance(site.call, frame)
        if fact is None or not fact.pinned:
            return None
        note = (
            f"launches an asynchronous copy (.to(non_blocking=True)) that writes its {fact.origin}"
        )
        t = (self.site_step(frame, site.call, note),)
        return [s.on_launch(t, ((fresh_identity(fact.site), "write"),)) for s in states]

    def _known_host(self, expr: ir.Expr, frame: Frame) -> bool:
        fact = self.buffers.provenance(expr, frame)
        return fact is not None and fact.host

    def _copies_device_data(self, site: CallSite, frame: Frame) -> bool:
        """`.tolist()` of a known device tensor; `.cpu()` (blocking) of anything not
        known to be host memory."""
        assert site.receiver is not None and site.method is not None
        fact = self.buffers.provenance(site.receiver, frame)
        if fact is not None and fact.device:
            return True
        if site.method not in self.vocab.names("device_copy_methods"):
            return False
        return not non_blocking(site.call, self.vocab) and (fact is None or not fact.host)

    def _released(self, site: CallSite) -> str | None:
        """The release function (a pack's `release_functions`) this call runs, if any."""
        release = self.vocab.names("release_functions")
        if not release:
            return None
        names = [c.function.qualname for c in site.callees]
        if site.external is not None:
            names.append(site.external)
        if site.method is not None:
            names.extend(f"{t}.{site.method}" for t in sorted(site.receiver_types))
        return next((n for n in names if n in release), None)

    def _launches_device_work(self, site: CallSite, frame: Frame) -> bool:
        """An unresolved method that runs device work on its receiver.

        In-place tensor methods (`copy_`, `fill_`, ...) launch unless the
        receiver is known host memory; `clone` launches only on a UVA view
        (a host tensor's clone is host work); other launch methods always do.
        """
        if site.callees or site.method is None or site.receiver is None:
            return False
        in_place = site.method in self.vocab.names("device_work_methods")
        if not in_place and site.method not in self.vocab.names("launch_methods"):
            return False
        fact = self.buffers.provenance(site.receiver, frame)
        if in_place:
            return fact is None or fact.device or fact.uva
        return site.method != "clone" or (fact is not None and fact.uva)

    def _completion_sink(self) -> list[Completion]:
        """Where completions met now are recorded: the innermost callee walk."""
        return self._completion_stack[-1] if self._completion_stack else self.completions

    def run_collecting(
        self, frame: Frame, states: list[PathState]
    ) -> tuple[list[PathState], list[Exit], list[Completion], list[WitnessStep]]:
        """`run`, plus the completions and CPU barriers the walk met."""
        self.completions = []
        self.cpu_barriers = []
        fall, exits = self.run(frame, states)
        return fall, exits, self.completions, self.cpu_barriers

    # ------------------------------------------------------------------ host syncs (SYNC005)
    def host_sync(
        self,
        frame: Frame,
        trace: Trace,
        states: list[PathState],
        wait: bool = True,
        certain: bool = True,
    ) -> None:
        """Remember a host sync the walk met (host_syncs.py); the states are untouched."""
        if not self.host_syncs.enabled:
            return
        step = trace[-1]
        why = self.host_syncs.marked(markers(frame.scope.module), step)
        modes = list(dict.fromkeys(s.assumptions for s in states))
        self.host_syncs.met(step, modes, why, wait, certain)

    def maybe_sync(self, frame: Frame, call: ir.Call, what: str, states: list[PathState]) -> None:
        """A sync only if the tensor is on the device, which the walk cannot tell."""
        step = self.site_step(frame, call, f"host may wait: {what}")
        self.host_sync(frame, (step,), states, wait=False, certain=False)

    def mask_indexing(self, stmt: ir.Stmt, frame: Frame, states: list[PathState]) -> None:
        """`x[mask]` in the statement (mask_index.py): an uncertain sync."""
        entry = self._masks.get(id(stmt))
        if entry is None or entry[0] is not stmt:
            fn = frame.function
            known = self._mask_locals.made(
                id(fn), lambda: (fn, boolean_locals(fn)), fits=lambda known: known[0] is fn
            )
            masks = known[1]
            parts = (getattr(stmt, "value", None), *getattr(stmt, "targets", ()))
            entry = self._masks[id(stmt)] = (stmt, any(mask_indexed(p, masks) for p in parts))
        if entry[1]:
            step = WitnessStep(
                frame.relpath,
                stmt.line,
                frame.function.qualname,
                "host may wait: boolean-mask indexing has a data-dependent shape",
                column=stmt.col,
            )
            self.host_sync(frame, (step,), states, wait=False, certain=False)

    def hidden_syncs(self, site: CallSite, frame: Frame, states: list[PathState]) -> None:
        """Syncs only SYNC005 counts: data-dependent-shape ops and scalar
        conversions of device data (a pack's rows). They block the host (measured:
        README *GPU checks*), but the walk never counted them as waits, so they
        stay out of the path states: SYNC001-SYNC004 are unchanged by them."""
        vocab, call, method = self.vocab, site.call, site.method
        compilers = vocab.names("compile_decorators")
        if compilers and any(c.function.has_decorator(*compilers) for c in site.callees):
            what = "a compiled function may compile on this call and read sizes on the host"
            self.maybe_sync(frame, call, what, states)
        if site.external is not None and site.external in vocab.names("device_load_functions"):
            self.maybe_sync(frame, call, f"{site.external}() loads onto a device", states)
        subject: ir.Expr | None = None
        if site.external is not None and call.args:
            if site.external in vocab.names("data_dependent_sync_functions"):
                subject, what = call.args[0], f"{site.external}() has a data-dependent shape"
            elif site.external in vocab.names("scalar_conversions"):
                name = site.external.rpartition(".")[2]
                subject, what = call.args[0], f"{name}() reads a device tensor's value"
        elif site.receiver is not None and method in vocab.names("data_dependent_sync_methods"):
            subject, what = site.receiver, f".{method}() has a data-dependent shape"
        if subject is None:
            return
        fact = self.buffers.provenance(subject, frame)
        if fact is None or not fact.device:
            # Only a tensor known to live on the device surely makes the host wait.
            if fact is None or not fact.host:
                self.maybe_sync(frame, call, what, states)
            return
        note = f"host waits: {what}"
        self.host_sync(frame, (self.site_step(frame, call, note),), states, wait=False)

    def _names_of(self, site: CallSite) -> list[str]:
        """What a call runs, by qualified name (its callees, or the external name)."""
        names = [c.function.qualname for c in site.callees]
        return [*names, site.external] if site.external is not None else names

    def _receiver_kind(self, site: CallSite) -> str | None:
        for t in site.receiver_types:
            if t in self._event_types:
                return "event"
            if t in self._stream_types or t.startswith(tuple(f"{s}." for s in self._stream_types)):
                return "stream"
        return None

    def callee_frame(self, site: CallSite, callee, frame: Frame) -> Frame | None:
        if callee.via in ("self", "super", "with"):
            self_path = frame.self_path
        elif callee.via == "constructor":
            self_path = None
        elif site.receiver is not None:
            self_path = self.buffers.access_path(site.receiver, frame)
            if self_path is not None:
                self_path = self.names.canonical(self_path, frame.anchors)
        else:
            self_path = None
        params = self.bind_params(site.call, callee, frame)
        return self.frame_for(
            callee.function, callee.self_class, self_path, params, anchors=frame.anchors
        )

    def bind_params(
        self, call: ir.Call, callee: Callee, frame: Frame
    ) -> tuple[tuple[str, ParamBinding], ...]:
        bindings: list[tuple[str, ParamBinding]] = []
        for param, arg in passed_arguments(call, callee):
            if isinstance(arg, ir.Const) and isinstance(arg.value, bool):
                bindings.append((param.name, ParamBinding(None, None, const=arg.value)))
                continue
            if arg is None or isinstance(arg, ir.Opaque):
                continue
            attr = ir.self_attr(arg)
            owner = (frame.scope.self_class, attr) if attr and frame.scope.self_class else None
            binding = ParamBinding(
                self.buffers.access_path(arg, frame),
                self.buffers.provenance(arg, frame),
                owner,
                memory=self.streams.memory_of(arg, frame),
            )
            if binding.path is None and binding.buffer is None:
                continue
            bindings.append((param.name, binding))
        return tuple(bindings)

    def inline(
        self, site: CallSite, frame: Frame, states: list[PathState], depth: int
    ) -> list[PathState]:
        results: list[PathState] = []
        for callee in site.callees:
            context = (callee.function.qualname, callee.self_class)
            if context in self._active:
                results.extend(states)  # recursion: assume no effect
                self._depend(frozenset({context}))
                continue
            callee_frame = self.callee_frame(site, callee, frame)
            if callee_frame is None:
                results.extend(states)
                continue
            note = f"calls {callee.function.qualname}"
            if callee.via == "rpc":
                note = f"dispatches {site.method}() by name to {callee.function.qualname}"
            step = self.site_step(frame, site.call, note)
            for state in states:
                results.extend(self.call_one(callee_frame, state, step, depth))
        return merge(dedupe(results))

    def call_one(
        self, frame: Frame, state: PathState, step: WitnessStep, depth: int
    ) -> list[PathState]:
        """Walk one callee from one state, reusing an earlier walk of the same kind.

        The callee is walked from a canonical input: the assumptions it could
        test (the root's mode parameters, and those on the attributes of its
        own `self` its class reaches), and the walk serves every later start
        that agrees on the assumptions it read (memo.py). `compose` puts the
        caller's state back around the result, so unrelated facts do not
        multiply work.
        The walk is made in symbolic names (symbols.py), so callers reaching
        the function through other objects reuse it; a walk that met a
        recursion cut of a function active outside it is kept under the real
        names only, since it holds only while that function is active.
        Where this run has no walk of the kind, one an earlier run kept may be
        taken instead (stored.py, `_taken`).
        """
        fn = frame.function
        self.work += _stream_weight([state])  # composing carries the caller's stream facts
        visible = self._visible(state, frame)
        start = canonical(visible)
        symbols = symbolize(
            frame.self_path, frame.params, partial(self.names.chain, anchors=frame.anchors)
        )
        real_frame = (fn.qualname, frame.scope.self_class, frame.self_path, frame.params)
        real_frame += (frame.anchors,)
        memo, renamer = self._memo.get(real_frame, start.assumptions), None
        walked = False  # else an earlier walk's, whose reads this one makes too
        if memo is None and symbols is not None:
            sym_start = symbols.assumptions(start)
            sym_frame = (fn.qualname, frame.scope.self_class, symbols.self_path, symbols.params)
            sym_frame += (symbols.anchors,)
            one_name = partial(self.names.canonical, anchors=frame.anchors)
            memo = self._memo.get(sym_frame, sym_start.assumptions)
            renamer = symbols.renamer(one_name)
            if memo is None:
                memo, walked = self._taken(sym_frame, sym_start.assumptions, depth)
            if memo is None:
                walked = True
                walk_frame = replace(
                    frame,
                    self_path=symbols.self_path,
                    params=symbols.params,
                    anchors=symbols.anchors,
                )
                memo = self._walk_callee(walk_frame, sym_start, depth)
                if memo.cuts:
                    memo, renamer = memo.renamed(renamer), None
                    self._memo.put(real_frame, start.assumptions, memo)
                else:
                    self._memo.put(sym_frame, sym_start.assumptions, memo)
                    self._keep(sym_frame, sym_start.assumptions, memo)
            else:
                self._memo.put(sym_frame, sym_start.assumptions, memo)
        elif memo is None:
            memo, walked = self._taken(real_frame, start.assumptions, depth)
            if memo is None:
                walked = True
                memo = self._walk_callee(frame, start, depth)
                self._keep(real_frame, start.assumptions, memo)
            self._memo.put(real_frame, start.assumptions, memo)
        if self._nested:
            self._nested[-1].append(memo)
        if self.called is not None and not self._nested:
            # Only the root's own calls: the walks nested in one are in its functions.
            self.called.update(memo.functions)
        if walked is not True:
            self._reused(memo, depth, walked is None)
        self._depend(memo.cuts)
        if renamer is not None:
            renamed = StoredWalks.alias(memo.renamed(renamer), memo)
            memo = self._memo.put(real_frame, start.assumptions, renamed)
        if CONSULTED:
            CONSULTED[-1].update(memo.read)  # the walk under way read them through this one
        self.host_syncs.replay(step, fn.qualname, memo.syncs, state.assumptions)
        if memo.unchanged:
            return [state]  # the callee changed nothing this walk tracks
        known = start.assumptions
        if memo.inside:
            # Completions inside the callee, seen from this caller's state.
            sink = self._completion_sink()
            for where, states in memo.inside:
                feasible = [s for s in states if consistent(state, s)]
                sink.append((where, [compose(state, s, step, known) for s in feasible]))
        return [compose(state, out, step, known) for out in memo.outs if consistent(state, out)]

    def _walk_callee(self, frame: Frame, start: PathState, depth: int) -> CalleeWalk:
        fn = frame.function
        context = (fn.qualname, frame.scope.self_class)
        self._active[context] = set()
        self._completion_stack.append([])
        CONSULTED.append(set())
        self.host_syncs.enter_walk()
        regions = self.host_syncs.regions_mark()
        reach, truncating, work = self._reach, self._truncating, self.work
        self._reach, self._truncating = depth + 1, False
        self._nested.append([])
        outer = reads.push()
        try:
            fall, exits = self.run(frame, [start], depth + 1)
        finally:
            items = reads.pop(outer)
            cuts = self._active.pop(context)
            inside = self._completion_stack.pop()
            consulted = CONSULTED.pop()
            syncs = self.host_syncs.leave_walk()
            self._made_nested = self._nested.pop()
            height, truncated = self._reach - depth, self._truncating
            self._reach, self._truncating = max(reach, self._reach), truncating or truncated
        # Its exits merge like any join: the caller sees outcomes, not returns.
        outs = merge(dedupe(fall + [e.state for e in exits if not e.outer]))
        unchanged = not inside and len(outs) == 1 and outs[0] == start
        read = frozenset(k for k, _ in start.assumptions if k in consulted)
        own_regions, sites = self.host_syncs.regions_since(regions)
        functions = frozenset({context_key(*context)}).union(
            *(nested.functions for nested in self._made_nested)
        )
        walk = CalleeWalk(
            outs, inside, frozenset(cuts), unchanged, read, syncs, items,
            own_regions, sites, height, truncated, self.work - work, functions,
        )  # fmt: skip
        return walk.reusable(start.assumptions)

    def _taken(
        self, frame: tuple, start: Assumptions, depth: int
    ) -> tuple[CalleeWalk | None, bool | None]:
        """The walk an earlier run kept for this frame and start (stored.py),
        and how it stands in for walking: None where it is taken as if walked
        here (it must hold at this depth; its work counts against the budget),
        False where a walk taken earlier in this root held it (a fresh run
        would have it memoised)."""
        if self.stored is None:
            return None, False
        found = self.stored.lookup(frame, start)
        if found is None:
            return None, False
        walk, nested = found
        if nested:
            self.stored.took(walk)
            return walk, False
        # Walked here, it would cut a recursion into a function active now, or
        # reuse a walk this root made in a way no run keeps; or meet the depth limit.
        blocked = not (
            walk.functions.isdisjoint(self._unkept)
            and walk.functions.isdisjoint(self._active_functions())
        )
        if blocked or depth + walk.height >= MAX_DEPTH:
            return None, False
        self.stored.took(walk)
        self.work += walk.work
        if self.work > self.budget:
            raise Incomplete(f"more than {self.budget} statement visits")
        self.stored.taken_whole(walk)
        return walk, None

    def _keep(self, frame: tuple, start: Assumptions, walk: CalleeWalk) -> None:
        """A walk made here, for the next run, unless it holds only where it
        was made (a recursion cut of a function active outside it, or a call
        the depth limit left out)."""
        if self.stored is None:
            return
        function = context_key(frame[0], frame[1])
        kept = not walk.cuts and not walk.truncated
        if not (kept and self.stored.keep(frame, start, walk, self._made_nested, function)):
            self._unkept.add(function)

    def _active_functions(self) -> set[str]:
        return {context_key(*context) for context in self._active}

    def _reused(self, walk: CalleeWalk, depth: int, as_walked: bool) -> None:
        """An earlier walk used here: what walking it read and reached; and,
        where it stands in for walking it (`as_walked`), the regions it
        entered and the sync sites it met. Where it runs a function active
        now, walking it here would have cut that call: the walks under way
        are what this order of walks made, and no run keeps them."""
        if as_walked:
            # What walking it read, the modules it would load and the class
            # headers a subclass query in it reads: the run's inputs (reuse.py),
            # as a walk worker's are replayed (parallel.py).
            self.program.adopt_read(walk.items)
        else:
            reads.note_all(walk.items)
        self._reach = max(self._reach, depth + walk.height)
        active = self._active_functions()
        other_here = walk.truncated or not walk.functions.isdisjoint(active)
        self._truncating = self._truncating or other_here
        if other_here or depth + walk.height >= MAX_DEPTH:
            # Made here first, it would be another walk: cut, or cut short.
            self._order_bound_walks.setdefault(id(walk.functions), walk.functions)
            self._order_bound |= active
        if as_walked:
            self.host_syncs.reenter(walk.regions, walk.sites)

    def _depend(self, cuts: frozenset[tuple[str, str | None]]) -> None:
        """The walks now under way above each cut function hold only while it is
        active: they are memoised under real names."""
        for cut in cuts:
            if cut not in self._active:
                continue
            above = False
            for context, dependent in self._active.items():
                if above:
                    dependent.add(cut)
                above = above or context == cut

    def _visible(self, state: PathState, frame: Frame) -> PathState:
        """The assumptions a callee could test: the root's mode parameters and
        those on the attributes of its `self` its class's code reaches."""
        prefix = f"{frame.self_path}." if frame.self_path else None
        names = self._self_attributes.of(frame.scope.self_class) if frame.scope.self_class else None
        kept = tuple(
            (k, v)
            for k, v in state.assumptions
            if k in self.modes.root_mode_params
            or (prefix is not None and k.startswith(prefix) and relevant(k, prefix, names))
        )
        return state if kept == state.assumptions else state.but(assumptions=kept)

    # ------------------------------------------------------------------ witness bits
    def site_step(self, frame: Frame, call: ir.Call, note: str) -> WitnessStep:
        return WitnessStep(frame.relpath, call.line, frame.function.qualname, note, column=call.col)

    def return_info(self, stmt: ir.Return, frame: Frame) -> ReturnInfo:
        value = stmt.value
        is_none = value is None or (isinstance(value, ir.Const) and value.value is None)
        types = frozenset() if is_none else self.types.expr_types(value, frame.scope)
        text = "None" if is_none else _describe(value)
        return ReturnInfo(
            frame.relpath, stmt.line, frame.function.qualname, types, is_none, text, stmt.col
        )


def with_fall_through(exits: list[Exit], fall: list[PathState], frame: Frame) -> list[Exit]:
    """A function's returns, plus its last line for the paths that fall off its end."""
    fn = frame.function
    column = fn.body[-1].col if fn.body else fn.col
    implicit = ReturnInfo(
        frame.relpath, fn.end_line, fn.qualname, frozenset(), True, "None", column
    )
    return [*exits, *(Exit(state, implicit) for state in fall)]


STREAM_WEIGHT = 16  # live stream accesses that cost as much as one statement


def _stream_weight(states: list[PathState]) -> int:
    """Paths at one program point share most stream facts: the first stands for all."""
    first = states[0].streams
    return len(first.live) // STREAM_WEIGHT if first is not None else 0


def _runs_once(iterable: ir.Expr | None) -> bool:
    """`for _ in range(2):` runs its body at least once (a positive constant count)."""
    if not (
        isinstance(iterable, ir.Call)
        and ir.dotted(iterable.func) == "range"
        and len(iterable.args) == 1
        and not iterable.kwargs
    ):
        return False
    count = iterable.args[0]
    return isinstance(count, ir.Const) and isinstance(count.value, int) and count.value > 0


def _describe(expr: ir.Expr | None) -> str:
    if isinstance(expr, ir.Call):
        name = ir.dotted(expr.func)
        return f"{name}(...)" if name else "a call result"
    name = ir.dotted(expr)
    return name or "a value"
