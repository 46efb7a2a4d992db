"""The step-path call graph: every function a root may reach, with call sites.

Nodes are `(function qualname, self class)` contexts rendered as strings; edges
keep the call-site file, line and column (PyCG drops them; a witness needs
them). The crawl also records which instance attributes the reachable code
assigns: an attribute never assigned on the step path is instance-constant,
which is what makes it a mode predicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from syncscan.index import ir, reads
from syncscan.index.summary import FunctionSummary, functions_named
from syncscan.resolve.calls import CallResolver, CallSite
from syncscan.resolve.program import Program
from syncscan.resolve.stored_crawl import StoredCrawl
from syncscan.resolve.types import Scope

_MAX_NODES = 20000


@dataclass
class Digraph:
    """A directed multigraph of named nodes with attributes, as the crawl
    builds it: nodes and edges in the order they were added. Plain, not
    networkx: a run whose call graph is rebuilt from kept visits would spend
    a third of its crawl importing it."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _after: dict[str, list[str]] = field(default_factory=dict)

    def add_node(self, name: str, **attrs: Any) -> None:
        self.nodes.setdefault(name, {}).update(attrs)

    def add_edge(self, source: str, target: str, **data: Any) -> None:
        self.nodes.setdefault(source, {})
        self.nodes.setdefault(target, {})
        self.edges.append((source, target, data))
        self._after.setdefault(source, []).append(target)

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def descendants(self, name: str) -> set[str]:
        """The other nodes reachable from `name` (itself left out, on a cycle too)."""
        found: set[str] = set()
        frontier = list(self._after.get(name, ()))
        while frontier:
            node = frontier.pop()
            if node not in found:
                found.add(node)
                frontier.extend(self._after.get(node, ()))
        found.discard(name)
        return found


@dataclass
class CallGraph:
    graph: Digraph = field(default_factory=Digraph)
    resolved_calls: int = 0
    unresolved_calls: int = 0
    # (path, line, caller, call) of calls on project objects the resolver could
    # not follow: each may hide a wait, a pinned write or a launch.
    unresolved_sites: list[tuple[str, int, str, str]] = field(default_factory=list)
    assigned_attrs: set[tuple[str, str]] = field(default_factory=set)
    # Attribute names the step assigns through `self` (`self.a.flag = ...`) and
    # tests against None where it waits: per-step flags, whose value one step
    # leaves to the next and which decide whether the next one waits.
    chain_assigned: set[str] = field(default_factory=set)
    none_tested: set[str] = field(default_factory=set)
    incomplete: bool = False

    @property
    def step_flags(self) -> frozenset[str]:
        return frozenset(self.chain_assigned & self.none_tested)

    def node_count(self) -> int:
        return len(self.graph.nodes)

    def reach(self, function: FunctionSummary, self_class: str | None) -> int:
        """Functions a call of `function` may reach, itself included (the size
        of its walk, roughly)."""
        node = context_name(function, self_class)
        if node not in self.graph:
            return 1
        return 1 + len(self.graph.descendants(node))


def context_key(qualname: str, self_class: str | None) -> str:
    """A function with the class its `self` is bound to, as kept visits and
    walks name it: unlike `context_name`, never the same for two contexts."""
    return f"{qualname}|{self_class or ''}"


def context_name(function: FunctionSummary, self_class: str | None) -> str:
    if self_class and not function.qualname.startswith(self_class + "."):
        return f"{function.qualname}@{self_class}"
    return function.qualname


Frontier = list[tuple[str, str | None, FunctionSummary | None]]


class _Unsure(Exception):
    """A kept visit names a callee the summaries do not single out, or is
    damaged: the crawl starts again without kept visits."""


def crawl(
    program: Program,
    resolver: CallResolver,
    roots: list[tuple[FunctionSummary, str | None]],
    wait_methods: frozenset[str] = frozenset(),
    store: StoredCrawl | None = None,
) -> CallGraph:
    """Breadth-first over the resolved calls from `roots`. A None test counts
    toward the step's flags only where it decides whether the host waits
    (`wait_methods`). With `store`, a visit an earlier run kept whose items
    are unchanged is taken, and each visit made is kept (stored_crawl.py)."""
    if store is not None:
        try:
            return _crawl(program, resolver, roots, wait_methods, store)
        except _Unsure:
            store.forget()
    return _crawl(program, resolver, roots, wait_methods, store)


