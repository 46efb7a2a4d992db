"""Buffer provenance and access paths.

Provenance is inferred from the code, so a project syncscan has never seen gets
the same analysis: a pinned allocation (`pin_memory=True`) stored on an object
is a persistent pinned buffer; views of it (`.numpy()`, slices) are the same
memory; a list of objects holding such buffers, indexed by an attribute that is
rotated with `(i + 1) % n`, is a round-robin slot pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial

from syncscan.flow.frames import BufferFact, Frame
from syncscan.flow.state import slot_identity
from syncscan.index import ir
from syncscan.index.reads import Memo
from syncscan.packs import Vocabulary
from syncscan.resolve.program import Program
from syncscan.resolve.types import Scope, TypeOracle

_MAX_DEPTH = 8
_MAX_RETURN_CHAIN = 16  # helpers returning helpers' results, computed one inside another


class BufferOracle:
    def __init__(self, program: Program, types: TypeOracle, vocabulary: Vocabulary):
        self.program = program
        self.types = types
        self.vocab = vocabulary
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._attr_cache: Memo[tuple[str, str], BufferFact | None] = Memo()
        self._rotating: Memo[tuple[str, str], bool] = Memo()
        self._return_cache: Memo[tuple[str, str | None], BufferFact | None] = Memo()
        self._return_chain = 0

    # ------------------------------------------------------------------ access paths
    def access_path(self, expr: ir.Expr | None, frame: Frame, depth: int = 0) -> str | None:
        """`self.a.b[]` in the root's terms, following locals and params."""
        if expr is None or depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ir.Name):
            if expr.id == "self":
                return frame.self_path
            binding = frame.param(expr.id)
            if binding is not None:
                return binding.path
            if expr.id in frame.mode_params:
                return expr.id
            values = self.types.local_values(frame.function).get(expr.id, [])
            if len(values) == 1:
                return self.access_path(values[0], frame, depth + 1)
            return None
        if isinstance(expr, ir.Attr):
            base = self.access_path(expr.base, frame, depth + 1)
            return f"{base}.{expr.attr}" if base else None
        if isinstance(expr, ir.Subscript):
            base = self.access_path(expr.base, frame, depth + 1)
            return f"{base}[]" if base else None
        if (
            isinstance(expr, ir.Call)
            and isinstance(expr.func, ir.Attr)
            and expr.func.attr in self.vocab.names("view_methods")
        ):
            return self.access_path(expr.func.base, frame, depth + 1)
        return None

    # ------------------------------------------------------------------ provenance
    def provenance(self, expr: ir.Expr | None, frame: Frame, depth: int = 0) -> BufferFact | None:
        return self._provenance(expr, frame.scope, frame, depth)

    def _provenance(
        self, expr: ir.Expr | None, scope: Scope, frame: Frame | None, depth: int
    ) -> BufferFact | None:
        if expr is None or depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ir.Name):
            if frame is not None:
                binding = frame.param(expr.id)
                if binding is not None:
                    return binding.buffer
            if scope.function is None:
                return None
            values = self.types.local_values(scope.function).get(expr.id, [])
            return _strongest(self._provenance(v, scope, frame, depth + 1) for v in values)
        if isinstance(expr, ir.Attr):
            pool = self._pool_of(expr.base, scope, depth)
            if isinstance(expr.base, ir.Name) and expr.base.id == "self" and scope.self_class:
                owners = frozenset({scope.self_class})
            else:
                owners = self.types.expr_types(expr.base, scope)
            best = _strongest(
                self.attribute_provenance(owner, expr.attr)
                for owner in sorted(owners)
                if self.program.find_class(owner) is not None
            )
            if best is None and expr.attr in self.vocab.names("view_attributes"):
                # `t.data`: the same memory as `t`.
                return self._provenance(expr.base, scope, frame, depth + 1)
            return best.with_pool(pool) if best is not None else None
        if isinstance(expr, ir.Subscript):
            fact = self._provenance(expr.base, scope, frame, depth + 1)
            return fact.with_pool(self._pool_of(expr, scope, depth)) if fact else None
        if isinstance(expr, ir.Comp):
            return self._provenance(expr.elt, scope, frame, depth + 1)
        if isinstance(expr, ir.Seq) and expr.elts:
            return self._provenance(expr.elts[0], scope, frame, depth + 1)
        if isinstance(expr, ir.IfExp):
            branches = (expr.body, expr.orelse)
            return _strongest(self._provenance(b, scope, frame, depth + 1) for b in branches)
        if isinstance(expr, ir.Call):
            return self._call_provenance(expr, scope, frame, depth)
        return None

    def _call_provenance(
        self, call: ir.Call, scope: Scope, frame: Frame | None, depth: int
    ) -> BufferFact | None:
        func = call.func
        if isinstance(func, ir.Attr):
            name = func.attr
            if name in self.vocab.names("view_methods"):
                return self._provenance(func.base, scope, frame, depth + 1)
            if name in self.vocab.names("pin_methods"):
                # `t.pin_memory()` returns `t` itself when it is pinned already.
                source = self._provenance(func.base, scope, frame, depth + 1)
                if source is not None and source.pinned:
                    return source
                return _allocated(True, "pin_memory()", scope, call)
            if name in self.vocab.names("device_copy_methods") | self.vocab.names("clone_methods"):
                return self._copy_provenance(name, call, scope, frame, depth)
            target = call.args[0] if call.args else dict(call.kwargs).get("device")
            to_host = isinstance(target, ir.Const) and str(target.value) in self.vocab.names(
                "host_devices"
            )
            moves_to_device = name == "cuda" or (target is not None and not to_host)
            if name == "to" and to_host and non_blocking(call, self.vocab):
                # PyTorch allocates the destination of a non-blocking copy from the
                # device in pinned memory: the copy lands after the call returns.
                source = self._provenance(func.base, scope, frame, depth + 1)
                if source is None or not source.host:
                    return _allocated(True, "landing of .to(host, non_blocking=True)", scope, call)
            if (
                name in ("to", "cuda")
                and _device_kw(call, self.vocab) is not False
                and moves_to_device
            ):
                return _allocated(False, "device tensor", scope, call, device=True)
        target = self.program.resolve_dotted(scope.module, func) if ir.dotted(func) else None
        if target is None:
            return self._method_returned(call, scope, depth)
        if target in self.vocab.names("uva_view_functions") and call.args:
            source = self._provenance(call.args[0], scope, frame, depth + 1)
            return replace(source, uva=True, device=False) if source is not None else None
        if target in self.vocab.names("allocators"):
            pin = dict(call.kwargs).get(self.vocab.scalar("pin_keyword", "pin_memory"))
            on_device = _device_kw(call, self.vocab)
            if on_device is True:
                return _allocated(False, "device tensor", scope, call, device=True)
            # `pin_memory=<expr>` pins unless the expression is provably false: a
            # flag (`is_pin_memory_available()`, `self.pin_memory`) is true on the
            # machines the engine serves.
            if pin is not None and not _provably_false(pin):
                return _allocated(True, "pinned allocation", scope, call)
            if on_device is None and target.endswith("_like"):
                return None  # on the device of its argument, whatever that is
            return _allocated(False, "host tensor", scope, call)
        return self._method_returned(call, scope, depth)

    def _copy_provenance(
        self, name: str, call: ir.Call, scope: Scope, frame: Frame | None, depth: int
    ) -> BufferFact | None:
        """`t.cpu()`: host memory (`t` itself when it is host memory already);
        `t.clone()`: fresh memory where `t` lives, never pinned."""
        assert isinstance(call.func, ir.Attr)
        source = self._provenance(call.func.base, scope, frame, depth + 1)
        if name in self.vocab.names("device_copy_methods"):
            if source is not None and source.host and not source.uva:
                return source
            return _allocated(False, f".{name}() copy", scope, call)
        if source is None or source.uva:
            return None
        return _allocated(False, f".{name}() copy", scope, call, device=source.device)

    def _method_returned(self, call: ir.Call, scope: Scope, depth: int) -> BufferFact | None:
        """`slot.uva(n)` on a pool slot: memory the method hands out of its own
        object (persistent) is that slot's memory, so the pool carries over."""
        fact = self._returned(call, scope, depth)
        if fact is None or not fact.persistent or not isinstance(call.func, ir.Attr):
            return fact
        return fact.with_pool(self._pool_of(call.func.base, scope, depth + 1))

    def _returned(self, call: ir.Call, scope: Scope, depth: int) -> BufferFact | None:
        """What a project function returns: a helper handing out a view of its
        buffer (`return buf.uva[:n]`) gives the caller that buffer."""
        if depth >= _MAX_DEPTH:
            return None
        facts = []
        for function, module, self_class in self._callees(call, scope):
            key = (function.qualname, self_class)
            if key not in self._return_cache and self._return_chain >= _MAX_RETURN_CHAIN:
                continue  # cut, and not remembered
            # Memoised, so computed from depth 1 whatever this caller's depth.
            inner = Scope(module, function, self_class)
            facts.append(self._return_cache.made(key, partial(self._returns, inner), None))
        return _strongest(facts)

    def _returns(self, scope: Scope) -> BufferFact | None:
        """What the function of `scope` returns (one memoised step of `_returned`)."""
        assert scope.function is not None
        self._return_chain += 1
        try:
            return _strongest(
                self._provenance(value, scope, None, 1)
                for value in returned_values(scope.function.body)
            )
        finally:
            self._return_chain -= 1

    def _callees(self, call: ir.Call, scope: Scope):
        """(function, module, self class) a call may run, as far as types tell."""
        func = call.func
        if isinstance(func, ir.Attr):
            for owner in sorted(self.types.expr_types(func.base, scope)):
                owner = owner[5:-1] if owner.startswith("type[") else owner
                method = self.program.find_method(owner, func.attr)
                module = self.program.module_of(method.qualname) if method else None
                if method is not None and module is not None:
                    yield method, module, owner
            return
        target = self.program.resolve_dotted(scope.module, func) if ir.dotted(func) else None
        if target is None:
            return
        symbol = self.program.lookup(target)
        if symbol.kind == "function" and symbol.function is not None and symbol.module:
            yield symbol.function, symbol.module, None

    def attribute_provenance(self, class_qualname: str, attr: str) -> BufferFact | None:
        """What `obj.attr` holds for objects of `class_qualname` (persistent)."""
        key = (class_qualname, attr)
        return self._attr_cache.made(key, lambda: self._attribute(class_qualname, attr), None)

    def _attribute(self, class_qualname: str, attr: str) -> BufferFact | None:
        origin = f"{class_qualname.rsplit('.', 1)[-1]}.{attr}"
        facts = []
        for target, value, scope in self.types.attribute_assignments(class_qualname):
            fact = self._provenance(value, scope, None, 1) if target == attr else None
            if fact is not None:
                line = _first_line(value) or (scope.function.line if scope.function else 0)
                path = scope.module.path
                facts.append(replace(fact, persistent=True, origin=origin, path=path, line=line))
        return _strongest(facts)

    # ------------------------------------------------------------------ pools
    def _pool_of(self, expr: ir.Expr, scope: Scope, depth: int) -> str | None:
        """`self.bufs[self.idx]` (or a local holding it) with a rotating index."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ir.Name) and scope.function is not None:
            for value in self.types.local_values(scope.function).get(expr.id, []):
                pool = self._pool_of(value, scope, depth + 1)
                if pool:
                    return pool
            return None
        if not isinstance(expr, ir.Subscript) or not isinstance(expr.base, ir.Attr):
            return None
        holder = expr.base
        if not (isinstance(holder.base, ir.Name) and holder.base.id == "self" and scope.self_class):
            return None
        index = expr.index
        if isinstance(index, ir.Name) and scope.function is not None:
            values = self.types.local_values(scope.function).get(index.id, [])
            index = values[0] if len(values) == 1 else index
        if not (isinstance(index, ir.Attr) and isinstance(index.base, ir.Name)):
            return None
        if not self.rotating_index(scope.self_class, index.attr):
            return None
        short = scope.self_class.rsplit(".", 1)[-1]
        return f"{short}.{holder.attr}[{index.attr}]"

    def rotating_index(self, class_qualname: str, attr: str) -> bool:
        """True when some method assigns `self.attr = (...) % n`."""
        return self._rotating.made(
            (class_qualname, attr),
            lambda: any(
                target == attr and isinstance(value, ir.BinOp) and value.op == "Modulo"
                for target, value, _ in self.types.attribute_assignments(class_qualname)
            ),
        )

    # ------------------------------------------------------------------ identity
    def identity(self, expr: ir.Expr, fact: BufferFact, frame: Frame) -> str:
        """`site[slot]` for a pool slot; else `site@holder`, the holder being the
        object whose attribute the buffer is, in the root's terms (instances of
        one class allocate at one site, and must not be confused)."""
        if fact.pool:
            return slot_identity(fact.site, self._pool_holder(expr, frame, 0))
        holder = self._holder(expr, frame, 0)
        return f"{fact.site}@{holder}" if holder else fact.site

    def _through_locals(
        self,
        name: str,
        frame: Frame,
        depth: int,
        follow: Callable[[ir.Expr, Frame, int], str | None],
    ) -> str | None:
        """The first answer `follow` gives for a value the local `name` was assigned."""
        for value in self.types.local_values(frame.function).get(name, []):
            found = follow(value, frame, depth + 1)
            if found is not None:
                return found
        return None

    def _pool_holder(self, expr: ir.Expr, frame: Frame, depth: int) -> str | None:
        """The access path of the object whose rotating list `expr`'s slot is in:
        `self` for `self.bufs[self.idx]`; the receiver for `pool.next_slot()`
        (a method handing out one of its slots)."""
        if depth > _MAX_DEPTH:
            return None
        scope = frame.scope
        if isinstance(expr, ir.Name) and expr.id != "self" and frame.param(expr.id) is None:
            return self._through_locals(expr.id, frame, depth, self._pool_holder)
        if isinstance(expr, ir.Subscript):
            if self._pool_of(expr, scope, depth) is not None and isinstance(expr.base, ir.Attr):
                return self.access_path(expr.base.base, frame)
            return self._pool_holder(expr.base, frame, depth + 1)
        if isinstance(expr, ir.Attr):
            return self._pool_holder(expr.base, frame, depth + 1)
        if isinstance(expr, ir.IfExp):
            return self._pool_holder(expr.body, frame, depth + 1) or self._pool_holder(
                expr.orelse, frame, depth + 1
            )
        if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Attr):
            inner = self._pool_holder(expr.func.base, frame, depth + 1)
            if inner is not None:
                return inner  # `slot.uva(n)`: a method of the slot itself
            return self._returned_pool_holder(expr, frame, depth)
        return None

    def _returned_pool_holder(self, call: ir.Call, frame: Frame, depth: int) -> str | None:
        """`pool.write(x)` / `inputs.stage(x)`: the pool holder of what the method
        returns, found in the callee with its `self` at the receiver's path."""
        assert isinstance(call.func, ir.Attr)
        receiver = self.access_path(call.func.base, frame)
        if receiver is None:
            return None
        for function, module, self_class in self._callees(call, frame.scope):
            inner = Frame(
                Scope(module, function, self_class), receiver, (), frozenset(), "", frame.anchors
            )
            for value in returned_values(function.body):
                holder = self._pool_holder(value, inner, depth + 1)
                if holder is not None:
                    return holder
        return None

    def _holder(self, expr: ir.Expr, frame: Frame, depth: int) -> str | None:
        """The access path of the object whose attribute `expr` reads, through
        views, slices, `.pin_memory()` of pinned memory, conditionals and locals."""
        if depth > 8:
            return None
        same_memory = self.vocab.names("view_methods") | self.vocab.names("pin_methods")
        if isinstance(expr, ir.Subscript):
            return self._holder(expr.base, frame, depth + 1)
        if isinstance(expr, ir.Call) and isinstance(expr.func, ir.Attr):
            if expr.func.attr in same_memory:
                return self._holder(expr.func.base, frame, depth + 1)
            return None
        if isinstance(expr, ir.IfExp):
            return self._holder(expr.body, frame, depth + 1) or self._holder(
                expr.orelse, frame, depth + 1
            )
        if isinstance(expr, ir.Name) and (binding := frame.param(expr.id)) is not None:
            # A helper's parameter: the argument's path names its holder.
            return holder_of_path(binding.path) if binding.path else None
        if isinstance(expr, ir.Name) and expr.id != "self":
            return self._through_locals(expr.id, frame, depth, self._holder)
        if isinstance(expr, ir.Attr):
            return self.access_path(expr.base, frame)
        return None

    def accesses(
        self, exprs: tuple[ir.Expr, ...], frame: Frame, kind: str = "read"
    ) -> tuple[tuple[str, str], ...]:
        """The persistent pinned buffers among `exprs` that device work accesses."""
        out: list[tuple[str, str]] = []
        for expr in exprs:
            fact = self.provenance(expr, frame)
            if fact is not None and fact.shared_pinned:
                out.append((self.identity(expr, fact, frame), kind))
        return tuple(out)

    # ------------------------------------------------------------------ calls


