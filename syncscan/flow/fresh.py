"""Fresh device tensors a function drops: the caching allocator's reuse rule.

PyTorch's caching allocator gives a freed block back to the stream that
allocated it, and the next allocation on that stream may take it at once:
stream order is the only guard it keeps. A tensor allocated on stream A and
used by work on stream B is therefore in danger when its last reference goes:
A's next allocation may overwrite it while B's work is still queued, unless
`x.record_stream(B)` told the allocator to wait for B, or A (or the host)
waited for B first. The same rule read the other way: the block a fresh
allocation gets may still be used by A's earlier work, so B must wait for A
before touching it.

The model names such a tensor (`Runner.execute_model.<locals>.x`) only where
it can see every reference: a local with one value, an allocation on the
device, that the function never stores, returns, yields, puts in a container
or hands to code that may keep it (a project function whose parameter
escapes, a call it cannot resolve). Everything else is left unnamed, so the
stream model stays silent about it.
"""

from __future__ import annotations

from syncscan.flow.buffers import BufferOracle
from syncscan.flow.frames import Frame
from syncscan.flow.memory import fresh_memory
from syncscan.index import ir
from syncscan.index.reads import Memo
from syncscan.index.summary import FunctionSummary
from syncscan.packs import Vocabulary
from syncscan.resolve.calls import Callee, CallResolver, passed_arguments
from syncscan.resolve.types import Scope

_MAX_DEPTH = 4  # project functions followed to see whether they keep an argument


