"""The small structured IR a function body is summarised into.

Summaries never hold parser nodes: every expression and statement here is a
frozen dataclass of plain values, so a summary can be cached as JSON and
compared for equality. Only what the analysis reads is kept; everything else
collapses into `Opaque`, which still carries the sub-expressions (calls inside
an f-string or a lambda argument still happen, in order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any


@dataclass(frozen=True)
class Node:
    """Base of every IR node; `_register` gives each kind its serialised tag."""


# --------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class Attr(Expr):
    base: Expr
    attr: str


@dataclass(frozen=True)
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    line: int
    col: int
    end_line: int


@dataclass(frozen=True)
class Subscript(Expr):
    base: Expr
    index: Expr
    # A view: a slice among slices, ints, None and `...` (`x[:n]`, `x[:, 0]`); a
    # slice beside a tensor index (`x[idx, :n]`) gathers into a copy, so it is not.
    is_slice: bool


@dataclass(frozen=True)
class Const(Expr):
    value: str | int | float | bool | None


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and" | "or"
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Not(Expr):
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Seq(Expr):
    """A list, tuple or set display."""

    elts: tuple[Expr, ...]


@dataclass(frozen=True)
class Comp(Expr):
    """A comprehension: `elt` built once per item of `iters` (a dict comprehension:
    `elt` is its value, and its key rides along in `iters`)."""

    elt: Expr
    iters: tuple[Expr, ...]


@dataclass(frozen=True)
class NamedExpr(Expr):
    target: str
    value: Expr


@dataclass(frozen=True)
class Yield(Expr):
    value: Expr | None


@dataclass(frozen=True)
class Opaque(Expr):
    """An expression syncscan does not model; its parts are still evaluated."""

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

    targets: tuple[Expr, ...]
    value: Expr | None
    annotation: Expr | None = None
    aug_op: str | None = None


@dataclass(frozen=True)
class Eval(Stmt):
    value: Expr


@dataclass(frozen=True)
class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class Loop(Stmt):
    target: Expr | None
    iter: Expr | None
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class WithItem(Node):
    context: Expr
    target: Expr | None


@dataclass(frozen=True)
class With(Stmt):
    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Try(Stmt):
    body: tuple[Stmt, ...]
    handlers: tuple[tuple[Stmt, ...], ...]
    orelse: tuple[Stmt, ...]
    finalbody: tuple[Stmt, ...]


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | None


@dataclass(frozen=True)
class Raise(Stmt):
    value: Expr | None


# --------------------------------------------------------------------------
# Serialisation: tagged dicts, data only.

_KINDS: list[type[Node]] = []
_FIELD_NAMES: dict[type[Node], tuple[str, ...]] = {}
# The fields of each kind that may hold expressions (not names, operators, positions).
_EXPR_FIELDS: dict[type[Node], tuple[str, ...]] = {}


def _register(*classes: type[Node]) -> None:
    for cls in classes:
        _KINDS.append(cls)
        _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
        _EXPR_FIELDS[cls] = tuple(f.name for f in fields(cls) if "Expr" in str(f.type))


# The order is the serialised tag of each kind: append new kinds at the end
# and bump the cache's SUMMARY_FORMAT when it changes.
_register(
    Name, Attr, Call, Subscript, Const, BoolOp, Not, Compare, BinOp, IfExp, Seq,
    Comp, NamedExpr, Yield, Opaque, Assign, Eval, If, Loop, WithItem, With, Try,
    Return, Raise,
)  # fmt: skip
_TAGS: dict[type[Node], int] = {cls: tag for tag, cls in enumerate(_KINDS)}


def _encoder(cls: type[Node]) -> Callable[[Node], list[Any]]:
    """One kind's `node_json`: its tag, then its fields, read in C (a cold run
    writes every summary it makes, node by node)."""
    tag, names = _TAGS[cls], _FIELD_NAMES[cls]
    if len(names) == 1:
        field = attrgetter(names[0])
        return lambda node: [tag, field(node)]
    values = attrgetter(*names)
    return lambda node: [tag, *values(node)]


_ENCODERS: dict[type[Node], Callable[[Node], list[Any]]] = {cls: _encoder(cls) for cls in _KINDS}


def to_data(value: Any) -> Any:
    """Node trees -> compact JSON-compatible values.

    A node is a list whose first item is its integer tag, then its fields in
    order; a tuple is a list that never starts with an integer (IR tuples hold
    nodes, names and pairs, never bare numbers). Positional lists keep cache
    entries small and fast to decode, which is most of a warm run's loading.
    """
    if isinstance(value, Node):
        cls = type(value)
        return [_TAGS[cls], *[to_data(getattr(value, name)) for name in _FIELD_NAMES[cls]]]
    if isinstance(value, tuple | list):
        return [to_data(v) for v in value]
    return value


def leave_nodes(value: Any) -> Any:
    """For `summary_to_data`: keep nodes (and tuples of them) for `node_json`."""
    return value


def node_json(value: Any) -> list[Any]:
    """`json.dumps` default: one node as `to_data` writes it; json encodes the rest."""
    encode = _ENCODERS.get(type(value))
    if encode is None:
        raise TypeError(f"not JSON serialisable: {type(value).__name__}")
    return encode(value)


def from_data(data: Any) -> Any:
    """Inverse of `to_data`; lists come back as tuples."""
    if type(data) is not list:
        return data
    if data and type(data[0]) is int:
        if data[0] < 0:
            raise IndexError(f"unknown IR tag {data[0]}")  # not Python's index from the end
        cls = _KINDS[data[0]]
        node = object.__new__(cls)
        # Frozen dataclasses refuse setattr; filling __dict__ directly builds
        # the same object several times faster than calling __init__; a damaged
        # entry with the wrong number of fields raises ValueError (rebuilt).
        values = [from_data(v) if type(v) is list else v for v in data[1:]]
        node.__dict__.update(zip(_FIELD_NAMES[cls], values, strict=True))
        return node
    return tuple([from_data(v) if type(v) is list else v for v in data])


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


def none_test(expr: Expr) -> tuple[Expr, bool] | None:
    """(`x`, whether the test holds when `x` is set) for `x is None` / `x is not None`."""
    if (
        isinstance(expr, Compare)
        and len(expr.ops) == 1
        and expr.ops[0] in ("is", "is not")
        and isinstance(expr.comparators[0], Const)
        and expr.comparators[0].value is None
    ):
        return expr.left, expr.ops[0] == "is not"
    return None


def self_attr(expr: Expr) -> str | None:
    """The attribute name of `self.<attr>`, else None."""
    if isinstance(expr, Attr) and isinstance(expr.base, Name) and expr.base.id == "self":
        return expr.attr
    return None


def walk(expr: Expr | None) -> Iterator[Expr]:
    """`expr` and every expression inside it (pairs included), outermost first."""
    if expr is None:
        return
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(tuple(children(node))))


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
    for child in children(expr):
        yield from iter_calls(child)


def children(expr: Expr):
    """The expressions directly inside `expr`, in field order (pairs included)."""
    for name in _EXPR_FIELDS[type(expr)]:
        child = getattr(expr, name)
        if isinstance(child, Expr):
            yield child
        elif isinstance(child, tuple):
            for item in child:
                if isinstance(item, Expr):
                    yield item
                elif isinstance(item, tuple):
                    yield from (sub for sub in item if isinstance(sub, Expr))


def statement_exprs(stmt: Stmt) -> list[Expr]:
    """The expressions a statement holds itself, targets included (not those of
    its nested blocks, nor an annotation)."""
    if isinstance(stmt, Assign):
        return [e for e in (stmt.value, *stmt.targets) if e is not None]
    if isinstance(stmt, Eval):
        return [stmt.value]
    if isinstance(stmt, If):
        return [stmt.test]
    if isinstance(stmt, Loop):
        return [e for e in (stmt.iter, stmt.target) if e is not None]
    if isinstance(stmt, With):
        return [e for item in stmt.items for e in (item.context, item.target) if e is not None]
    if isinstance(stmt, Return | Raise):
        return [stmt.value] if stmt.value is not None else []
    return []


def child_blocks(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement blocks of a compound statement."""
    if isinstance(stmt, If | Loop):
        return (stmt.body, stmt.orelse)
    if isinstance(stmt, With):
        return (stmt.body,)
    if isinstance(stmt, Try):
        return (stmt.body, *stmt.handlers, stmt.orelse, stmt.finalbody)
    return ()