def _crawl(
    program: Program,
    resolver: CallResolver,
    roots: list[tuple[FunctionSummary, str | None]],
    wait_methods: frozenset[str],
    store: StoredCrawl | None,
) -> CallGraph:
    graph = CallGraph()
    seen: set[tuple[str, str | None]] = set()
    frontier: Frontier = [(f.qualname, self_class, f) for f, self_class in roots]
    while frontier:
        qualname, self_class, function = frontier.pop(0)
        key = (qualname, self_class)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _MAX_NODES:
            graph.incomplete = True
            break
        name = context_key(qualname, self_class)
        kept = store.take(name) if store is not None else None
        functions: list[FunctionSummary] | None = None  # the callees', where visited here
        if kept is not None:
            (visit,) = kept
            if visit is not None and not _sound(visit):
                raise _Unsure(name)
        else:
            if function is None:
                function = _function_named(program, qualname)
            outer = reads.push()
            try:
                visit, functions = _visit(program, resolver, function, self_class, wait_methods)
            finally:
                items = reads.pop(outer)
            if store is not None:
                store.keep(name, items, visit)
        if visit is not None:
            frontier.extend(_apply(graph, visit, self_class, functions))
    if store is not None:
        # What the visits taken read, as reading it would have: the run's
        # inputs and items are a fresh crawl's.
        try:
            taken = store.taken_items()
        except ValueError as damaged:
            raise _Unsure("a kept visit's items") from damaged
        program.adopt_read(taken)
    return graph


def _sound(visit: list[Any]) -> bool:
    """A kept visit with the shape `_visit` gives it (the cache may be damaged).
    Types are compared as tuples built in C: an edit replays thousands of visits."""
    if type(visit) is not list or len(visit) != 10:
        return False
    if not all(type(visit[i]) is list for i in (2, 3, 4, 7, 8)):
        return False
    names = [visit[0], visit[9], *visit[2], *visit[3], *visit[4]]
    return (
        set(map(type, names)) == _STR
        and (type(visit[1]), type(visit[5]), type(visit[6])) == _THREE_INTS
        and all(type(row) is list and tuple(map(type, row)) == _OPAQUE for row in visit[7])
        and all(type(row) is list and tuple(map(type, row)) in _CALLEE for row in visit[8])
    )


# The types of a kept visit's fields, as JSON gives them back (`_sound`).
_STR = {str}
_THREE_INTS = (int, int, int)
_OPAQUE = (int, str)  # line, call text
_CALLEE = {(str, int, int, str, str, bound) for bound in (str, type(None))}


def _function_named(program: Program, qualname: str) -> FunctionSummary:
    """The function a kept visit resolved a call to, where its own visit is
    made again: the one of its module with that qualname (read by that visit)."""
    module_name = program.module_name_of(qualname)
    with reads.paused():
        module = program.summary(module_name) if module_name is not None else None
        found = functions_named(module, qualname) if module is not None else []
    if len(found) != 1:
        raise _Unsure(qualname)
    return found[0]


def _visit(
    program: Program,
    resolver: CallResolver,
    function: FunctionSummary,
    self_class: str | None,
    wait_methods: frozenset[str],
) -> tuple[list[Any] | None, list[FunctionSummary]]:
    """What the crawl learns at `function` (bound to `self_class`), as plain
    data (`_apply` reads it; None where its module has no summary), and the
    functions its calls reach."""
    module = program.module_of(function.qualname)
    if module is None:
        return None, []
    scope = Scope(module, function, self_class)
    caller = context_name(function, self_class)
    assigned = [attr for attr, _, _ in function.self_assignments] if self_class else []
    resolved = unresolved = 0
    opaque: list[list[Any]] = []
    callees: list[list[Any]] = []
    functions: list[FunctionSummary] = []
    for call in _calls_in(function.body):
        site = resolver.resolve(call, scope)
        if site.resolved:
            resolved += 1
        else:
            unresolved += 1
            text = _opaque_method_call(call, site)
            if text is not None:
                opaque.append([call.line, text])
        for callee in site.callees:
            reached, bound = callee.function, callee.self_class
            target = context_name(reached, bound)
            callees.append([target, call.line, call.col, callee.via, reached.qualname, bound])
            functions.append(reached)
    data = [
        module.path,
        function.line,
        assigned,
        list(_chain_assigned(function.body)),
        list(_none_tested(function.body, wait_methods)),
        resolved,
        unresolved,
        opaque,
        callees,
        caller,
    ]
    return data, functions


