"""The small structured IR a function body is summarised into.

Summaries never hold libcst nodes: every expression and statement here is a
frozen dataclass of plain values, so a summary can be cached as JSON and
compared for equality. Only what the analysis reads is kept; everything else
collapses into `Opaque`, which still carries the sub-expressions (calls inside
an f-string or a lambda argument still happen, in order).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class Node:
    """Base of every IR node; `kind` tags it for (de)serialisation."""

    kind: ClassVar[str] = "node"


# --------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Name(Expr):
    kind: ClassVar[str] = "name"
    id: str


@dataclass(frozen=True)
class Attr(Expr):
    kind: ClassVar[str] = "attr"
    base: Expr
    attr: str


@dataclass(frozen=True)
class Call(Expr):
    kind: ClassVar[str] = "call"
    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    line: int
    col: int
    end_line: int


@dataclass(frozen=True)
class Subscript(Expr):
    kind: ClassVar[str] = "subscript"
    base: Expr
    index: Expr
    is_slice: bool


@dataclass(frozen=True)
class Const(Expr):
    kind: ClassVar[str] = "const"
    value: str | int | float | bool | None


@dataclass(frozen=True)
class BoolOp(Expr):
    kind: ClassVar[str] = "boolop"
    op: str  # "and" | "or"
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Not(Expr):
    kind: ClassVar[str] = "not"
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    kind: ClassVar[str] = "compare"
    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]


@dataclass(frozen=True)
class BinOp(Expr):
    kind: ClassVar[str] = "binop"
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IfExp(Expr):
    kind: ClassVar[str] = "ifexp"
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Seq(Expr):
    """A list, tuple or set display."""

    kind: ClassVar[str] = "seq"
    elts: tuple[Expr, ...]


@dataclass(frozen=True)
class Comp(Expr):
    """A comprehension: `elt` built once per item of `iters`."""

    kind: ClassVar[str] = "comp"
    elt: Expr
    iters: tuple[Expr, ...]


@dataclass(frozen=True)
class NamedExpr(Expr):
    kind: ClassVar[str] = "walrus"
    target: str
    value: Expr


@dataclass(frozen=True)
class Yield(Expr):
    kind: ClassVar[str] = "yield"
    value: Expr | None


@dataclass(frozen=True)
class Opaque(Expr):
    """An expression syncscan does not model; its parts are still evaluated."""

    kind: ClassVar[str] = "opaque"
    parts: tuple[Expr, ...]


# --------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Stmt(Node):
    line: int
    col: int


@dataclass(frozen=True)
class Assign(Stmt):
    """`targets = value`, `target: annotation = value` or `target op= value`."""

    kind: ClassVar[str] = "assign"
    targets: tuple[Expr, ...]
    value: Expr | None
    annotation: Expr | None = None
    aug_op: str | None = None


@dataclass(frozen=True)
class Eval(Stmt):
    kind: ClassVar[str] = "eval"
    value: Expr


@dataclass(frozen=True)
class If(Stmt):
    kind: ClassVar[str] = "if"
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class Loop(Stmt):
    kind: ClassVar[str] = "loop"
    target: Expr | None
    iter: Expr | None
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class WithItem(Node):
    kind: ClassVar[str] = "withitem"
    context: Expr
    target: Expr | None


@dataclass(frozen=True)
class With(Stmt):
    kind: ClassVar[str] = "with"
    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Try(Stmt):
    kind: ClassVar[str] = "try"
    body: tuple[Stmt, ...]
    handlers: tuple[tuple[Stmt, ...], ...]
    orelse: tuple[Stmt, ...]
    finalbody: tuple[Stmt, ...]


@dataclass(frozen=True)
class Return(Stmt):
    kind: ClassVar[str] = "return"
    value: Expr | None


@dataclass(frozen=True)
class Raise(Stmt):
    kind: ClassVar[str] = "raise"
    value: Expr | None


# --------------------------------------------------------------------------
# Serialisation: tagged dicts, data only.

_KINDS: dict[str, type[Node]] = {}


def _register(*classes: type[Node]) -> None:
    for cls in classes:
        _KINDS[cls.kind] = cls


_register(
    Name, Attr, Call, Subscript, Const, BoolOp, Not, Compare, BinOp, IfExp, Seq,
    Comp, NamedExpr, Yield, Opaque, Assign, Eval, If, Loop, WithItem, With, Try,
    Return, Raise,
)  # fmt: skip


def to_data(value: Any) -> Any:
    """Node trees -> JSON-compatible values (lists, dicts, scalars)."""
    if isinstance(value, Node):
        data: dict[str, Any] = {"k": value.kind}
        for f in fields(value):
            data[f.name] = to_data(getattr(value, f.name))
        return data
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    return value


_FIELD_NAMES: dict[str, tuple[str, ...]] = {}


def from_data(data: Any) -> Any:
    """Inverse of `to_data`; lists come back as tuples."""
    if isinstance(data, dict):
        kind = data["k"]
        names = _FIELD_NAMES.get(kind)
        if names is None:
            names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(_KINDS[kind]))
        return _KINDS[kind](*[from_data(data[name]) for name in names])
    if isinstance(data, list):
        return tuple([from_data(v) for v in data])
    return data


def dotted(expr: Expr | None) -> str | None:
    """`a.b.c` for a Name/Attr chain, else None."""
    parts: list[str] = []
    while isinstance(expr, Attr):
        parts.append(expr.attr)
        expr = expr.base
    if isinstance(expr, Name):
        parts.append(expr.id)
        return ".".join(reversed(parts))
    return None


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def iter_calls(expr: Expr | None):
    """Every Call inside `expr`, innermost-first in evaluation order."""
    if expr is None:
        return
    if isinstance(expr, Call):
        yield from iter_calls(expr.func)
        for arg in expr.args:
            yield from iter_calls(arg)
        for _, arg in expr.kwargs:
            yield from iter_calls(arg)
        yield expr
        return
    names = _CHILD_FIELDS.get(type(expr))
    if names is None:
        names = _CHILD_FIELDS[type(expr)] = tuple(f.name for f in fields(expr))
    for name in names:
        child = getattr(expr, name)
        if isinstance(child, Expr):
            yield from iter_calls(child)
        elif isinstance(child, tuple):
            for item in child:
                if isinstance(item, Expr):
                    yield from iter_calls(item)
                elif isinstance(item, tuple):
                    for sub in item:
                        if isinstance(sub, Expr):
                            yield from iter_calls(sub)


def child_blocks(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement blocks of a compound statement."""
    if isinstance(stmt, If | Loop):
        return (stmt.body, stmt.orelse)
    if isinstance(stmt, With):
        return (stmt.body,)
    if isinstance(stmt, Try):
        return (stmt.body, *stmt.handlers, stmt.orelse, stmt.finalbody)
    return ()
