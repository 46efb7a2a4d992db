"""Types of expressions, attributes and locals, inferred from the summaries.

A type is a string: a project class (`pkg.mod.C`), an external dotted name
(`torch.cuda.Event`), or a container `list[T]` / `partial[T]`. Inference is
deliberately shallow: constructor calls, annotations (including class-level
ones), return annotations, comprehensions and simple locals. What it cannot
tell is the empty set, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from syncscan.index import ir, reads
from syncscan.index.reads import Memo
from syncscan.index.summary import (
    FunctionSummary,
    ModuleSummary,
    class_self_assignments,
    method_named,
)
from syncscan.resolve.program import Program

_WRAPPERS = frozenset({"Optional", "Final", "ClassVar", "Annotated"})
_CONTAINERS = frozenset({"list", "List", "Sequence", "tuple", "Tuple", "deque", "Iterable"})
_PARTIAL = frozenset({"functools.partial"})
_MAX_DEPTH = 6
# Attribute types computed inside one another (`a.b` needs `B.c` needs ...): each
# is memoised at depth 0, so a chain this long is cut without caching the cut.
_MAX_ATTR_CHAIN = 24


@dataclass(frozen=True)
class Scope:
    """Where an expression is evaluated: its module, function and `self` class."""

    module: ModuleSummary
    function: FunctionSummary | None
    self_class: str | None


class TypeOracle:
    def __init__(self, program: Program) -> None:
        self.program = program
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._attr_cache: Memo[tuple[str, str], frozenset[str]] = Memo()
        self._attr_chain = 0
        self._assign_cache: Memo[str, list[tuple[str, ir.Expr, Scope]]] = Memo()
        self._locals_cache: Memo[str, dict[str, list[ir.Expr]]] = Memo()
        # Filled with `_assign_cache` (and read only after asking it).
        self._annotated: dict[tuple[str, str], list[tuple[ir.Expr, ModuleSummary]]] = {}
        # Top-level answers by the expression and scope objects (kept alive with them).
        self._expr_cache: Memo[tuple[int, ...], tuple[ir.Expr, Scope, frozenset[str]]] = Memo()

    # ------------------------------------------------------------------ locals
    def local_values(self, function: FunctionSummary) -> dict[str, list[ir.Expr]]:
        """Every value assigned to each plain local name in `function`."""
        return self._locals_cache.made(function.qualname, lambda: _local_values(function))

    # ------------------------------------------------------------------ attributes
    def attribute_assignments(self, class_qualname: str) -> list[tuple[str, ir.Expr, Scope]]:
        """(attr, value, scope) for every `self.attr = value` in the class's MRO."""
        return self._assign_cache.made(class_qualname, lambda: self._assignments(class_qualname))

    def _assignments(self, class_qualname: str) -> list[tuple[str, ir.Expr, Scope]]:
        out: list[tuple[str, ir.Expr, Scope]] = []
        for cls in self.program.mro(class_qualname):
            module = self.program.module_of(cls.qualname)
            if module is None:
                continue
            for method, assigned in class_self_assignments(cls):
                scope = Scope(module, method, class_qualname)
                for target, value, annotation in assigned:
                    if value is not None:
                        out.append((target, value, scope))
                    if annotation is not None:
                        self._annotated.setdefault((class_qualname, target), []).append(
                            (annotation, module)
                        )
        return out

    @reads.positions_unused
    def attr_types(self, class_qualname: str, attr: str) -> frozenset[str]:
        """Types `obj.attr` may hold. Memoised, so computed from depth 0 whatever
        the caller's depth: a result cut short by the caller's budget would
        otherwise be remembered for every later caller."""
        key = (class_qualname, attr)
        if key not in self._attr_cache and self._attr_chain >= _MAX_ATTR_CHAIN:
            return frozenset()  # cut, and not remembered
        return self._attr_cache.made(key, lambda: self._chained_attr_types(key), frozenset())

    def _chained_attr_types(self, key: tuple[str, str]) -> frozenset[str]:
        self._attr_chain += 1
        try:
            return self._compute_attr_types(*key)
        finally:
            self._attr_chain -= 1

    def _compute_attr_types(self, class_qualname: str, attr: str) -> frozenset[str]:
        key = (class_qualname, attr)
        types: set[str] = set()
        for cls in self.program.mro(class_qualname):
            module = self.program.module_of(cls.qualname)
            if module is None:
                continue
            if attr in cls.annotations:
                types |= self.annotation_types(cls.annotations[attr], module)
            prop = method_named(cls, attr)
            if (
                prop is not None
                and prop.has_decorator("property", "cached_property")
                and prop.returns is not None
            ):
                types |= self.annotation_types(prop.returns, module)
        for target, value, scope in self.attribute_assignments(class_qualname):
            if target == attr:
                types |= self.expr_types(value, scope)
        for annotation, module in self._annotated.get(key, ()):
            types |= self.annotation_types(annotation, module)
        return frozenset(types)

    # ------------------------------------------------------------------ annotations
    @reads.positions_unused
    def annotation_types(self, expr: ir.Expr, module: ModuleSummary) -> frozenset[str]:
        if isinstance(expr, ir.Const):
            if isinstance(expr.value, str):
                head = expr.value.split("[")[0].split("|")[0].strip()
                return self.annotation_types(_parse_dotted(head), module) if head else frozenset()
            return frozenset()
        if isinstance(expr, ir.BinOp):
            return self.annotation_types(expr.left, module) | self.annotation_types(
                expr.right, module
            )
        if isinstance(expr, ir.Subscript):
            outer = ir.dotted(expr.base) or ""
            simple = outer.rsplit(".", 1)[-1]
            if simple in _WRAPPERS or simple == "Union":
                return self._index_types(expr.index, module)
            if simple in _CONTAINERS:
                return frozenset(f"list[{t}]" for t in self._index_types(expr.index, module))
            return self.annotation_types(expr.base, module)
        target = self.program.resolve_dotted(module, expr)
        if target is None:
            return frozenset()
        symbol = self.program.lookup(target)
        if symbol.kind == "class":
            return frozenset({symbol.qualname})
        if symbol.kind == "external":
            return frozenset({target})
        return frozenset()

    def _index_types(self, index: ir.Expr, module: ModuleSummary) -> frozenset[str]:
        if isinstance(index, ir.Opaque | ir.Seq):
            parts = index.parts if isinstance(index, ir.Opaque) else index.elts
            out: frozenset[str] = frozenset()
            for part in parts:
                out |= self.annotation_types(part, module)
            return out
        return self.annotation_types(index, module)

    # ------------------------------------------------------------------ expressions
    @reads.positions_unused
    def expr_types(self, expr: ir.Expr | None, scope: Scope, depth: int = 0) -> frozenset[str]:
        """Types `expr` may hold in `scope`. The walk asks the same questions of
        every path and every caller, so a full-depth answer is memoised; not
        one asked inside an attribute's computation, which its recursion guard
        may have cut short."""
        if depth or self._attr_chain or expr is None:
            return self._expr_types(expr, scope, depth)
        # The entry keeps the objects alive, so their ids name them while it lives.
        key = (id(expr), id(scope.module), id(scope.function), id(scope.self_class))
        found = self._expr_cache.made(key, lambda: (expr, scope, self._expr_types(expr, scope, 0)))
        return found[2]

    def _expr_types(self, expr: ir.Expr | None, scope: Scope, depth: int) -> frozenset[str]:
        if expr is None or depth > _MAX_DEPTH:
            return frozenset()
        if isinstance(expr, ir.Name):
            return self._name_types(expr.id, scope, depth)
        if isinstance(expr, ir.Attr):
            if isinstance(expr.base, ir.Name) and expr.base.id == "self" and scope.self_class:
                return self.attr_types(scope.self_class, expr.attr)
            target = self.program.resolve_dotted(scope.module, expr)
            if target is not None:
                symbol = self.program.lookup(target)
                if symbol.kind == "class":
                    return frozenset({f"type[{symbol.qualname}]"})
            out: set[str] = set()
            for base_type in self.expr_types(expr.base, scope, depth + 1):
                if self.program.find_class(base_type) is not None:
                    out |= self.attr_types(base_type, expr.attr)
            return frozenset(out)
        if isinstance(expr, ir.Call):
            return self.call_types(expr, scope, depth)
        if isinstance(expr, ir.Subscript):
            return frozenset(
                t[5:-1]
                for t in self.expr_types(expr.base, scope, depth + 1)
                if t.startswith("list[")
            )
        if isinstance(expr, ir.IfExp):
            return self.expr_types(expr.body, scope, depth + 1) | self.expr_types(
                expr.orelse, scope, depth + 1
            )
        if isinstance(expr, ir.BoolOp):
            out2: frozenset[str] = frozenset()
            for value in expr.values:
                out2 |= self.expr_types(value, scope, depth + 1)
            return out2
        if isinstance(expr, ir.Comp):
            return frozenset(f"list[{t}]" for t in self.expr_types(expr.elt, scope, depth + 1))
        if isinstance(expr, ir.Seq):
            out3: set[str] = set()
            for elt in expr.elts:
                out3 |= {f"list[{t}]" for t in self.expr_types(elt, scope, depth + 1)}
            return frozenset(out3)
        if isinstance(expr, ir.NamedExpr):
            return self.expr_types(expr.value, scope, depth + 1)
        return frozenset()

    def _name_types(self, name: str, scope: Scope, depth: int) -> frozenset[str]:
        fn = scope.function
        if fn is not None:
            if scope.self_class and fn.params and fn.params[0].name == name:
                # `self` is an instance of the class being analysed (or of the
                # subclass the walk dispatched to); `cls` is the class itself.
                if fn.has_decorator("classmethod"):
                    return frozenset({f"type[{scope.self_class}]"})
                if not fn.has_decorator("staticmethod"):
                    return frozenset({scope.self_class})
            for param in fn.params:
                if param.name == name and param.annotation is not None:
                    return self.annotation_types(param.annotation, scope.module)
            values = self.local_values(fn).get(name)
            if values:
                out: frozenset[str] = frozenset()
                for value in values:
                    if isinstance(value, ir.Name) and value.id == name:
                        continue
                    out |= self.expr_types(value, scope, depth + 1)
                return out
        target = self.program.resolve_local_name(scope.module, name)
        if target is None:
            return frozenset()
        symbol = self.program.lookup(target)
        if symbol.kind == "class":
            return frozenset({f"type[{symbol.qualname}]"})
        if symbol.kind == "value" and symbol.module is not None:
            return self.expr_types(symbol.value, Scope(symbol.module, None, None), depth + 1)
        return frozenset()

    @reads.positions_unused
    def call_types(self, call: ir.Call, scope: Scope, depth: int) -> frozenset[str]:
        """Types of a call's result: constructed class, partial, or return annotation."""
        func = call.func
        if isinstance(func, ir.Subscript):
            func = func.base  # Future[Any]() builds a Future
        target = self.program.resolve_dotted(scope.module, func) if ir.dotted(func) else None
        local = (
            isinstance(func, ir.Name)
            and scope.function is not None
            and (func.id in self.local_values(scope.function))
        )
        if target is not None and not local:
            if target in _PARTIAL and call.args:
                return frozenset(
                    f"partial[{t[5:-1]}]"
                    for t in self.expr_types(call.args[0], scope, depth + 1)
                    if t.startswith("type[")
                )
            symbol = self.program.lookup(target)
            if symbol.kind == "class":
                return frozenset({symbol.qualname})
            if symbol.kind == "function" and symbol.function is not None and symbol.module:
                return self._return_types(symbol.function, symbol.module)
            if symbol.kind == "external":
                return frozenset({target})
        out: set[str] = set()
        callee_types = self.expr_types(func, scope, depth + 1)
        for t in callee_types:
            if t.startswith("partial[") or t.startswith("type["):
                out.add(t[t.index("[") + 1 : -1])
        if isinstance(func, ir.Attr):
            for base_type in self.expr_types(func.base, scope, depth + 1):
                if base_type.startswith("type["):
                    base_type = base_type[5:-1]  # classmethod / staticmethod call
                method = self.program.find_method(base_type, func.attr)
                module = self.program.module_of(method.qualname) if method else None
                if method is not None and module is not None:
                    out |= self._return_types(method, module, base_type)
                elif self.program.find_class(base_type) is None and not base_type.startswith(
                    ("list[", "partial[")
                ):
                    out.add(f"{base_type}.{func.attr}()")
        return frozenset(out)

    @reads.positions_unused
    def surely_not_none(self, value: ir.Expr, scope: Scope) -> bool | None:
        """True for a value that is surely not None (a constructed object, a literal
        container), False for None, None when it cannot be told."""
        if isinstance(value, ir.Const):
            return value.value is not None
        if isinstance(value, ir.Seq | ir.Comp):
            return True
        if isinstance(value, ir.Call) and ir.dotted(value.func):
            target = self.program.resolve_dotted(scope.module, value.func)
            if target is not None and self.program.find_class(target) is not None:
                return True
        return None

    def _return_types(
        self, function: FunctionSummary, module: ModuleSummary, self_class: str | None = None
    ) -> frozenset[str]:
        if function.returns is not None:
            types = self.annotation_types(function.returns, module)
            if types:
                return frozenset(
                    self_class
                    if t in {"Self", "typing.Self", "typing_extensions.Self"} and self_class
                    else t
                    for t in types
                )
        return frozenset()


