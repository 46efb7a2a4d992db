"""Each rule's reference remedy as edits computed from its finding's witness.

A codemod reads the finding (which function, which mode predicate, which
completion sites) and the program the analysis built (classes, methods, the
packs' RPC dispatch), and returns the edits of the fix, or why it offers
none: that fix is a design choice, left to the engineer (the remedy says
what to do).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from syncscan.findings import Finding
from syncscan.fix.edits import (
    AddMethod,
    AppendToMethod,
    Before,
    Edit,
    EnsureImport,
    MoveIntoWith,
    apply,
    imported_as,
)
from syncscan.index import ir
from syncscan.packs import PackSet, RpcDispatch
from syncscan.project import Project
from syncscan.resolve.program import Program


@dataclass(frozen=True)
class Context:
    """What a codemod may read: the project's sources and the analysed program."""

    project: Project
    program: Program
    packs: PackSet

    def source(self, relpath: str) -> str:
        return (self.project.root / relpath).read_text(encoding="utf-8")

    def relpath_of(self, qualname: str) -> str | None:
        module = self.program.module_of(qualname)
        return self.project.relpath(module.path) if module is not None else None

    def line_length(self, relpath: str) -> int:
        """The formatter's line length for a file: `line-length` of the nearest
        ruff configuration above it (ruff.toml, .ruff.toml, or a pyproject.toml
        with [tool.ruff]), else ruff's default 88."""
        directory = (self.project.root / relpath).parent
        for folder in (directory, *directory.parents):
            for name, table in _RUFF_FILES:
                found = _ruff_setting(folder / name, table)
                if found is not None:
                    return found
        return 88

    def assignment(self, relpath: str, target: str, value: str, indent: int = 8) -> str:
        """`target = value`, with the value in parentheses on its own line when the
        statement would pass the line length at that indentation (as ruff wraps it)."""
        line = f"{target} = {value}\n"
        if indent + len(line) - 1 <= self.line_length(relpath):
            return line
        return f"{target} = (\n    {value}\n)\n"

    def named(self, relpath: str, vocabulary_key: str) -> tuple[str, list[Edit]]:
        """The dotted name a pack gives the fix layer (`fix_event`:
        `torch.cuda.Event`) as the file spells it (its own alias of the top-level
        module), and the import to add when the file does not import it."""
        dotted = self.packs.vocabulary.scalar(vocabulary_key, "")
        if not dotted:
            raise LookupError(f"no pack names `{vocabulary_key}`")
        module, _, rest = dotted.partition(".")
        alias = imported_as(self.source(relpath), module)
        text = f"{alias or module}.{rest}" if rest else alias or module
        return text, ([] if alias else [EnsureImport(relpath, module)])


_RUFF_FILES = (("ruff.toml", ()), (".ruff.toml", ()), ("pyproject.toml", ("tool", "ruff")))


def _ruff_setting(path: Path, table: tuple[str, ...]) -> int | None:
    """`line-length` of a ruff configuration file (88 when it configures ruff
    but not the length), None when it does not configure ruff."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    for key in table:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, dict):
        return None
    value = data.get("line-length", 88)
    return value if isinstance(value, int) else 88


@dataclass(frozen=True)
class Proposal:
    """A fix's edits, or (no edits) the reason there is no automatic fix."""

    finding: Finding
    edits: tuple[Edit, ...] = ()
    reason: str = ""
    # A rule marks a fix safe when it cannot change behaviour beyond removing the
    # finding; every fix here adds or moves a wait, so none is.
    safe: bool = False

    @property
    def label(self) -> str:
        return "safe fix" if self.safe else "unsafe fix: it changes what the code waits for"


Codemod = Callable[[Finding, Context], Proposal]


