"""The step-path call graph: the functions the audit's paths run through.

Not the whole crawl (a thousand functions on vLLM): only the call chains from
a step root or quiescence point down to something that matters for
synchronization, as the walk's traces recorded them. Each function is
labelled by what it does on those paths (writes pinned memory, launches
device work, waits on the host, records an event, completes a transition)
and knows the paths that pass through it, so a reader can go from a function
to its paths. Plain data: the HTML draws it, `--graph` exports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from syncscan.report.audit_model import AuditPath, AuditRoot, QuiescenceFact

# What a function does on the step path, most telling first: a node is drawn
# in the colour of its first role.
ROLES = ("writes", "launches", "waits", "records", "completes", "root", "calls")
ROLE_TEXT = {
    "writes": "writes pinned memory on the host",
    "launches": "launches device work that accesses pinned memory",
    "waits": "waits on the host (event, stream or device)",
    "records": "records an event",
    "completes": "completes a transition (quiescence point)",
    "root": "step root or quiescence point",
    "calls": "only calls on",
}


@dataclass(frozen=True)
class GraphNode:
    id: str
    function: str
    label: str  # `Class.method`
    path: str
    line: int
    roles: tuple[str, ...]
    paths: tuple[str, ...]  # audit path ids (and quiescence point ids) through it


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    path: str  # the call site
    line: int


@dataclass(frozen=True)
class StepGraph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]

    def node(self, function: str) -> GraphNode | None:
        return next((n for n in self.nodes if n.function == function), None)


# A function's file, `def` line and the roles its own code shows (records).
Describe = Callable[[str], tuple[str, int, frozenset[str]]]


def short_names(names: list[str]) -> dict[str, str]:
    """Each name's shortest dotted suffix (at least `Class.method`) that no other
    name ends with: enough to read and to tell apart, the title has the rest."""
    short: dict[str, str] = {}
    for name in names:
        parts = name.split(".")
        suffix = name
        for k in range(2, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            if not any(o != name and (o == suffix or o.endswith("." + suffix)) for o in names):
                break
        short[name] = suffix
    return short


class Hop(Protocol):
    """A step of a trace: where it is and in which function."""

    path: str
    line: int
    function: str


class _Place(NamedTuple):
    path: str
    line: int
    function: str


class _Builder:
    def __init__(self) -> None:
        self.roles: dict[str, set[str]] = {}
        self.paths: dict[str, set[str]] = {}
        self.edges: dict[tuple[str, str], tuple[str, int]] = {}

    def add(self, owner: str, trace: Iterable[Hop], role: str | None) -> None:
        """A call chain from a root: each hop calls the next; the last does `role`."""
        previous: Hop | None = None
        last = None
        for step in trace:
            self.paths.setdefault(step.function, set()).add(owner)
            self.roles.setdefault(step.function, set())
            if previous is not None and previous.function != step.function:
                key = (previous.function, step.function)
                here = (previous.path, previous.line)
                self.edges[key] = min(self.edges.get(key, here), here)
            previous, last = step, step
        if last is not None and role is not None:
            self.roles[last.function].add(role)


def build(
    roots: Sequence[AuditRoot],
    paths: Sequence[AuditPath],
    quiescence: Sequence[QuiescenceFact],
    describe: Describe,
) -> StepGraph:
    builder = _Builder()
    for root in roots:
        builder.roles.setdefault(root.name, set()).add("root")
        builder.paths.setdefault(root.name, set())
    for path in paths:
        for access in path.writes:
            builder.add(path.id, access.trace, "writes" if access.kind == "write" else None)
        for access in path.device:
            builder.add(path.id, access.trace, "launches")
        builder.add(path.id, path.wait, "waits")
        for race in (path.race, *path.also):
            if race is not None:
                builder.add(path.id, race.host, "writes")
                builder.add(path.id, race.device, "launches")
        for hazard in path.hazards:
            builder.add(path.id, hazard.first, "launches")
            builder.add(path.id, hazard.second, "launches")
        for exit_ in path.exits:
            builder.add(path.id, (exit_,), None)
    for point in quiescence:
        for function in point.functions:
            builder.roles.setdefault(function, set()).add("root")
            builder.paths.setdefault(function, set()).add(point.id)
        for completion in point.sites:
            done = _Place(completion.path, completion.line, completion.function)
            builder.add(point.id, (done,), "completes")
            role = "waits" if completion.barrier else "launches"
            builder.add(point.id, [s for s in completion.evidence if s.path], role)
    functions = sorted(builder.roles)
    ids = {f: f"n{i}" for i, f in enumerate(functions, start=1)}
    labels = short_names(functions)
    nodes = []
    for function in functions:
        path, line, own = describe(function)
        roles = builder.roles[function] | own
        ordered = tuple(r for r in ROLES if r in roles) or ("calls",)
        nodes.append(
            GraphNode(
                ids[function],
                function,
                labels[function],
                path,
                line,
                ordered,
                tuple(sorted(builder.paths[function], key=_id_order)),
            )  # fmt: skip
        )
    order = {f: i for i, f in enumerate(functions)}
    edges = tuple(
        GraphEdge(ids[a], ids[b], *site)
        for (a, b), site in sorted(builder.edges.items(), key=lambda e: tuple(map(order.get, e[0])))
    )
    return StepGraph(tuple(nodes), edges)


def _id_order(identifier: str) -> tuple[str, int]:
    """`p2` before `p10`; path ids before quiescence ids."""
    return (identifier[0], int(identifier[1:]) if identifier[1:].isdigit() else 0)
