"""What a call means for the stream model: which stream runs it, what memory
it reads or writes there, and which device-side edges it adds.

The walker asks `on_call` about every call and `on_store` about every
subscript store; the answers are facts for `streams.StreamFacts` (host waits
reach them through `PathState.on_wait`). Stream and
memory identities are attribute paths in the root's terms (`self.copy_stream`,
`self.runner.input_ids`), so a callee's accesses meet the caller's; memory the
analysis cannot name is left out: silent where no conflicting access is known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from syncscan.findings import WitnessStep
from syncscan.flow.buffers import BufferOracle, returned_values
from syncscan.flow.frames import Frame
from syncscan.flow.fresh import FreshTensors
from syncscan.flow.identity import ObjectNames
from syncscan.flow.memory import fresh_memory, local_of
from syncscan.flow.state import PathState, Trace
from syncscan.flow.streams import CURRENT, DEFAULT, StreamFacts
from syncscan.index import ir
from syncscan.index.reads import Memo
from syncscan.packs import Vocabulary
from syncscan.resolve.calls import Callee, CallResolver, CallSite, passed_arguments
from syncscan.resolve.types import Scope


class StreamEffects:
    def __init__(
        self,
        resolver: CallResolver,
        buffers: BufferOracle,
        names: ObjectNames,
        vocab: Vocabulary,
        enabled: bool = True,
    ) -> None:
        self.resolver = resolver
        self.buffers = buffers
        self.names = names
        self.vocab = vocab
        self.enabled = enabled  # off: every question is answered "nothing happens"
        self._wait_stream = vocab.names("stream_wait_methods")
        self._wait_event = vocab.names("stream_event_wait_methods")
        self._record_event = vocab.names("stream_record_methods")
        self._current_functions = vocab.names("current_stream_functions")
        self._default_functions = vocab.names("default_stream_functions")
        self._contexts = vocab.names("stream_contexts")
        self._context_methods = vocab.names("stream_context_methods")
        self._op_prefixes = tuple(vocab.names("stream_op_prefixes"))
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._current_helpers: Memo[str, bool] = Memo()
        self._returned_params: Memo[str, str | None] = Memo()
        self._following: set[tuple[str, str]] = set()  # locals whose value is being read
        # In-place tensor methods return their receiver; views share its memory.
        self._returns_receiver = vocab.names("inplace_write_methods")
        self._same_memory = self._returns_receiver | vocab.names("view_methods")
        # Methods whose device work reads their receiver: copies out of it, launches.
        self._reads_receiver = vocab.names("copy_methods") | vocab.names("launch_methods")
        self._inplace = vocab.names("device_work_methods") | vocab.names("inplace_write_methods")
        self._record_stream = vocab.names("record_stream_methods")
        self.fresh = FreshTensors(resolver, buffers, vocab)

    # ------------------------------------------------------------------ identities
    def stream_of(self, expr: ir.Expr | None, frame: Frame) -> str | None:
        """The stream an expression names: CURRENT for the current stream (and
        for no expression at all), an attribute path, or the function's local;
        None for `None` (no stream: `torch.cuda.stream(None)` changes nothing)."""
        if expr is None:
            return CURRENT
        if isinstance(expr, ir.Const):
            return None
        if isinstance(expr, ir.Call):
            return self._named_by_call(expr, frame)
        if isinstance(expr, ir.Name):
            value = self._single_value(expr, frame)
            if isinstance(value, ir.Call):
                named = self._named_by_call(value, frame)
                return named or f"{frame.function.qualname}:{expr.id}"
        return self.object_name(expr, frame)

    def object_name(self, expr: ir.Expr, frame: Frame, fallback: str = "") -> str | None:
        """An event's or stream's name: `ev = s.record_event()` by that call; an
        object the root can name by its attribute path; one it cannot (built
        inside a callee: an output's own event) by its class and text, so two
        classes' `self.copy_event` are two events (`fallback` for no text)."""
        if isinstance(expr, ir.Name):
            value = self._single_value(expr, frame)
            if isinstance(value, ir.Call) and self._records_event(value):
                return _recorded_event(frame, value)
        path = self.buffers.access_path(expr, frame)
        if path is not None:
            return path
        owner = frame.scope.self_class or frame.function.qualname
        text = ir.dotted(expr) or fallback
        return f"{owner}:{text}" if text else None

    def _single_value(self, name: ir.Name, frame: Frame) -> ir.Expr | None:
        values = self.buffers.types.local_values(frame.function).get(name.id, [])
        return values[0] if len(values) == 1 else None

    def _records_event(self, call: ir.Call) -> bool:
        """`s.record_event()`: a call that returns an event recorded on `s`."""
        return isinstance(call.func, ir.Attr) and call.func.attr in self._record_event

    def _named_by_call(self, call: ir.Call, frame: Frame) -> str | None:
        """CURRENT for a call returning the current stream, DEFAULT for the
        default stream's, None for another call."""
        site = self.resolver.resolve(call, frame.scope)
        names = {c.function.qualname for c in site.callees}
        if site.external is not None:
            names.add(site.external)
        if not site.callees and site.method is not None:
            names.add(f"*.{site.method}")
        if names & self._current_functions:
            return CURRENT
        if names & self._default_functions:
            return DEFAULT
        if site.callees and all(self._returns_current(c, frame) for c in site.callees):
            return CURRENT
        return None

    def _returns_current(self, callee: Callee, frame: Frame) -> bool:
        """A project helper every `return` of which is the current stream
        (`return torch.get_device_module().current_stream(i)`): the engine's
        own name for it, found without a pack entry."""
        qualname = callee.function.qualname
        return self._current_helpers.made(
            qualname,
            lambda: self._current_helper(callee, frame),
            False,  # recursion guard
        )

    def _current_helper(self, callee: Callee, frame: Frame) -> bool:
        module = self.buffers.program.module_of(callee.function.qualname)
        if module is None:
            return False
        scope = Scope(module, callee.function, callee.self_class)
        inner = Frame(scope, "", (), frozenset(), frame.relpath)
        values = list(returned_values(callee.function.body))
        return bool(values) and all(
            isinstance(v, ir.Call) and self._named_by_call(v, inner) == CURRENT for v in values
        )

    def memory_of(self, expr: ir.Expr, frame: Frame, store: bool = False) -> str | None:
        """Device memory an argument names: its attribute path, slices and views
        of it being the same memory. Indexing by anything but a slice or a
        constant (`x[idx]` with a tensor `idx`) gathers into fresh memory when
        read; stored into (`x[idx] = v`), it writes `x` in place."""
        if not store and _gathers(expr):
            return None
        path = self.buffers.access_path(expr, frame)
        if path is None:
            return self._bound_view(expr, frame)
        indexed = _subscripts(expr)
        while path.endswith("[]"):
            if not indexed:
                # Indexed where a parameter or local was bound: the memory it was
                # bound to, when that was a view (a gather is fresh memory).
                return self._bound_view(expr, frame)
            path, indexed = path[:-2], indexed - 1
        return self.names.canonical(path, frame.anchors) if "." in path else None

    def _bound_view(self, expr: ir.Expr, frame: Frame) -> str | None:
        """The memory a parameter or a local names when its argument or its one
        value was named memory or a slice of it (`out=self.bitmask[:n]`,
        `mask = self.bitmask[:n]`): slices and views of it are that memory."""
        base = self._view_base(expr)
        if not isinstance(base, ir.Name) or base.id == "self":
            return None
        binding = frame.param(base.id)
        if binding is not None:
            return binding.memory
        fresh = self.fresh.of(frame).get(base.id)
        if fresh is not None:
            return fresh
        values = self.buffers.types.local_values(frame.function).get(base.id, [])
        key = (frame.function.qualname, base.id)
        if len(values) != 1 or key in self._following:
            return None  # several values, or a local defined through itself
        self._following.add(key)
        try:
            value = self._returned_receiver(values[0])
            if isinstance(value, ir.Call):
                # `b = helper(x, out=self.bitmask[:n])` where the helper returns `out`.
                return self._returned_argument(value, frame)
            return self.memory_of(value, frame)
        finally:
            self._following.discard(key)

    def _view_base(self, expr: ir.Expr) -> ir.Expr:
        """What slices, views and in-place methods of it leave: `x[:n].view(m)` is `x`."""
        return _unwrapped(expr, self._same_memory, slices=True)

    def _returned_receiver(self, value: ir.Expr) -> ir.Expr:
        """What an in-place method call returns: its receiver (`x[:n].copy_(y)`)."""
        return _unwrapped(value, self._returns_receiver, slices=False)

    def _returned_argument(self, call: ir.Call, frame: Frame) -> str | None:
        """The memory of the argument a project helper returns on every path
        (`return out.copy_(x)`), when every function the call may run returns
        the same parameter."""
        site = self.resolver.resolve(call, frame.scope)
        names = {self._returned_parameter(c) for c in site.callees}
        if not site.callees or len(names) != 1 or None in names:
            return None
        (name,) = names
        pairs = passed_arguments(call, site.callees[0])
        passed = {p.name: a for p, a in pairs if a is not p.default}  # passed, not defaulted
        argument = passed.get(name)
        if argument is None or isinstance(argument, ir.Opaque):
            return None
        return self.memory_of(argument, frame)

    def _returned_parameter(self, callee: Callee) -> str | None:
        """The parameter every `return` of a helper gives back (through in-place
        methods, slices and views), or None."""
        return self._returned_params.made(
            callee.function.qualname, lambda: self._returned_param(callee)
        )

    def _returned_param(self, callee: Callee) -> str | None:
        found: set[str | None] = set()
        for value in returned_values(callee.function.body):
            base = None if _gathers(value) else self._view_base(value)
            found.add(base.id if isinstance(base, ir.Name) and base.id != "self" else None)
        name = found.pop() if len(found) == 1 else None
        params = {p.name for p in callee.function.params}
        return name if name in params else None

    def split_comparison(
        self, test: ir.Expr, frame: Frame, states: list[PathState]
    ) -> tuple[list[PathState], list[PathState]] | None:
        """`current_stream() != s` (or `==`, `is`, `is not`): decided on each path
        by the stream current there, when `s` names a stream the model knows;
        None for any other test."""
        if not (self.enabled and isinstance(test, ir.Compare) and len(test.ops) == 1):
            return None
        op = test.ops[0]
        if op not in ("==", "!=", "is", "is not"):
            return None
        left, right = self.stream_of(test.left, frame), self.stream_of(test.comparators[0], frame)
        if left is None or right is None or CURRENT not in (left, right) or left == right:
            return None
        other = right if left == CURRENT else left
        equal: list[PathState] = []
        different: list[PathState] = []
        for state in states:
            facts = state.streams or StreamFacts()
            same = facts.resolve(other) == facts.current
            (equal if same else different).append(state)
        return (equal, different) if op in ("==", "is") else (different, equal)

    # ------------------------------------------------------------------ contexts
    def context_stream(self, context: ir.Expr, frame: Frame) -> str | None:
        """The stream a `with` item makes current: `with torch.cuda.stream(s):`,
        or `with self.ctx:` where the class made `self.ctx` once from such a call
        on its own attribute (`self.ctx = torch.cuda.stream(self.s)`)."""
        if not self.enabled:
            return None
        if isinstance(context, ir.Call):
            return self._context_call(context, frame.scope, frame)
        attr, owner = ir.self_attr(context), frame.scope.self_class
        if attr is None or owner is None:
            return None
        values = [
            (value, scope)
            for target, value, scope in self.buffers.types.attribute_assignments(owner)
            if target == attr
        ]
        if len(values) != 1 or not isinstance(values[0][0], ir.Call):
            return None
        call, scope = values[0]
        if not call.args or ir.self_attr(call.args[0]) is None:
            return None  # the stream must be named the same way from here: `self.<attr>`
        return self._context_call(call, scope, frame)

    def _context_call(self, call: ir.Call, scope, frame: Frame) -> str | None:
        site = self.resolver.resolve(call, scope)
        named = site.external is not None and site.external in self._contexts
        by_method = not site.callees and site.method in self._context_methods
        if not (named or by_method) or not call.args:
            return None
        return self.stream_of(call.args[0], frame)

    # ------------------------------------------------------------------ calls
    def on_call(
        self,
        site: CallSite,
        frame: Frame,
        states: list[PathState],
        trace: Callable[[str], Trace],
    ) -> list[PathState]:
        call, method = site.call, site.method
        receiver = site.receiver
        if not self.enabled or (site.external is not None and site.external in self._contexts):
            return states
        if method in self._wait_stream and receiver is not None and call.args:
            waiter, waited = self.stream_of(receiver, frame), self.stream_of(call.args[0], frame)
            if waiter is None or waited is None:
                return states
            return _apply(states, lambda f: f.wait_stream(f.resolve(waiter), f.resolve(waited)))
        if method in self._wait_event and receiver is not None and call.args:
            waiter = self.stream_of(receiver, frame)
            event = self.object_name(call.args[0], frame, "?")
            if waiter is None or event is None:
                return states
            return _apply(states, lambda f: f.wait_event(f.resolve(waiter), event))
        if method in self._record_event and receiver is not None:
            # `ev = s.record_event()`: an event recorded on `s`, known by its call.
            stream = self.stream_of(receiver, frame)
            if stream is None:
                return states
            event = _recorded_event(frame, call)
            return _apply(states, lambda f: f.record(event, f.resolve(stream)))
        if method in self._record_stream and receiver is not None and call.args:
            memory, stream = self.memory_of(receiver, frame), self.stream_of(call.args[0], frame)
            if memory is None or stream is None:
                return states
            return _apply(states, lambda f: f.record_stream(memory, f.resolve(stream)))
        if site.external is not None and site.external == self.vocab.scalar("set_stream", ""):
            stream = self.stream_of(call.args[0], frame) if call.args else None
            if stream is None:
                return states
            return _apply(states, lambda f: f.with_current(f.resolve(stream)))
        accesses = self._accesses(site, frame)
        if not accesses:
            return states
        name = ir.dotted(call.func) or method or "a call"
        t = trace(f"device work on the stream: {name}(...)")
        return _apply(states, lambda f: _accessed(f, accesses, t))

    def on_copy_to_host(
        self, site: CallSite, frame: Frame, states: list[PathState], trace: Trace
    ) -> list[PathState]:
        """`x.cpu()`, `x.item()`, `x.tolist()` of device memory: a copy to the
        host on the current stream, which reads `x` there (then the host waits
        for that stream, and only that one: a write another stream made
        unordered before it is still a hazard; measured on an H200, tests/gpu)."""
        memory = self.memory_of(site.receiver, frame) if site.receiver is not None else None
        if not self.enabled or memory is None:
            return states
        return _apply(states, lambda f: f.access(memory, "read", trace))

    def on_event(
        self, method: str, event: str, site: CallSite, frame: Frame, states: list[PathState]
    ) -> list[PathState]:
        """`e.record(s)` and `e.wait(s)` on an event (the walker knows the receiver's kind)."""
        args = site.call.args
        stream = self.stream_of(args[0] if args else None, frame)
        if not self.enabled or stream is None:
            return states
        if method in self.vocab.names("event_record_methods"):
            return _apply(states, lambda f: f.record(event, f.resolve(stream)))
        if method in self.vocab.names("device_wait_methods"):
            return _apply(states, lambda f: f.wait_event(f.resolve(stream), event))
        return states

    def _accesses(self, site: CallSite, frame: Frame) -> tuple[tuple[str, str], ...]:
        """(memory, read|write) the call's device work makes on the current stream."""
        call, method, receiver = site.call, site.method, site.receiver
        out: list[tuple[str, str]] = []

        def add(expr: ir.Expr | None, kind: str) -> None:
            if expr is not None and (memory := self.memory_of(expr, frame)) is not None:
                out.append((memory, kind))

        keyword = self.vocab.scalar("out_keyword", "out")
        launches = site.kernel is not None or (
            site.external is not None and site.external.startswith(self._op_prefixes)
        )
        if launches:
            for arg in call.args:
                add(arg, "read")
            for name, value in call.kwargs:
                add(value, "write" if name == keyword else "read")
            return tuple(out)
        if site.callees or method is None or receiver is None:
            return ()
        if method in self._inplace:  # `dst.copy_(src)`, `x.fill_(v)`
            for arg in call.args:
                add(arg, "read")
            add(receiver, "write")
        elif method in self._reads_receiver:
            add(receiver, "read")  # `x.to(...)`, `x.cuda()`, `graph.replay()`
        return tuple(out)

    def on_store(
        self, target: ir.Expr, frame: Frame, states: list[PathState], where: tuple[int, int]
    ) -> list[PathState]:
        """`dev[idx] = value` at (line, column): the current stream writes `dev`,
        when `dev` is known device memory (host memory is the host's write, which
        the host model follows; a list or dict is no memory a stream touches)."""
        if not self.enabled:
            return states
        fact = self.buffers.provenance(target, frame)
        if fact is None or not (fact.device or fact.uva):
            return states
        memory = self.memory_of(target, frame, store=True)
        if memory is None:
            return states
        line, column = where
        note = f"writes {ir.dotted(target) or 'a tensor'}[...]"
        step = WitnessStep(frame.relpath, line, frame.function.qualname, note, column=column)
        return _apply(states, lambda f: _accessed(f, ((memory, "write"),), (step,)))

    # ------------------------------------------------------------------ fresh tensors
    def on_allocate(
        self, target: ir.Name, stmt: ir.Assign, frame: Frame, states: list[PathState]
    ) -> list[PathState]:
        """`x = torch.empty(..., device=d)` for a fresh tensor the model follows:
        allocated on the current stream."""
        memory = self.fresh.of(frame).get(target.id) if self.enabled else None
        if memory != fresh_memory(frame.function.qualname, target.id):
            return states  # not followed, or an alias (`y = x[:n]`): no allocation
        note = (
            f"allocates {target.id} on the stream: the caching allocator may give it a "
            "block the stream's earlier work still uses"
        )
        step = WitnessStep(frame.relpath, stmt.line, frame.function.qualname, note, column=stmt.col)
        return _apply(states, lambda f: f.allocate(memory, (step,)))

    def fresh_in(self, frame: Frame) -> bool:
        """Whether the function holds fresh tensors the model follows."""
        return self.enabled and bool(self.fresh.of(frame))

    def on_exit(self, frame: Frame, states: list[PathState], line: int, column: int):
        """The function returns at `line`: its fresh tensors lose their last
        reference, and the allocator may reuse their blocks."""
        memories = sorted(set(self.fresh.of(frame).values())) if self.enabled else []
        qualname = frame.function.qualname
        for memory in memories:
            _, name = local_of(memory) or ("", memory)
            note = (
                f"returns: {name} is freed, and the caching allocator may hand its block "
                "to the next allocation on the stream that allocated it"
            )
            step = WitnessStep(frame.relpath, line, qualname, note, column=column)
            states = _apply(states, lambda f, m=memory, s=step: f.free(m, (s,)))
        return states

    # ------------------------------------------------------------------ regions
    @staticmethod
    def entered(states: list[PathState], stream: str) -> list[PathState]:
        return _apply(states, lambda f: f.with_current(f.resolve(stream)))

    @staticmethod
    def left(states: list[PathState], previous: str) -> list[PathState]:
        return _apply(states, lambda f: f.with_current(previous))


def _recorded_event(frame: Frame, call: ir.Call) -> str:
    """The event `s.record_event()` returns, named by the function and line of the
    call (with its file: a kept walk carries its lines, relocate.py)."""
    return f"{frame.function.qualname}:record_event@{frame.relpath}:{call.line}"


def _chain(expr: ir.Expr) -> Iterator[ir.Expr]:
    """The expression and what it is taken from: `self.a[i].view(n)[:k]` down to `self`."""
    while True:
        yield expr
        if isinstance(expr, ir.Subscript | ir.Attr):
            expr = expr.base
        elif isinstance(expr, ir.Call) and isinstance(expr.func, ir.Attr):
            expr = expr.func.base
        else:
            return


def _unwrapped(expr: ir.Expr, methods: frozenset[str], slices: bool) -> ir.Expr:
    """`expr` less the calls of `methods` on it (and its subscripts, with `slices`)."""
    while True:
        if slices and isinstance(expr, ir.Subscript):
            expr = expr.base
        elif (
            isinstance(expr, ir.Call)
            and isinstance(expr.func, ir.Attr)
            and expr.func.attr in methods
        ):
            expr = expr.func.base
        else:
            return expr


def _subscripts(expr: ir.Expr) -> int:
    """How many subscripts the expression's own chain applies (`self.a[i][:n]`: 2)."""
    return sum(isinstance(node, ir.Subscript) for node in _chain(expr))


def _gathers(expr: ir.Expr) -> bool:
    """Whether reading `expr` copies: an index that is neither a slice nor a constant."""
    return any(
        isinstance(node, ir.Subscript) and not (node.is_slice or isinstance(node.index, ir.Const))
        for node in _chain(expr)
    )


def _accessed(facts: StreamFacts, accesses: tuple[tuple[str, str], ...], trace: Trace):
    for memory, kind in accesses:
        facts = facts.access(memory, kind, trace)
    return facts


def _apply(states: list[PathState], update) -> list[PathState]:
    return [s.but(streams=update(s.streams or StreamFacts())) for s in states]


def current_of(states: list[PathState]) -> str:
    """The stream current on these paths (they agree: `with` regions nest)."""
    return states[0].streams.current if states and states[0].streams else CURRENT