# ---------------------------------------------------------------------- SYNC001
def arm_reuse_event(finding: Finding, ctx: Context) -> Proposal:
    """SYNC001: one event for the affected mode, armed in the owning class's
    `__init__`; the step waits on it before its first host write into the
    reused buffers and records it before the mode's return, after its launches
    (vLLM's fix of the encoder-only step)."""
    root = finding.step_root
    owner, _, method = root.rpartition(".")
    step = ctx.program.find_method(owner, method)
    predicates = [(k, v) for k, v in finding.mode if k.startswith("self.")]
    if not predicates:
        return Proposal(finding, reason="the mode is not an attribute of the runner")
    path = ctx.relpath_of(owner)
    init = ctx.program.find_method(owner, "__init__")
    if step is None or not step.body:
        return Proposal(finding, reason=f"{root} is not in the analysed sources")
    if path is None or init is None or not init.qualname.startswith(owner + "."):
        return Proposal(finding, reason=f"{owner} defines no __init__ to arm an event in")
    if finding.location.function != root or finding.location.path != path:
        return Proposal(finding, reason="the mode's return is not in the step root")
    name = "_".join(_slug(k, v) for k, v in predicates) + "_reuse_event"
    condition = " and ".join(k if v else f"not {k}" for k, v in predicates)
    try:
        constructor, imports = ctx.named(path, "fix_event")
    except LookupError as error:
        return Proposal(finding, reason=str(error))
    first = next(
        (s.line for s in finding.witness[1:] if s.function == root and s.path == path),
        _first_statement(step).line,  # no step of the witness in the root
    )
    cls = owner.rsplit(".", 1)[-1]
    event = f"self.{name}"
    mark = _sanctioned_mark(ctx, "the step rewrites inputs the last step's kernels read")
    return Proposal(
        finding,
        (
            *imports,
            AppendToMethod(
                path,
                cls,
                "__init__",
                ctx.assignment(path, event, f"{constructor}() if {condition} else None"),
            ),
            Before(path, first, f"if {event} is not None:\n    {event}.synchronize(){mark}\n"),
            Before(path, finding.location.line, f"if {event} is not None:\n    {event}.record()\n"),
        ),
    )


def _sanctioned_mark(ctx: Context, why: str) -> str:
    """A trailing `  # <marker>: why` for a wait the fix means to add, where a
    pack names the engine's comment marker for sanctioned syncs (vLLM's
    `gpu-sync-ok`, which its pre-commit hook also asks for): the wait then
    stalls the step on purpose and SYNC005 does not report it."""
    markers = sorted(ctx.packs.vocabulary.names("sanctioned_sync_markers"))
    return f"  # {markers[0]}: {why}" if markers else ""


def _first_statement(function) -> ir.Stmt:
    """The first statement of a body after its docstring (which must stay first)."""
    body = function.body
    docstring = (
        len(body) > 1
        and isinstance(body[0], ir.Eval)
        and isinstance(body[0].value, ir.Const)
        and isinstance(body[0].value.value, str)
    )
    return body[1] if docstring else body[0]


def _slug(predicate: str, value: bool) -> str:
    """`self.is_encoder_only` -> `encoder_only`; a false predicate gets `not_`."""
    name = predicate.rsplit(".", 1)[-1].lstrip("_")
    for prefix in ("is_", "use_", "has_"):
        name = name.removeprefix(prefix)
    return name if value else f"not_{name}"


# ---------------------------------------------------------------------- SYNC002
def barrier_before_completion(finding: Finding, ctx: Context) -> Proposal:
    """SYNC002: a device barrier before each completion site: in-process, the
    pack's `fix_device_barrier`; where the class can call a pack RPC dispatch
    that names a `barrier_method`, that RPC (the method added to the first
    receiver class when it has none)."""
    edits: list[Edit] = []
    try:
        for site in finding.related or (finding.location,):
            cls = _class_of(site.function, ctx.program)
            rpc = _barrier_rpc(cls, ctx) if cls else None
            if rpc is not None:
                code = f'self.{rpc.method}("{rpc.barrier_method}")\n'
                edits.extend(_worker_barrier(rpc, ctx))
            else:
                barrier, imports = ctx.named(site.path, "fix_device_barrier")
                edits.extend(imports)
                code = f"{barrier}()\n"
            function = ctx.program.lookup(site.function).function if cls else None
            if cls and function is not None and _falls_off_the_end(function, site.line):
                # The completion is the end of the body: the barrier goes last.
                method = function.name
                edits.append(AppendToMethod(site.path, cls.rsplit(".", 1)[-1], method, code))
            else:
                edits.append(Before(site.path, site.line, code, site.function))
    except LookupError as error:
        return Proposal(finding, reason=str(error))
    return Proposal(finding, tuple(dict.fromkeys(edits)))


