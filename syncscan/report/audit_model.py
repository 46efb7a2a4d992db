"""The audit model: one run's step roots x modes x paths, as plain frozen data.

Every audit format (console, JSON, Markdown, HTML, the graph exports) renders
this model and nothing else, so they cannot disagree about what a path did.
It is built from the analysis once; it holds no analysis object, no absolute
path (buffer identities name their allocation site relative to the analysed
root) and no figure that depends on the clock or the cache, so the same tree
gives the same model wherever and whenever it is analysed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from syncscan.findings import Finding, WitnessStep
from syncscan.flow.quiescence import QuiescenceResult
from syncscan.flow.state import HOST_READ, Trace
from syncscan.flow.step import RootAnalysis, RulesState, StepPath
from syncscan.index import ir
from syncscan.report import step_graph
from syncscan.report.result import RunResult
from syncscan.report.step_graph import StepGraph

DEFAULT_MODE = "default"

# Verdicts by how badly they end, worst first: the matrix colours a cell by its
# worst path, and the findings' verdicts lead.
VERDICT_RANK = {
    "unbounded": 0,
    "write outside guard": 0,
    "stream hazard": 1,
    "incomplete": 1,
    "bounded by peer": 2,
    "deferred": 3,
    "semaphore": 3,
    "waits inline": 3,
    "not rewritten": 3,
    "no device reader": 4,
    "no pinned writes": 4,
    "output discarded": 4,
}
BAD_VERDICTS = frozenset(v for v, rank in VERDICT_RANK.items() if rank == 0)
# Which paths a finding of each rule is about.
_RULE_VERDICTS = {"SYNC001": {"unbounded"}, "SYNC003": {"write outside guard"}}


@dataclass(frozen=True)
class Site:
    """A place in the analysed code and what happens there."""

    path: str
    line: int
    function: str
    note: str = ""


@dataclass(frozen=True)
class BufferOrder:
    """A shared pinned buffer a path writes: the host access, the device access
    still pending at the step's end, and the edge that orders the next write
    after it ("no edge: ..." when nothing does)."""

    buffer: str  # identity, relative to the analysed root
    name: str  # as the code names it (`UvaBuffer.cpu`)
    host: Site
    device: Site | None
    ordered_by: str


@dataclass(frozen=True)
class Access:
    """One agent's access of one buffer: `agent` is "host" or "device"."""

    buffer: str
    agent: str
    kind: str  # "write" | "read"
    trace: tuple[Site, ...]


@dataclass(frozen=True)
class RaceFact:
    buffer: str
    host: tuple[Site, ...]  # the host access that is not ordered
    device: tuple[Site, ...]  # the device access it races
    across_steps: bool


@dataclass(frozen=True)
class HazardFact:
    """Two streams' accesses of one memory, unordered (SYNC004)."""

    memory: str
    shape: str
    conflict: str
    first_stream: str
    first: tuple[Site, ...]
    second_stream: str
    second: tuple[Site, ...]
    across_steps: bool


@dataclass(frozen=True)
class AuditPath:
    """One way a step can end, under one assignment of its mode predicates."""

    id: str
    root: str
    mode_label: str
    mode: tuple[tuple[str, bool], ...]
    exits: tuple[Site, ...]  # each phase's return; the last ends the path
    verdict: str
    reason: str
    writes: tuple[Access, ...]  # host accesses of shared pinned memory
    device: tuple[Access, ...]  # device accesses left pending at the end
    wait: tuple[Site, ...]  # the last host wait, as a call chain from the root
    waited: tuple[str, ...]  # what the host waits covered (events, "<device>")
    buffers: tuple[BufferOrder, ...]
    race: RaceFact | None
    also: tuple[RaceFact, ...]
    hazards: tuple[HazardFact, ...]

    @property
    def exit(self) -> Site:
        return self.exits[-1]

    @property
    def bad(self) -> bool:
        return self.verdict in BAD_VERDICTS

    @property
    def shown_verdict(self) -> str:
        """The verdict, or "stream hazard" where the host order holds but two
        streams do not (a SYNC004 path)."""
        if self.hazards and VERDICT_RANK.get(self.verdict, 9) > 1:
            return "stream hazard"
        return self.verdict

    def witness(self) -> tuple[Site, ...]:
        """What a reader follows: the race (host access after the device access it
        races), else the first write and what reads it, then the exit."""
        steps: list[Site] = []
        if self.race is not None:
            steps += [*self.race.device, *self.race.host]
        elif self.hazards:
            steps += [*self.hazards[0].first, *self.hazards[0].second]
        else:
            if self.writes:
                steps += self.writes[0].trace
            if self.device:
                steps += self.device[0].trace
            steps += self.wait
        return (*steps, *self.exits)