def holder_of_path(path: str) -> str | None:
    """`self.batch` for `self.batch.temps[]`: the object whose attribute it is."""
    while path.endswith("[]"):
        path = path.removesuffix("[]")
    holder, dot, _ = path.rpartition(".")
    return holder if dot else None


def _allocated(
    pinned: bool, origin: str, scope: Scope, call: ir.Call, device: bool = False
) -> BufferFact:
    """A fresh allocation: its site is its identity for the happens-before model."""
    path = scope.module.path
    return BufferFact(
        pinned,
        False,
        origin,
        path,
        call.line,
        device=device,
        host=not device,
        site=f"{path}:{call.line}:{call.col}",
    )


def non_blocking(call: ir.Call, vocab: Vocabulary) -> bool:
    """`non_blocking=True` on a copy: it runs on the stream after the call returns."""
    value = _async_copy_argument(call, vocab)
    return isinstance(value, ir.Const) and value.value is True


def non_blocking_at_run_time(call: ir.Call, vocab: Vocabulary) -> bool:
    """`non_blocking=<expression>`: whether the copy waits is decided when it runs."""
    value = _async_copy_argument(call, vocab)
    return value is not None and not isinstance(value, ir.Const)


def _async_copy_argument(call: ir.Call, vocab: Vocabulary) -> ir.Expr | None:
    return dict(call.kwargs).get(vocab.scalar("async_copy_keyword", "non_blocking"))