class FreshTensors:
    def __init__(self, resolver: CallResolver, buffers: BufferOracle, vocab: Vocabulary) -> None:
        self.resolver = resolver
        self.buffers = buffers
        self._borrowing = tuple(vocab.names("borrowing_prefixes"))
        self._view_attributes = vocab.names("view_attributes")
        self._host_results = vocab.names("implicit_wait_methods")
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._locals: Memo[str, dict[str, str]] = Memo()
        self._kept: Memo[tuple[str, str], bool] = Memo()

    def of(self, frame: Frame) -> dict[str, str]:
        """Each local of the frame's function (and each local bound to a view of
        it) that holds a fresh device allocation only the function can reach,
        with the memory's name."""
        function = frame.function
        return self._locals.made(function.qualname, lambda: self._find(function, frame.scope))

    def _find(self, function: FunctionSummary, scope: Scope) -> dict[str, str]:
        if function.is_generator:
            return {}  # its frame outlives the call
        values = self.buffers.types.local_values(function)
        params = {p.name for p in function.params}
        frame = Frame(scope, "", (), frozenset(), "")
        found: dict[str, str] = {}
        for name, assigned in values.items():
            if name in params or len(assigned) != 1 or not isinstance(assigned[0], ir.Call):
                continue
            call = assigned[0]
            fact = self.buffers.provenance(call, frame)
            here = f":{call.line}:{call.col}"
            if fact is None or not fact.device or not fact.site.endswith(here):
                continue  # not an allocation this call makes on the device
            group = self._aliases(name, values, params)
            if group is not None and not self._escapes(group, function, scope, 0):
                memory = fresh_memory(function.qualname, name)
                found.update((alias, memory) for alias in group)
        return found

    def _aliases(
        self, name: str, values: dict[str, list[ir.Expr]], params: set[str]
    ) -> frozenset[str] | None:
        """`name` and the locals whose one value holds it (`y = x[:n]`); None
        when a name that may hold it has several values."""
        group = {name}
        changed = True
        while changed:
            changed = False
            for other, assigned in values.items():
                if other in group or not any(self._holds(v, group) for v in assigned):
                    continue
                if other in params or len(assigned) != 1:
                    return None
                group.add(other)
                changed = True
        return frozenset(group)

    # ------------------------------------------------------------------ escapes
    def _escapes(
        self, names: frozenset[str], function: FunctionSummary, scope: Scope, depth: int
    ) -> bool:
        """Whether a reference to what `names` hold may outlive the function."""
        if any(_mentions(nested, names) for nested in function.nested):
            return True  # a closure may keep it
        statements = ir.iter_statements(function.body)
        return any(self._stmt_escapes(s, names, scope, depth) for s in statements)

    def _stmt_escapes(self, stmt: ir.Stmt, names: frozenset[str], scope: Scope, depth: int) -> bool:
        holds = self._holds
        # Bound to one of the names (an alias) is fine; stored anywhere else is not.
        if (
            isinstance(stmt, ir.Assign)
            and holds(stmt.value, names)
            and not all(isinstance(t, ir.Name) and t.id in names for t in stmt.targets)
        ):
            return True
        if isinstance(stmt, ir.Return | ir.Raise) and holds(stmt.value, names):
            return True
        if isinstance(stmt, ir.Loop) and holds(stmt.iter, names):
            return True  # its elements are views bound to the loop's name
        if isinstance(stmt, ir.With) and any(holds(i.context, names) for i in stmt.items):
            return True
        for expr in ir.statement_exprs(stmt):
            for node in ir.walk(expr):
                if isinstance(node, ir.Seq | ir.Comp | ir.Opaque | ir.Yield | ir.NamedExpr):
                    if any(holds(child, names) for child in ir.children(node)):
                        return True  # a container, a closure or a generator keeps it
                elif isinstance(node, ir.Call) and self._call_keeps(node, names, scope, depth):
                    return True
        return False

    def _call_keeps(self, call: ir.Call, names: frozenset[str], scope: Scope, depth: int) -> bool:
        """Whether a call is passed what `names` hold where it may keep it."""
        passed = [a for a in (*call.args, *(v for _, v in call.kwargs)) if self._holds(a, names)]
        if not passed:
            return False
        site = self.resolver.resolve(call, scope)
        if site.kernel is not None:
            return False  # a launch reads its arguments on the stream, keeps nothing
        if site.external is not None and site.external.startswith(self._borrowing):
            return False
        if not site.callees or depth >= _MAX_DEPTH:
            return True
        for callee in site.callees:
            pairs = passed_arguments(call, callee)
            params = {id(arg): p.name for p, arg in pairs if arg is not None}
            for arg in passed:
                param = params.get(id(arg))
                if param is None or self._param_kept(callee, param, depth + 1):
                    return True
        return False

    def _param_kept(self, callee: Callee, param: str, depth: int) -> bool:
        """Whether a project function may keep what its parameter holds."""
        key = (callee.function.qualname, param)
        # A cycle keeps it, to be safe (the guard).
        return self._kept.made(key, lambda: self._keeps(callee, param, depth), True)

    def _keeps(self, callee: Callee, param: str, depth: int) -> bool:
        module = self.buffers.program.module_of(callee.function.qualname)
        if module is None or callee.function.is_generator:
            return True
        scope = Scope(module, callee.function, callee.self_class)
        values = self.buffers.types.local_values(callee.function)
        params = {p.name for p in callee.function.params} - {param}
        group = self._aliases(param, values, params)
        return group is None or self._escapes(group, callee.function, scope, depth)

    def _holds(self, expr: ir.Expr | None, names: frozenset[str] | set[str]) -> bool:
        """Whether evaluating `expr` may give back an object that refers to what
        `names` hold: the name, a view of it, a call's result on it (`x.view(n)`,
        `x.unbind()`, `torch.narrow(x, ...)`, a helper that returns its
        argument), or a value built around it. A gather or arithmetic is a copy."""
        if expr is None:
            return False
        if isinstance(expr, ir.Name):
            return expr.id in names
        if isinstance(expr, ir.Subscript):
            basic = expr.is_slice or isinstance(expr.index, ir.Const)
            return basic and self._holds(expr.base, names)  # a gather is a copy
        if isinstance(expr, ir.Attr):
            return expr.attr in self._view_attributes and self._holds(expr.base, names)
        if isinstance(expr, ir.Call):
            func = expr.func
            if isinstance(func, ir.Attr) and func.attr in self._host_results:
                return False  # `x.tolist()`: host values
            receiver = func.base if isinstance(func, ir.Attr) else None
            arguments = (*expr.args, *(v for _, v in expr.kwargs))
            return any(self._holds(e, names) for e in (receiver, *arguments))
        if isinstance(expr, ir.BinOp | ir.Compare | ir.Not | ir.Const):
            return False
        return any(self._holds(child, names) for child in ir.children(expr))


def _mentions(function: FunctionSummary, names: frozenset[str]) -> bool:
    """Whether a nested function refers to any of `names` (it may capture them)."""
    for stmt in ir.iter_statements(function.body):
        for expr in ir.statement_exprs(stmt):
            if any(isinstance(n, ir.Name) and n.id in names for n in ir.walk(expr)):
                return True
    return any(_mentions(nested, names) for nested in function.nested)