@dataclass(frozen=True)
class Cell:
    """A root x mode label: its paths and the worst verdict among them."""

    id: str  # `r1-m2`: the root's id and the mode label's column
    root: str
    mode_label: str
    paths: tuple[str, ...]
    verdict: str


@dataclass(frozen=True)
class AuditRoot:
    id: str
    name: str  # the qualified name (`pkg.mod.Class.method`)
    short: str  # the shortest suffix no other root shares
    path: str
    line: int
    discards_output: bool
    incomplete: str | None
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class CompletionFact:
    path: str
    line: int
    function: str
    kind: str
    barrier: bool  # every path reaching it follows a device barrier
    evidence: tuple[Site, ...]  # the barrier, or the work that may still run


@dataclass(frozen=True)
class QuiescenceFact:
    id: str
    function: str
    functions: tuple[str, ...]
    missing: str | None
    incomplete: str | None
    sites: tuple[CompletionFact, ...]
    cpu_barriers: tuple[Site, ...]

    @property
    def verdict(self) -> str:
        if self.missing:
            return "missing"
        if self.incomplete:
            return "incomplete"
        if any(not s.barrier for s in self.sites):
            return "no device barrier"
        return "barrier"


@dataclass(frozen=True)
class Unresolved:
    call: str
    sites: int
    first: str


@dataclass(frozen=True)
class AuditFinding:
    finding: Finding
    paths: tuple[str, ...]  # the audit paths it is about
    cell: str | None  # the matrix cell (or quiescence point) to look at


@dataclass(frozen=True)
class Audit:
    roots: tuple[AuditRoot, ...]
    paths: tuple[AuditPath, ...]
    quiescence: tuple[QuiescenceFact, ...]
    findings: tuple[AuditFinding, ...]
    unresolved: tuple[Unresolved, ...]
    graph: StepGraph
    stats: tuple[tuple[str, int | float], ...]
    diagnostics: tuple[tuple[str, str, int, str], ...]  # kind, path, line, message
    notes: tuple[str, ...]
    # `path:line` of each sanctioned region (`with gpu_sync_allowed():`) on the
    # step path where the walk met no host sync, certain or possible: a call it
    # could not follow, or an annotation the code no longer needs.
    silent_regions: tuple[str, ...] = ()

    def path(self, path_id: str) -> AuditPath:
        return self._by_id()[path_id]

    def _by_id(self) -> dict[str, AuditPath]:
        cached = self.__dict__.get("_paths_by_id")
        if cached is None:
            cached = {p.id: p for p in self.paths}
            object.__setattr__(self, "_paths_by_id", cached)
        return cached

    @property
    def mode_labels(self) -> tuple[str, ...]:
        """The matrix's columns: "default" first, then the labels alphabetically."""
        return tuple(mode_columns({c.mode_label for r in self.roots for c in r.cells}))

    def cell(self, cell_id: str) -> Cell | None:
        return next((c for r in self.roots for c in r.cells if c.id == cell_id), None)