def _walrus(expr: ir.Expr | None):
    return (node for node in ir.walk(expr) if isinstance(node, ir.NamedExpr))


def _parse_dotted(text: str) -> ir.Expr:
    parts = text.split(".")
    expr: ir.Expr = ir.Name(parts[0])
    for part in parts[1:]:
        expr = ir.Attr(expr, part)
    return expr


def _local_values(function: FunctionSummary) -> dict[str, list[ir.Expr]]:
    values: dict[str, list[ir.Expr]] = {}

    def visit(stmts: tuple[ir.Stmt, ...]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ir.Assign) and stmt.aug_op is None:
                for target in stmt.targets:
                    if isinstance(target, ir.Name):
                        value = stmt.value if stmt.value is not None else stmt.annotation
                        if value is not None:
                            values.setdefault(target.id, []).append(value)
                    elif (
                        isinstance(target, ir.Seq)
                        and isinstance(stmt.value, ir.Seq)
                        and len(target.elts) == len(stmt.value.elts)
                    ):
                        # `a, b = x, y`: each name gets its own value.
                        for name, value in zip(target.elts, stmt.value.elts, strict=True):
                            if isinstance(name, ir.Name):
                                values.setdefault(name.id, []).append(value)
            if isinstance(stmt, ir.Assign | ir.Eval):
                value = stmt.value
                for node in _walrus(value):
                    values.setdefault(node.target, []).append(node.value)
            if isinstance(stmt, ir.If):
                for node in _walrus(stmt.test):
                    values.setdefault(node.target, []).append(node.value)
            if isinstance(stmt, ir.With):
                # `with C(...) as x`: x is what __enter__ returns, the object
                # itself for the usual `return self`.
                for item in stmt.items:
                    if isinstance(item.target, ir.Name):
                        values.setdefault(item.target.id, []).append(item.context)
            if isinstance(stmt, ir.Loop) and isinstance(stmt.target, ir.Name) and stmt.iter:
                # `for x in xs`: x is an element of xs.
                element = ir.Subscript(stmt.iter, ir.Const(None), False)
                values.setdefault(stmt.target.id, []).append(element)
            for child in ir.child_blocks(stmt):
                visit(child)

    visit(function.body)
    return values
