"""Call resolution: which functions a call site may run.

Resolves self-dispatch through the exact receiver class's MRO, `super()`,
imports (absolute, relative, aliased), attributes typed by constructors or
annotations (plus the overriding methods of subclasses), constructors
(`__init__`), `functools.partial`, and string-named RPC through the packs'
dispatch rules. What it cannot resolve it says so; it never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncscan.index import ir, reads
from syncscan.index.summary import FunctionSummary, Param, method_named
from syncscan.packs import RpcDispatch
from syncscan.resolve.program import Program
from syncscan.resolve.types import Scope, TypeOracle


@dataclass(frozen=True)
class Callee:
    """One function a call may run, with the class its `self` is bound to."""

    function: FunctionSummary
    self_class: str | None
    via: str  # how it was resolved: self, super, import, attribute, constructor, kernel


def passed_arguments(call: ir.Call, callee: Callee) -> list[tuple[Param, ir.Expr | None]]:
    """Each parameter of `callee` (its `self` left out for a bound method) with
    the expression `call` passes it: its default when not passed, None when a
    `*args` / `**kwargs` at the call may pass it unseen."""
    params = list(callee.function.params)
    if callee.self_class is not None and params and params[0].name in ("self", "cls"):
        params = params[1:]
    kwargs = dict(call.kwargs)
    unpacked = "**" in kwargs or any(isinstance(a, ir.Opaque) for a in call.args)
    out: list[tuple[Param, ir.Expr | None]] = []
    for index, param in enumerate(params):
        arg = call.args[index] if index < len(call.args) else kwargs.get(param.name)
        if arg is None and not unpacked:
            arg = param.default  # not passed: the default it takes
        out.append((param, arg))
    return out


@dataclass(frozen=True)
class CallSite:
    """What a call may run; with only `call` given, a call nothing is known about."""

    call: ir.Call
    callees: tuple[Callee, ...] = ()
    external: str | None = None  # dotted name outside the project (torch.cuda.synchronize)
    method: str | None = None  # attribute called, for `obj.method(...)`
    receiver: ir.Expr | None = None
    receiver_types: frozenset[str] = frozenset()
    constructs: str | None = None  # the class a constructor call builds
    kernel: FunctionSummary | None = None  # `kernel[grid](...)` of a decorated kernel
    # Callees a pack declares effect-free: resolved, but never walked.
    effect_free: tuple[str, ...] = ()

    @property
    def resolved(self) -> bool:
        known = self.callees or self.effect_free or self.kernel is not None
        return bool(known) or self.external is not None


class CallResolver:
    def __init__(
        self,
        program: Program,
        types: TypeOracle,
        launch_decorators: frozenset[str],
        rpc: tuple[RpcDispatch, ...] = (),
        other_device_modules: frozenset[str] = frozenset(),
        effect_free_functions: frozenset[str] = frozenset(),
    ):
        self.program = program
        self.types = types
        self.launch_decorators = launch_decorators
        self.rpc = {row.method: row for row in rpc}
        # Packages of classes for other devices (an NPU graph runner): the
        # engine never makes one on the device analysed, so no call reaches them.
        self.other_device_modules = tuple(sorted(other_device_modules))
        # Functions a pack states make no device access, pinned write or wait on
        # the device analysed (their device work sits on a branch that never runs
        # there): calls to them resolve, and the walk does not enter them.
        self.effect_free_functions = effect_free_functions
        # Notes, on each hit, what resolving the site read (reads.Memo).
        self._sites: reads.Memo[tuple[int, str | None, str | None], CallSite] = reads.Memo()

    def resolve(self, call: ir.Call, scope: Scope) -> CallSite:
        """What `call` may run, evaluated in `scope` (memoised: walks revisit sites)."""
        function = scope.function.qualname if scope.function is not None else None
        key = (id(call), function, scope.self_class)
        return self._sites.made(
            key,
            lambda: self._without_effect_free(self._resolve(call, scope)),
            fits=lambda site: site.call is call,  # else a new call where a dead one was
        )

    def _without_effect_free(self, site: CallSite) -> CallSite:
        skipped = tuple(
            c.function.qualname
            for c in site.callees
            if c.function.qualname in self.effect_free_functions
        )
        if not skipped:
            return site
        kept = tuple(c for c in site.callees if c.function.qualname not in skipped)
        return replace(site, callees=kept, effect_free=skipped)

    def _resolve(self, call: ir.Call, scope: Scope) -> CallSite:
        func = call.func
        if isinstance(func, ir.Attr) and func.attr in self.rpc:
            site = self._rpc_call(call, func, self.rpc[func.attr])
            if site is not None:
                return site
        if isinstance(func, ir.Subscript):
            kernel = self._function_named(func.base, scope)
            if kernel is not None and kernel.has_decorator(*self.launch_decorators):
                return CallSite(call, kernel=kernel)
            return CallSite(call)
        if isinstance(func, ir.Attr):
            return self._attribute_call(call, func, scope)
        if isinstance(func, ir.Name):
            return self._name_call(call, func, scope)
        return CallSite(call)

    # ------------------------------------------------------------------ helpers
    def _rpc_call(self, call: ir.Call, func: ir.Attr, row: RpcDispatch) -> CallSite | None:
        """`x.collective_rpc("name")` runs `name` on the receiver classes the pack names."""
        name_arg = dict(call.kwargs).get(row.name_keyword)
        if name_arg is None and len(call.args) > row.name_argument:
            name_arg = call.args[row.name_argument]
        if not (isinstance(name_arg, ir.Const) and isinstance(name_arg.value, str)):
            return None
        callees = [
            Callee(method, cls_name, "rpc")
            for receiver in row.receivers
            for cls_name, method in self.program.overrides(receiver, name_arg.value)
        ]
        unique = {c.function.qualname: c for c in callees}
        return CallSite(call, tuple(unique.values()), method=func.attr, receiver=func.base)

    def _function_named(self, expr: ir.Expr, scope: Scope) -> FunctionSummary | None:
        target = self.program.resolve_dotted(scope.module, expr)
        if target is None:
            return None
        symbol = self.program.lookup(target)
        return symbol.function if symbol.kind == "function" else None

    def constructor(self, class_qualname: str) -> tuple[Callee, ...]:
        init = self.program.find_method(class_qualname, "__init__")
        if init is None:
            return ()
        return (Callee(init, class_qualname, "constructor"),)

    def _name_call(self, call: ir.Call, func: ir.Name, scope: Scope) -> CallSite:
        is_local = scope.function is not None and (
            func.id in self.types.local_values(scope.function)
            or any(p.name == func.id for p in scope.function.params)
        )
        if is_local:
            for t in sorted(self.types.expr_types(func, scope)):
                if t.startswith(("partial[", "type[")):
                    cls = t[t.index("[") + 1 : -1]
                    return CallSite(call, self.constructor(cls), constructs=cls)
            return CallSite(call)
        if func.id == "super":
            return CallSite(call)
        target = self.program.resolve_local_name(scope.module, func.id)
        if target is None:
            # A builtin (len, range, isinstance...) or an unknown global.
            return CallSite(call, external=f"builtins.{func.id}")
        return self._dotted_call(call, target, scope)

    def _dotted_call(self, call: ir.Call, target: str, scope: Scope) -> CallSite:
        symbol = self.program.lookup(target)
        if symbol.kind == "class":
            return CallSite(call, self.constructor(symbol.qualname), constructs=symbol.qualname)
        if symbol.kind == "function" and symbol.function is not None:
            self_class = None
            parent = symbol.function.qualname.rsplit(".", 1)[0]
            if self.program.find_class(parent) is not None:
                self_class = parent  # Class.method(...) called unbound / classmethod
            return CallSite(call, (Callee(symbol.function, self_class, "import"),))
        if symbol.kind == "value" and symbol.module is not None:
            # A module-level alias: NAME = partial(C, ...) or NAME = other_function.
            types = self.types.expr_types(symbol.value, Scope(symbol.module, None, None))
            for t in sorted(types):
                if t.startswith(("partial[", "type[")):
                    cls = t[t.index("[") + 1 : -1]
                    return CallSite(call, self.constructor(cls), constructs=cls)
            return CallSite(call)
        if symbol.kind == "external":
            return CallSite(call, external=target)
        return CallSite(call)

    def _attribute_call(self, call: ir.Call, func: ir.Attr, scope: Scope) -> CallSite:
        base = func.base
        method = func.attr
        # super().method(...)
        if (
            isinstance(base, ir.Call)
            and isinstance(base.func, ir.Name)
            and base.func.id == "super"
            and scope.self_class
            and scope.function is not None
        ):
            defining = scope.function.qualname.rsplit(".", 1)[0]
            mro = self.program.mro(scope.self_class)
            names = [c.qualname for c in mro]
            start = names.index(defining) + 1 if defining in names else 1
            for cls in mro[start:]:
                found = method_named(cls, method)
                if found is not None:
                    callee = Callee(found, scope.self_class, "super")
                    return CallSite(call, (callee,), method=method, receiver=base)
            return CallSite(call, method=method, receiver=base)
        # self.method(...): exact receiver class.
        if isinstance(base, ir.Name) and base.id == "self" and scope.self_class:
            found = self.program.find_method(scope.self_class, method)
            if found is not None:
                callee = Callee(found, scope.self_class, "self")
                return CallSite(
                    call, (callee,), method=method, receiver=base,
                    receiver_types=frozenset({scope.self_class}),
                )  # fmt: skip
        # module.function(...) or package.Class(...) through imports.
        if ir.dotted(base) is not None and not _is_local(base, scope, self.types):
            target = self.program.resolve_dotted(scope.module, func)
            if target is not None:
                head_symbol = self.program.lookup(target.rsplit(".", 1)[0])
                if head_symbol.kind in ("module", "external", "class"):
                    site = self._dotted_call(call, target, scope)
                    if site.resolved or head_symbol.kind != "external":
                        return replace(site, method=method, receiver=base)
        # obj.method(...) through the receiver's inferred types.
        receiver_types = self.types.expr_types(base, scope)
        callees: list[Callee] = []
        externals: list[str] = []
        for t in sorted(receiver_types):
            cls_name = t[5:-1] if t.startswith("type[") else t
            cls = self.program.find_class(cls_name)
            if cls is None:
                if not t.startswith(("list[", "partial[")):
                    externals.append(f"{t}.{method}")
                continue
            for version_class, found in self.program.overrides(cls_name, method):
                if not _in_package(version_class, self.other_device_modules):
                    callees.append(Callee(found, version_class, "attribute"))
        unique = {(c.function.qualname, c.self_class): c for c in callees}
        external = externals[0] if externals and not unique else None
        return CallSite(call, tuple(unique.values()), external, method, base, receiver_types)


def _in_package(qualname: str, packages: tuple[str, ...]) -> bool:
    return any(qualname.startswith(f"{p}.") for p in packages)


def _is_local(expr: ir.Expr, scope: Scope, types: TypeOracle) -> bool:
    while isinstance(expr, ir.Attr):
        expr = expr.base
    if not isinstance(expr, ir.Name):
        return True
    if expr.id == "self":
        return True
    fn = scope.function
    if fn is None:
        return False
    return expr.id in types.local_values(fn) or any(p.name == expr.id for p in fn.params)