# ---------------------------------------------------------------------- building
class _Relative:
    """Buffer identities name allocation sites by absolute path: make them
    relative to the analysed root, so the model does not depend on where the
    tree lies."""

    def __init__(self, root: Path) -> None:
        prefixes = {f"{root}/", f"{root.resolve()}/", f"{root.absolute()}/"}
        self.prefixes = sorted(prefixes, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for prefix in self.prefixes:
            text = text.replace(prefix, "")
        return text


def site(step: WitnessStep) -> Site:
    return Site(step.path, step.line, step.function, step.note)


def sites(trace: Trace | None) -> tuple[Site, ...]:
    return tuple(site(step) for step in trace or ())


def buffer_name(step: WitnessStep) -> str:
    """`UvaBuffer.cpu`: the buffer as the write's note names it."""
    return (step.written or step.note).split(" pinned buffer ", 1)[-1]


def _mode_label(path: StepPath, result: RunResult) -> str:
    return result.packs.labels_text(path.state.assumptions) or DEFAULT_MODE


def _path_key(path: StepPath, result: RunResult) -> tuple:
    """A total order of a root's paths that does not depend on the walk's order."""
    return (
        _mode_label(path, result),
        tuple((r.path, r.line) for r in path.returns),
        VERDICT_RANK.get(path.verdict, 9),
        path.verdict,
        path.state.assumptions,
        path.reason,
    )


def _race(race, across: bool, rel: _Relative) -> RaceFact:
    buffer, host, device = race
    return RaceFact(rel(buffer), sites(host), sites(device), across)


def _buffer_orders(path: StepPath, rel: _Relative) -> tuple[BufferOrder, ...]:
    """Each shared pinned buffer the path writes, with the edge that orders it."""
    pending = {b: t for b, _, t in path.state.pending}
    found: dict[str, BufferOrder] = {}
    for buffer, trace, _ in path.state.exposed:
        if buffer.endswith(HOST_READ) or not trace:
            continue
        host = trace[-1]
        access: Trace | None
        if path.race is not None and path.race[0] == buffer:
            host, access = path.race[1][-1], path.race[2]
            edge = "no edge: " + path.reason
        elif buffer in pending:
            access, edge = pending[buffer], path.reason
        else:
            access, edge = None, "a host wait in the step covers every access"
        order = BufferOrder(
            rel(buffer), buffer_name(trace[-1]), site(host),
            site(access[-1]) if access else None, edge,
        )  # fmt: skip
        if buffer not in found or edge.startswith("no edge"):
            found[buffer] = order
    return tuple(found[b] for b in sorted(found))


def _audit_path(path: StepPath, number: int, root_id: str, result: RunResult, rel) -> AuditPath:
    state = path.state
    writes = tuple(
        Access(
            rel(b.removesuffix(HOST_READ)),
            "host",
            "read" if b.endswith(HOST_READ) else "write",
            sites(t),
        )  # fmt: skip
        for b, t, _ in state.exposed
    )
    device = tuple(Access(rel(b), "device", kind, sites(t)) for b, kind, t in state.pending)
    hazards = tuple(
        HazardFact(
            rel(h.memory),
            h.shape,
            h.conflict,
            h.first_stream,
            sites(h.first),
            h.second_stream,
            sites(h.second),
            h.across_steps,
        )  # fmt: skip
        for h in sorted(path.hazards, key=lambda h: h.key)
    )
    exits = tuple(Site(r.path, r.line, r.function, f"returns {r.text}") for r in path.returns)
    return AuditPath(
        id=f"p{number}",
        root=root_id,
        mode_label=_mode_label(path, result),
        mode=state.assumptions,
        exits=exits,
        verdict=path.verdict,
        reason=path.reason,
        writes=writes,
        device=device,
        wait=sites(state.wait),
        waited=tuple(sorted(rel(k) for k in state.waited)),
        buffers=_buffer_orders(path, rel),
        race=_race(path.race, path.across_steps, rel) if path.race else None,
        also=tuple(_race(r, True, rel) for r in path.also),
        hazards=hazards,
    )


def _cells(root_id: str, paths: list[AuditPath], columns: list[str]) -> tuple[Cell, ...]:
    by_label: dict[str, list[AuditPath]] = {}
    for path in paths:
        by_label.setdefault(path.mode_label, []).append(path)
    cells = []
    for label, members in by_label.items():
        worst = min((p.shown_verdict for p in members), key=lambda v: VERDICT_RANK.get(v, 9))
        cell_id = f"{root_id}-m{columns.index(label) + 1}"
        cells.append(Cell(cell_id, root_id, label, tuple(p.id for p in members), worst))
    return tuple(sorted(cells, key=lambda c: columns.index(c.mode_label)))


def mode_columns(labels: set[str]) -> list[str]:
    """The mode labels in matrix order: "default" first, then alphabetically."""
    return sorted(labels, key=lambda label: (label != DEFAULT_MODE, label))


def _roots(result: RunResult, rel: _Relative) -> tuple[list[AuditRoot], list[AuditPath]]:
    analyses: list[RootAnalysis] = result.analysis.step_results
    short = step_graph.short_names([a.root.name for a in analyses])
    roots: list[AuditRoot] = []
    all_paths: list[AuditPath] = []
    per_root: list[list[AuditPath]] = []
    for index, analysis in enumerate(analyses, start=1):
        ordered = sorted(analysis.paths, key=lambda p: _path_key(p, result))
        paths = [
            _audit_path(p, len(all_paths) + n, f"r{index}", result, rel)
            for n, p in enumerate(ordered, start=1)
        ]
        all_paths += paths
        per_root.append(paths)
    columns = mode_columns({p.mode_label for p in all_paths})
    for index, (analysis, paths) in enumerate(zip(analyses, per_root, strict=True), start=1):
        root = analysis.root
        root_id = f"r{index}"
        module = result.analysis.program.module_of(root.function.qualname)
        roots.append(
            AuditRoot(
                root_id,
                root.name,
                short[root.name],
                result.project.relpath(module.path) if module else "",
                root.function.line,
                root.spec.discards_output,
                analysis.incomplete,
                _cells(root_id, paths, columns),
            )  # fmt: skip
        )
    return roots, all_paths


def _quiescence(result: RunResult, rel: _Relative) -> tuple[QuiescenceFact, ...]:
    facts = []
    q_results: list[QuiescenceResult] = result.analysis.quiescence_results
    for index, q in enumerate(q_results, start=1):
        completions = tuple(
            CompletionFact(
                s.path,
                s.line,
                s.function,
                s.kind,
                not s.lacking,
                sites(s.launch if s.lacking else s.barrier),
            )  # fmt: skip
            for s in q.sites
        )
        facts.append(
            QuiescenceFact(
                f"q{index}",
                q.spec.function,
                tuple(q.functions),
                q.missing,
                q.incomplete,
                completions,
                tuple(sorted(set(map(site, q.cpu_barriers)), key=_site_key)),
            )  # fmt: skip
        )
    return tuple(facts)


def _describer(result: RunResult) -> step_graph.Describe:
    """A function's file and `def` line, and what its own code shows it does
    (`.record()`, `.synchronize()` calls: the walk keeps no trace of records)."""
    program = result.analysis.program
    vocab = result.packs.vocabulary
    roles = {
        "records": vocab.names("event_record_methods") | vocab.names("stream_record_methods"),
        "waits": vocab.names("host_wait_methods"),
    }

    def describe(function: str) -> tuple[str, int, frozenset[str]]:
        symbol = program.lookup(function)
        if symbol.function is None or symbol.module is None:
            return "", 0, frozenset()
        found = set()
        for stmt in ir.iter_statements(symbol.function.body):
            for expr in ir.statement_exprs(stmt):
                for call in ir.iter_calls(expr):
                    if isinstance(call.func, ir.Attr):
                        found.update(r for r, names in roles.items() if call.func.attr in names)
        path = result.project.relpath(symbol.module.path)
        return path, symbol.function.line, frozenset(found)

    return describe


def _site_key(s: Site) -> tuple:
    return (s.path, s.line, s.function, s.note)


# Vocabulary whose methods, on a receiver the resolver could not place, may be
# the wait, the pinned write or the launch the model is missing.
_SYNC_VOCABULARY = (
    "host_wait_methods",
    "event_record_methods",
    "implicit_wait_methods",
    "copy_methods",
    "inplace_write_methods",
    "device_work_methods",
    "launch_methods",
)


def unresolved_rows(result: RunResult) -> list[tuple[str, int, str]]:
    """Unresolved method calls on the step path that may matter, one row per call
    text: calls on the step's own objects (`self.model(...)`: a type the resolver
    could not follow) and synchronization vocabulary on receivers it could not
    place (`x.copy_(...)`, `e.synchronize()`); how many sites, and the first."""
    vocab = result.packs.vocabulary
    relevant = frozenset().union(*(vocab.names(name) for name in _SYNC_VOCABULARY))
    found: dict[str, list[tuple[str, int]]] = {}
    for path, line, _, text in result.analysis.callgraph.unresolved_sites:
        method = text.removesuffix("(...)").rsplit(".", 1)[-1]
        if text.startswith("self.") or method in relevant:
            found.setdefault(text, []).append((result.project.relpath(path), line))
    return sorted(
        ((text, len(at), "{}:{}".format(*min(at))) for text, at in found.items()),
        key=lambda row: (-row[1], row[0]),
    )


def _finding_paths(finding: Finding, roots: list[AuditRoot], paths: list[AuditPath]) -> tuple:
    """The paths a finding is about: its root's paths in its mode whose verdict
    is the rule's (SYNC001, SYNC003), or that carry a stream hazard (SYNC004)."""
    root = next((r for r in roots if r.name == finding.step_root), None)
    if root is None:
        return ()
    wanted = set(finding.mode)
    verdicts = _RULE_VERDICTS.get(finding.code)
    return tuple(
        p.id
        for p in paths
        if p.root == root.id
        and wanted <= set(p.mode)
        and (p.verdict in verdicts if verdicts else bool(p.hazards))
    )


def _audit_findings(
    result: RunResult,
    roots: list[AuditRoot],
    paths: list[AuditPath],
    quiescence: tuple[QuiescenceFact, ...],
) -> tuple[AuditFinding, ...]:
    cell_of = {p: c.id for r in roots for c in r.cells for p in c.paths}
    out = []
    for finding in result.findings:
        ids = _finding_paths(finding, roots, paths)
        cell = None
        if ids:
            cell = cell_of[ids[0]]
        else:
            point = next((q for q in quiescence if q.function == finding.step_root), None)
            cell = point.id if point is not None else None
        out.append(AuditFinding(finding, ids, cell))
    return tuple(out)


def build(result: RunResult) -> Audit:
    """The audit of one analysed run (`result.analysis` must be present)."""
    from syncscan.report.json_report import VOLATILE_STATS

    if result.analysis is None:
        raise ValueError("the audit needs an analysis, not reused findings")
    if any(type(p.state) is RulesState for r in result.analysis.step_results for p in r.paths):
        raise ValueError(
            "the audit needs whole path states; a class analysis taken from the cache"
            " keeps only what the rules read"
        )
    rel = _Relative(result.project.root)
    roots, paths = _roots(result, rel)
    quiescence = _quiescence(result, rel)
    stats = tuple(
        (k, v) for k, v in result.stats.items() if k not in VOLATILE_STATS and k != "seconds"
    )
    return Audit(
        roots=tuple(roots),
        paths=tuple(paths),
        quiescence=quiescence,
        findings=_audit_findings(result, roots, paths, quiescence),
        unresolved=tuple(Unresolved(*row) for row in unresolved_rows(result)),
        graph=step_graph.build(roots, paths, quiescence, _describer(result)),
        stats=stats,
        diagnostics=tuple((d.kind, d.path, d.line, d.message) for d in result.diagnostics),
        notes=tuple(result.notes),
        silent_regions=tuple(
            f"{path}:{line}"
            for (path, line), syncs in result.analysis.sanctioned_regions.items()
            if not syncs
        ),
    )


def exit_line(path: AuditPath) -> str:
    """The exit line that ends the path: `file.py:1703`, the file's name only
    (the root is named with its file; the full path is in the path's exits)."""
    return f"{PurePosixPath(path.exit.path).name}:{path.exit.line}"


def rows(audit: Audit, root: AuditRoot) -> list[tuple[str, str, str, str, list[AuditPath]]]:
    """(mode, exit, verdict, reason, paths) per distinct way the root's paths end:
    the compact view of a root, where paths of one mode that end differently
    are told apart by their exit line."""
    grouped: dict[tuple[str, str, str, str], list[AuditPath]] = {}
    for cell in root.cells:
        for path_id in cell.paths:
            path = audit.path(path_id)
            key = (path.mode_label, exit_line(path), path.shown_verdict, path.reason)
            grouped.setdefault(key, []).append(path)
    return [(*key, paths) for key, paths in grouped.items()]
