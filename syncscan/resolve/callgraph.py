"""The step-path call graph: every function a root may reach, with call sites.

Nodes are `(function qualname, self class)` contexts rendered as strings; edges
keep the call-site file, line and column (PyCG drops them; a witness needs
them). The crawl also records which instance attributes the reachable code
assigns: an attribute never assigned on the step path is instance-constant,
which is what makes it a mode predicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from syncscan.index import ir
from syncscan.index.summary import FunctionSummary
from syncscan.resolve.calls import CallResolver, CallSite
from syncscan.resolve.program import Program
from syncscan.resolve.types import Scope

if TYPE_CHECKING:
    import networkx as nx

_MAX_NODES = 20000


def _new_graph() -> nx.MultiDiGraph:
    # Imported here: a run that reuses its findings never builds a graph.
    import networkx as nx

    return nx.MultiDiGraph()


@dataclass
class CallGraph:
    graph: nx.MultiDiGraph = field(default_factory=_new_graph)
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
        return self.graph.number_of_nodes()

    def reach(self, function: FunctionSummary, self_class: str | None) -> int:
        """Functions a call of `function` may reach, itself included (the size
        of its walk, roughly)."""
        import networkx as nx

        node = context_name(function, self_class)
        if node not in self.graph:
            return 1
        return 1 + len(nx.descendants(self.graph, node))


def context_name(function: FunctionSummary, self_class: str | None) -> str:
    if self_class and not function.qualname.startswith(self_class + "."):
        return f"{function.qualname}@{self_class}"
    return function.qualname


def crawl(
    program: Program,
    resolver: CallResolver,
    roots: list[tuple[FunctionSummary, str | None]],
    graph: CallGraph | None = None,
    wait_methods: frozenset[str] = frozenset(),
) -> CallGraph:
    """Breadth-first over the resolved calls from `roots`. A None test counts
    toward the step's flags only where it decides whether the host waits
    (`wait_methods`)."""
    graph = graph or CallGraph()
    seen: set[tuple[str, str | None]] = set()
    frontier = list(roots)
    while frontier:
        function, self_class = frontier.pop(0)
        key = (function.qualname, self_class)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _MAX_NODES:
            graph.incomplete = True
            break
        module = program.module_of(function.qualname)
        if module is None:
            continue
        scope = Scope(module, function, self_class)
        caller = context_name(function, self_class)
        graph.graph.add_node(caller, path=module.path, line=function.line)
        if self_class:
            for attr, _, _ in function.self_assignments:
                graph.assigned_attrs.add((self_class, attr))
        graph.chain_assigned.update(_chain_assigned(function.body))
        graph.none_tested.update(_none_tested(function.body, wait_methods))
        for call in _calls_in(function.body):
            site = resolver.resolve(call, scope)
            if site.resolved:
                graph.resolved_calls += 1
            else:
                graph.unresolved_calls += 1
                text = _opaque_method_call(call, site)
                if text is not None:
                    graph.unresolved_sites.append((module.path, call.line, caller, text))
            for callee in site.callees:
                target = context_name(callee.function, callee.self_class)
                graph.graph.add_edge(
                    caller, target, path=module.path, line=call.line, col=call.col, via=callee.via
                )
                frontier.append((callee.function, callee.self_class))
    return graph


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