def _provably_false(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.Const) and not expr.value


def returned_values(stmts: tuple[ir.Stmt, ...]):
    """The values of a function's `return` statements (not those of nested defs)."""
    for stmt in stmts:
        if isinstance(stmt, ir.Return) and stmt.value is not None:
            yield stmt.value
        for child in ir.child_blocks(stmt):
            yield from returned_values(child)


def _device_kw(call: ir.Call, vocab: Vocabulary) -> bool | None:
    """True when a `device=` keyword names a non-host device, False for host, None if absent."""
    device = dict(call.kwargs).get("device")
    if device is None:
        return None
    if isinstance(device, ir.Const):
        return str(device.value) not in vocab.names("host_devices")
    return True


def _strongest(facts: Iterable[BufferFact | None]) -> BufferFact | None:
    """The fact that says most about pinned, persistent memory (the first on a tie)."""
    return max((f for f in facts if f is not None), key=_rank, default=None)


def _rank(fact: BufferFact) -> int:
    return (
        (4 if fact.pinned and fact.persistent else 0)
        + (2 if fact.pinned else 0)
        + (1 if fact.pool else 0)
    )


def _first_line(expr: ir.Expr) -> int | None:
    for call in ir.iter_calls(expr):
        return call.line
    return None


def moves_to_device(call: ir.Call, host_devices: frozenset[str]) -> bool:
    """`x.to("cuda")`, `x.to(device)`: not `x.to("cpu")` or `x.to(torch.float16)`."""
    target = dict(call.kwargs).get("device") or (call.args[0] if call.args else None)
    if target is None:
        return False
    if isinstance(target, ir.Const):
        return str(target.value) not in host_devices
    name = ir.dotted(target.func if isinstance(target, ir.Call) else target) or ""
    # `torch.float16` is a dtype; `torch.device(...)`, `self.device`, `device` are places.
    return not name.startswith("torch.") or name.startswith("torch.device")
