"""The small structured IR a function body is summarised into.

Summaries never hold parser nodes: every expression and statement here is an
immutable tuple of plain values (its kind's tag, then its fields), so a
summary is cached as JSON as it stands and compares for equality. Only what
the analysis reads is kept; everything else collapses into `Opaque`, which
still carries the sub-expressions (calls inside an f-string or a lambda
argument still happen, in order).
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any, ClassVar, dataclass_transform

try:  # the C field getter namedtuple uses; a property where it is missing
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - CPython has it

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)


class _Kind(type):
    """Every node class holds no `__dict__`: its fields are the tuple's items."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _Kind:
        namespace.setdefault("__slots__", ())
        return super().__new__(mcs, name, bases, namespace)


@dataclass_transform(frozen_default=True)
class Node(tuple, metaclass=_Kind):
    """Base of every IR node: a tuple of its kind's tag and its fields, in the
    order the class declares them (a base's first). A cold run builds millions
    and writes every one to the cache: as tuples they build three times as
    fast as frozen dataclasses, take half the memory, and `json` writes them
    as arrays in C, with no call back per node. `_register` gives each kind
    its tag, its constructor and its field getters."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickle: `cls(*fields)`
        return self[1:]

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self[1:], strict=True)
        )
        return f"{type(self).__name__}({shown})"


# --------------------------------------------------------------------------
# Expressions


class Expr(Node):
    pass


class Name(Expr):
    id: str


class Attr(Expr):
    base: Expr
    attr: str


class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    line: int
    col: int
    end_line: int


class Subscript(Expr):
    base: Expr
    index: Expr
    # A view: a slice among slices, ints, None and `...` (`x[:n]`, `x[:, 0]`); a
    # slice beside a tensor index (`x[idx, :n]`) gathers into a copy, so it is not.
    is_slice: bool


class Const(Expr):
    value: str | int | float | bool | None


class BoolOp(Expr):
    op: str  # "and" | "or"
    values: tuple[Expr, ...]


class Not(Expr):
    operand: Expr


class Compare(Expr):
    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]


class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


class Seq(Expr):
    """A list, tuple or set display."""

    elts: tuple[Expr, ...]


class Comp(Expr):
    """A comprehension: `elt` built once per item of `iters` (a dict comprehension:
    `elt` is its value, and its key rides along in `iters`)."""

    elt: Expr
    iters: tuple[Expr, ...]


class NamedExpr(Expr):
    target: str
    value: Expr


class Yield(Expr):
    value: Expr | None


class Opaque(Expr):
    """An expression syncscan does not model; its parts are still evaluated."""

    parts: tuple[Expr, ...]


# --------------------------------------------------------------------------
# Statements


class Stmt(Node):
    line: int
    col: int


class Assign(Stmt):
    """`targets = value`, `target: annotation = value` or `target op= value`."""

    targets: tuple[Expr, ...]
    value: Expr | None
    annotation: Expr | None = None
    aug_op: str | None = None


class Eval(Stmt):
    value: Expr


class If(Stmt):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


class Loop(Stmt):
    target: Expr | None
    iter: Expr | None
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


class WithItem(Node):
    context: Expr
    target: Expr | None


class With(Stmt):
    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]


class Try(Stmt):
    body: tuple[Stmt, ...]
    handlers: tuple[tuple[Stmt, ...], ...]
    orelse: tuple[Stmt, ...]
    finalbody: tuple[Stmt, ...]


class Return(Stmt):
    value: Expr | None


class Raise(Stmt):
    value: Expr | None


# --------------------------------------------------------------------------
# Kinds and serialisation: a node is JSON as it stands, an array of its tag
# and its fields; a tuple of nodes is an array that never starts with an
# integer (IR tuples hold nodes, names and pairs, never bare numbers).

_KINDS: list[type[Node]] = []
# The fields of each kind that may hold expressions (not names, operators, positions).
_EXPR_FIELDS: dict[type[Node], tuple[str, ...]] = {}
_MISSING = object()


def _declared(cls: type[Node]) -> dict[str, str]:
    """The fields `cls` and its bases declare (name: annotation), bases' first."""
    found: dict[str, str] = {}
    for kind in reversed(cls.__mro__):
        for name, annotation in vars(kind).get("__annotations__", {}).items():
            if not name.startswith("_"):
                found[name] = str(annotation)
    return found


def _constructor(cls: type[Node], tag: int, names: tuple[str, ...]) -> Any:
    """`cls(*fields)`: the tuple of its tag and fields, made by a function
    written for its fields (as namedtuple does): a generic one taking
    `*args, **kwargs` would cost a cold run's builder a third more."""
    defaults = [vars(cls).get(name, _MISSING) for name in names]
    trailing = tuple(d for d in defaults if d is not _MISSING)
    if any(d is _MISSING for d in defaults[len(defaults) - len(trailing) :]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with")
    fields = ", ".join(names)
    namespace = {"_new": tuple.__new__, "_tag": tag}
    exec(f"def __new__(_cls, {fields}):\n    return _new(_cls, (_tag, {fields}))", namespace)  # noqa: S102 - our own field names
    made = namespace["__new__"]
    made.__defaults__ = trailing or None
    made.__qualname__ = f"{cls.__name__}.__new__"
    return made


def _register(*classes: type[Node]) -> None:
    for cls in classes:
        tag, declared = len(_KINDS), _declared(cls)
        names = tuple(declared)
        constructor = _constructor(cls, tag, names)
        for index, name in enumerate(names, start=1):
            setattr(cls, name, _tuplegetter(index, name))
        cls.__new__ = constructor  # type: ignore[method-assign]
        cls._fields = names
        _KINDS.append(cls)
        _EXPR_FIELDS[cls] = tuple(n for n in names if "Expr" in declared[n])


# The order is the serialised tag of each kind: append new kinds at the end
# and bump the cache's SUMMARY_FORMAT when it changes.
_register(
    Name, Attr, Call, Subscript, Const, BoolOp, Not, Compare, BinOp, IfExp, Seq,
    Comp, NamedExpr, Yield, Opaque, Assign, Eval, If, Loop, WithItem, With, Try,
    Return, Raise,
)  # fmt: skip


def from_data(data: Any) -> Any:
    """The IR a summary's JSON holds: its lists come back as tuples, those
    opening with a tag as nodes of that kind (a damaged entry raises, and is
    rebuilt: an unknown tag, or the wrong number of fields)."""
    if type(data) is not list:
        return data
    if data and type(data[0]) is int:
        if data[0] < 0:
            raise IndexError(f"unknown IR tag {data[0]}")  # not Python's index from the end
        cls = _KINDS[data[0]]
        if len(data) != len(cls._fields) + 1:
            raise ValueError(f"{cls.__name__} takes {len(cls._fields)} fields, not {len(data) - 1}")
        return tuple.__new__(cls, [from_data(v) if type(v) is list else v for v in data])
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