def self_assignments(stmts: tuple[Stmt, ...]) -> Iterator[tuple[str, Expr | None, Expr | None]]:
    """(attr, value, annotation) for every `self.attr = value` / `self.attr: T`
    in a block and the blocks nested in it."""
    for stmt in stmts:
        if isinstance(stmt, Assign) and stmt.aug_op is None:
            for target in stmt.targets:
                attr = self_attr(target)
                if attr is not None:
                    yield attr, stmt.value, stmt.annotation
        for child in child_blocks(stmt):
            yield from self_assignments(child)


def self_attribute_names(stmts: tuple[Stmt, ...]) -> tuple[str, ...] | None:
    """The names read or written as `self.<name>` in a block and the blocks
    nested in it (sorted), or None where `self` itself is passed on (to a
    call, a store, a return): then any attribute may be read."""
    # Every function of every summarised module is scanned when its summary is
    # cached (a cold run): one stack, no generator per node as `walk` has.
    names: set[str] = set()
    stack = [e for stmt in iter_statements(stmts) for e in statement_exprs(stmt)]
    while stack:
        node = stack.pop()
        if isinstance(node, Attr) and isinstance(node.base, Name) and node.base.id == "self":
            names.add(node.attr)
        elif isinstance(node, Name) and node.id == "self":
            return None  # `self` itself, not an attribute of it
        else:
            stack.extend(children(node))
    return tuple(sorted(names))


def iter_statements(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of a block and of the blocks nested in it, in source order
    (not those of nested function definitions, which are not in the block)."""
    for stmt in stmts:
        yield stmt
        for block in child_blocks(stmt):
            yield from iter_statements(block)