def _apply(
    graph: CallGraph,
    visit: list[Any],
    self_class: str | None,
    functions: list[FunctionSummary] | None,
) -> Frontier:
    """Add a visit to the graph, as the crawl learnt it; the callees it reached
    (with their `functions` where it was made here, else found when needed)."""
    path, line, assigned, chain, tested, resolved, unresolved, opaque, callees, caller = visit
    graph.graph.add_node(caller, path=path, line=line)
    graph.assigned_attrs.update((self_class, attr) for attr in assigned)
    graph.chain_assigned.update(chain)
    graph.none_tested.update(tested)
    graph.resolved_calls += resolved
    graph.unresolved_calls += unresolved
    graph.unresolved_sites.extend((path, at, caller, text) for at, text in opaque)
    reached: Frontier = []
    for index, (target, at, col, via, qualname, bound) in enumerate(callees):
        graph.graph.add_edge(caller, target, path=path, line=at, col=col, via=via)
        reached.append((qualname, bound, functions[index] if functions is not None else None))
    return reached


def _opaque_method_call(call: ir.Call, site: CallSite) -> str | None:
    """`x.method(...)` whose receiver has no type the resolver knows: the calls a
    reader of the audit should check (a plain name, `len(...)`, is a builtin or an
    import the packs do not describe, and says less)."""
    if not isinstance(call.func, ir.Attr) or site.receiver_types:
        return None
    base = ir.dotted(call.func.base)
    return f"{base or '<expr>'}.{call.func.attr}(...)"


def _chain_assigned(stmts: tuple[ir.Stmt, ...]):
    """Names of attributes assigned on an object reached from `self`."""
    for stmt in stmts:
        if isinstance(stmt, ir.Assign):
            for target in stmt.targets:
                if isinstance(target, ir.Attr) and (ir.dotted(target) or "").startswith("self."):
                    yield target.attr
        for child in ir.child_blocks(stmt):
            yield from _chain_assigned(child)


def _none_tested(stmts: tuple[ir.Stmt, ...], wait_methods: frozenset[str]):
    """Names of attributes whose None test decides whether the host waits: an
    `if` on `x.a is None` (or on a local read from `x.a`) with a wait in a
    branch, or returning early before a wait that follows it."""
    locals_: dict[str, str] = {}
    tested: list[ir.Expr] = []
    # Whether each statement (its nested blocks included) calls a wait method,
    # by identity: every `if` asks it of the statements after it as well.
    waiting: dict[int, bool] = {}

    def stmt_waits(stmt: ir.Stmt) -> bool:
        found = waiting.get(id(stmt))
        if found is None:
            found = waiting[id(stmt)] = any(
                isinstance(c.func, ir.Attr) and c.func.attr in wait_methods
                for c in _own_calls(stmt)
            ) or any(waits(block) for block in ir.child_blocks(stmt))
        return found

    def waits(block: tuple[ir.Stmt, ...]) -> bool:
        return any(stmt_waits(stmt) for stmt in block)

    def visit(block: tuple[ir.Stmt, ...]) -> None:
        for index, stmt in enumerate(block):
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Attr):
                for target in stmt.targets:
                    if isinstance(target, ir.Name):
                        locals_[target.id] = stmt.value.attr
            if isinstance(stmt, ir.If) and (
                waits(stmt.body)
                or waits(stmt.orelse)
                or (_exits(stmt.body) and waits(block[index + 1 :]))
            ):
                tested.extend(_none_compared(stmt.test))
            for child in ir.child_blocks(stmt):
                visit(child)

    visit(stmts)
    for expr in tested:
        if isinstance(expr, ir.Attr):
            yield expr.attr
        elif isinstance(expr, ir.Name) and expr.id in locals_:
            yield locals_[expr.id]


def _exits(block: tuple[ir.Stmt, ...]) -> bool:
    return bool(block) and isinstance(block[-1], ir.Return | ir.Raise)


def _none_compared(expr: ir.Expr):
    """The operands `e` of every `e is None` / `e is not None` inside `expr`."""
    for node in ir.walk(expr):
        found = ir.none_test(node)
        if found is not None:
            yield found[0]


def _calls_in(stmts: tuple[ir.Stmt, ...]):
    for stmt in stmts:
        yield from _own_calls(stmt)
        for child in ir.child_blocks(stmt):
            yield from _calls_in(child)


def _own_calls(stmt: ir.Stmt):
    """The calls of a statement's own expressions (not those of its nested blocks)."""
    for value in ir.statement_exprs(stmt):
        yield from ir.iter_calls(value)