def _falls_off_the_end(function, line: int) -> bool:
    """Whether `line` is where the function falls off its end (no `return` there)."""
    returns = {s.line for s in ir.iter_statements(function.body) if isinstance(s, ir.Return)}
    return line == function.end_line and line not in returns


def _class_of(function: str, program: Program) -> str | None:
    """The class whose method `function` is (or holds it as a nested function)."""
    parts = function.split(".<locals>.")[0].split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if program.find_class(".".join(parts[:cut])) is not None:
            return ".".join(parts[:cut])
    return None


def _barrier_rpc(cls: str, ctx: Context) -> RpcDispatch | None:
    """A pack RPC dispatch with a barrier method that the class can call on itself."""
    for rpc in ctx.packs.rpc:
        if rpc.barrier_method and ctx.program.find_method(cls, rpc.method) is not None:
            return rpc
    return None


def _worker_barrier(rpc: RpcDispatch, ctx: Context) -> list[Edit]:
    """The barrier method the RPC names, where its first receiver class has none."""
    receiver, name = rpc.receivers[0], rpc.barrier_method
    path = ctx.relpath_of(receiver)
    if path is None or ctx.program.find_method(receiver, name) is not None:
        return []
    available, imports = ctx.named(path, "fix_accelerator_available")
    barrier, more = ctx.named(path, "fix_device_barrier")
    code = (
        f"def {name}(self) -> None:\n"
        '    """Wait for all device work this worker launched (a pause\'s barrier)."""\n'
        f"    if {available}():\n"
        f"        {barrier}()\n"
    )
    return [*imports, *more, AddMethod(path, receiver.rsplit(".", 1)[-1], name, code)]


# ---------------------------------------------------------------------- SYNC003
def move_into_guard(finding: Finding, ctx: Context) -> Proposal:
    """SYNC003: the step's statement that leads to the write, moved to the start
    of the guarded region (`with ...:`) that directly follows it in the same
    function; any other placement is a design choice."""
    root = finding.step_root
    step = next((s for s in reversed(finding.witness) if s.function == root), None)
    if step is None or step is finding.witness[0]:
        return Proposal(finding, reason=_GUARD_CHOICE)
    edit = MoveIntoWith(step.path, step.line)
    try:
        apply(ctx.source(step.path), (edit,))
    except Exception:  # no `with` right after it: the placement is a design choice
        return Proposal(finding, reason=_GUARD_CHOICE)
    return Proposal(finding, (edit,))


_GUARD_CHOICE = (
    "the write is not right before a guarded region in its step function: where it "
    "belongs relative to the guard (inside it, or a guard on every entry point) is a "
    "design choice"
)


def no_automatic_fix(why: str) -> Codemod:
    def offer(finding: Finding, ctx: Context) -> Proposal:
        return Proposal(finding, reason=why)

    return offer


CODEMODS: dict[str, Codemod] = {
    "SYNC001": arm_reuse_event,
    "SYNC002": barrier_before_completion,
    "SYNC003": move_into_guard,
    "SYNC004": no_automatic_fix(
        "which stream should wait for which (or record_stream, or double-buffering) is a "
        "design choice"
    ),
    "SYNC005": no_automatic_fix(
        "whether the value can stay on the device, be read after the deferred wait, or "
        "the sync is meant (a sanctioned region, or a line with the engine's marker) is a "
        "design choice"
    ),
}
