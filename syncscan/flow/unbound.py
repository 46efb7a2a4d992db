"""If/elif chains whose missing `else` raises: the path falling through them is
not a path the program completes.

    if spec.method == "ngram":
        ids = ...
    elif spec.use_eagle():
        ids = ...
    return ids          # no branch taken: UnboundLocalError

Every branch binds `ids`, nothing else in the function does, and the statement
right after the chain reads it, so falling through raises. The walker drops
that path (an exception is not a completion of the step), as it drops a path
through `raise`. Chains inside a loop (an earlier iteration may have bound the
name) or a `try` (a handler may catch the error) are left alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from syncscan.index import ir
from syncscan.index.summary import FunctionSummary


def raising_fallthroughs(function: FunctionSummary) -> frozenset[int]:
    """The `id` of the last `if` of each chain in `function` whose fall-through raises."""
    params = {p.name for p in function.params}
    bound: Counter[str] | None = None  # counted at the first candidate: most functions have none
    found: set[int] = set()
    for block in _straight_blocks(function.body):
        for index, stmt in enumerate(block[:-1]):
            if not isinstance(stmt, ir.If):
                continue
            chain = _chain(stmt)
            if chain[-1].orelse:
                continue  # an `else` or a non-`if` statement ends it: no fall-through
            candidates = (_bound_in_every_branch(chain) & _names_read(block[index + 1])) - params
            if not candidates:
                continue
            inside = sum((_bindings(c.body) for c in chain), Counter())
            if bound is None:
                bound = _bindings(function.body)
            if any(bound[name] == inside[name] for name in candidates):
                found.add(id(chain[-1]))
    return frozenset(found)


def _chain(stmt: ir.If) -> list[ir.If]:
    """`if`, then each `elif` (an `else` holding a single `if`)."""
    chain = [stmt]
    while len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ir.If):
        chain.append(chain[-1].orelse[0])
    return chain


def _bound_in_every_branch(chain: list[ir.If]) -> set[str]:
    """Names every branch's own statements bind (not only in a nested block)."""
    sets = [
        {
            name
            for s in c.body
            if isinstance(s, ir.Assign) and s.aug_op is None
            for t in s.targets
            for name in _target_names(t)
        }
        for c in chain
    ]
    return set.intersection(*sets)


def _straight_blocks(stmts: tuple[ir.Stmt, ...]) -> Iterator[tuple[ir.Stmt, ...]]:
    """`stmts` and the blocks nested in it through `if` and `with` only."""
    yield stmts
    for stmt in stmts:
        if isinstance(stmt, ir.If):
            yield from _straight_blocks(stmt.body)
            yield from _straight_blocks(stmt.orelse)
        elif isinstance(stmt, ir.With):
            yield from _straight_blocks(stmt.body)


def _bindings(stmts: tuple[ir.Stmt, ...]) -> Counter[str]:
    """How many times each local name is bound in `stmts`, at any depth."""
    counts: Counter[str] = Counter()
    for stmt in stmts:
        targets: list[ir.Expr] = []
        if isinstance(stmt, ir.Assign):
            targets.extend(stmt.targets)
        elif isinstance(stmt, ir.Loop) and stmt.target is not None:
            targets.append(stmt.target)
        elif isinstance(stmt, ir.With):
            targets.extend(i.target for i in stmt.items if i.target is not None)
        for target in targets:
            counts.update(_target_names(target))
        counts.update(_walrus_targets(stmt))
        for block in ir.child_blocks(stmt):
            counts.update(_bindings(block))
    return counts


def _target_names(target: ir.Expr) -> Iterator[str]:
    if isinstance(target, ir.Name):
        yield target.id
    elif isinstance(target, ir.Seq):
        for elt in target.elts:
            yield from _target_names(elt)


def _walrus_targets(stmt: ir.Stmt) -> Iterator[str]:
    for expr in _own_exprs(stmt):
        yield from (n.target for n in ir.walk(expr) if isinstance(n, ir.NamedExpr))


def _names_read(stmt: ir.Stmt) -> set[str]:
    """Local names a simple statement reads (a compound one reads only its header)."""
    return {n.id for e in _own_exprs(stmt) for n in ir.walk(e) if isinstance(n, ir.Name)}


def _own_exprs(stmt: ir.Stmt) -> list[ir.Expr]:
    """The expressions a statement evaluates itself (not those of nested blocks)."""
    if isinstance(stmt, ir.Assign):
        return [e for e in (stmt.value,) if e is not None]
    if isinstance(stmt, ir.Eval):
        return [stmt.value]
    if isinstance(stmt, ir.Return | ir.Raise):
        return [stmt.value] if stmt.value is not None else []
    if isinstance(stmt, ir.If):
        return [stmt.test]
    if isinstance(stmt, ir.Loop):
        return [stmt.iter] if stmt.iter is not None else []
    if isinstance(stmt, ir.With):
        return [i.context for i in stmt.items]
    return []
