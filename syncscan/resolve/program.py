"""The program: summaries loaded on demand, symbols, class hierarchy.

A module is summarised only when something asks for a name inside it, so a run
reads the step path and what it reaches, not the whole tree. Subclass queries
use a cheap text scan of class headers to find candidate modules before
loading any of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from syncscan.findings import Diagnostic
from syncscan.index import reads
from syncscan.index.facts import FactsTable
from syncscan.index.ir import Expr, dotted
from syncscan.index.summary import (
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    SummaryError,
    binding,
    method_named,
    star_imports,
)
from syncscan.project import Project

_IDENT = re.compile(r"[A-Za-z_]\w*")


Summariser = Callable[[Project, str, Path], ModuleSummary]


@dataclass(frozen=True)
class Symbol:
    """What a dotted name denotes: a module, a class, a function or an external."""

    kind: str  # "module" | "class" | "function" | "value" | "external"
    qualname: str
    module: ModuleSummary | None = None
    cls: ClassSummary | None = None
    function: FunctionSummary | None = None
    value: Expr | None = None


class Program:
    """All summaries of a run and the questions asked across them."""

    def __init__(self, project: Project, summariser: Summariser, facts: FactsTable) -> None:
        self.project = project
        self._summarise = summariser
        self.facts = facts
        self.headers_used = False  # whether a subclass query read every file's headers
        self._summaries: dict[str, ModuleSummary | None] = {}
        # Modules asked for without loading them (`mark`): known to summarise,
        # loaded only when something reads them.
        self._unloaded: set[str] = set()
        self._class_headers: (
            tuple[dict[str, list[tuple[str, str]]], dict[str, frozenset[str]]] | None
        ) = None
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._mro_cache: reads.Memo[str, tuple[ClassSummary, ...]] = reads.Memo()
        self._base_index: dict[str, list[tuple[str, str]]] | None = None
        self._lookup_cache: reads.Memo[str, Symbol] = reads.Memo()
        self._subclass_cache: reads.Memo[str, tuple[str, ...]] = reads.Memo()
        self.diagnostics: list[Diagnostic] = []
        self.on_load: Callable[[str], None] | None = None  # progress reporting

    # ------------------------------------------------------------------ loading
    def summary(self, module: str) -> ModuleSummary | None:
        """The module's summary (None where it cannot be had). Its content
        notes its own reads (reads.py): asking for it reads nothing yet."""
        if module in self._summaries and module not in self._unloaded:
            found = self._summaries[module]
            if found is None:
                self._note_unsummarised(module)
            return found
        self._unloaded.discard(module)
        path = self.project.modules.get(module)
        summary = None
        if path is not None and self.on_load is not None:
            self.on_load(module)
        if path is not None:
            try:
                summary = self._summarise(self.project, module, path)
            except SummaryError as exc:
                self.diagnostics.append(Diagnostic(self.project.relpath(path), str(exc), exc.line))
        self._summaries[module] = summary
        if summary is None:
            self._note_unsummarised(module)
        return summary

    def _note_unsummarised(self, module: str) -> None:
        """A project module asked for that has no summary (it does not parse, say):
        what a walk found there depends on that (reads.py "unsummarised")."""
        if module in self.project.modules:
            reads.note(reads.item(module, "unsummarised"))

    def mark(self, module: str) -> None:
        """Ask for a module known to summarise (an earlier run summarised it and
        it is unchanged, or summarises again) without loading it yet: it is one
        of the run's inputs, read only where the analysis reads it."""
        if module not in self._summaries and module in self.project.modules:
            self._summaries[module] = None
            self._unloaded.add(module)
        elif module not in self._summaries:
            self.summary(module)

    def summarised(self) -> int:
        """How many modules asked for have a summary (marked ones included)."""
        return sum(1 for m, s in self._summaries.items() if s is not None or m in self._unloaded)

    def requested(self) -> list[str]:
        """Every module name whose summary the run asked for (its file inputs)."""
        return sorted(self._summaries)

    def requested_in_order(self) -> list[str]:
        """`requested`, in the order the run first asked for each."""
        return list(self._summaries)

    def adopt(
        self,
        requested: list[str],
        parsed: list[str],
        headers_used: bool,
        broken: frozenset[str] | None = None,
    ) -> None:
        """Ask what a walk worker asked (parallel.py): its modules, in its order,
        and every file's class headers where it read them, so the run's inputs
        and diagnostics are those of a run that asked itself. The modules the
        workers `parsed` (and cached) count as parsed here, not as cache hits.
        With `broken` (what an earlier run kept asked: those that had no
        summary), the others are only marked (`mark`): they load where read."""
        counted = getattr(self._summarise, "parsed_elsewhere", None)
        elsewhere = frozenset(parsed)
        for module in requested:
            if module in elsewhere and module not in self._summaries and counted is not None:
                counted(lambda module=module: self.summary(module))
            elif broken is not None and module not in broken:
                self.mark(module)
            else:
                self.summary(module)
        if headers_used:
            self._headers()

    def adopt_read(self, items: Iterable[str]) -> None:
        """Read `items` as making what read them did (a crawl's visit, a callee
        walk or a class analysis an earlier run kept, taken in place of making
        it): they are noted in the run's record (reads.py), and their modules
        and, where a subclass query is among them, every file's class headers
        are asked for, so the run's inputs are those of a run that made it."""
        read = set(items)
        reads.add(read)
        modules = sorted({item.partition("\0")[0] for item in read} - {""})
        # A module that had no summary is loaded, for its diagnostic; the
        # others summarised then (reuse.py holds nothing where one no longer does).
        broken = frozenset(m for m in modules if reads.item(m, "unsummarised") in read)
        self.adopt(modules, [], any(item.startswith(reads.DEFS_PREFIX) for item in read), broken)

    def walkers_started(self) -> None:
        """Walk workers have forked and hold every core: the summariser guesses
        no more modules ahead of need (prefetch.py), and writes the summaries it
        held back while the call graph waited for them (load.py)."""
        for hook in ("stop_prefetching", "flush"):
            act = getattr(self._summarise, hook, None)
            if act is not None:
                act()

    def walking_here(self) -> None:
        """The step classes are walked in this process, another core idle
        beside it: the summaries held back are written there (load.py `flush`)."""
        act = getattr(self._summarise, "flush", None)
        if act is not None:
            act(apart=True)

    def in_worker(self) -> None:
        """In a forked walk worker: report no progress (the parent does), and
        load without the parent's prefetching pool, whose threads did not fork."""
        self.on_load = None
        without_workers = getattr(self._summarise, "without_workers", None)
        if without_workers is not None:
            self._summarise = without_workers()

    def parsed_in_worker(self) -> list[str]:
        """The modules this walk worker parsed so far (`in_worker`), in order."""
        return list(getattr(self._summarise, "parsed_modules", None) or ())

    def loaded(self) -> list[ModuleSummary]:
        """Every summary asked for (marked ones loaded now)."""
        for module in sorted(self._unloaded):
            self.summary(module)
        return [s for _, s in sorted(self._summaries.items()) if s is not None]

    # ------------------------------------------------------------------ symbols
    def lookup(self, qualname: str, _depth: int = 0) -> Symbol:
        """Resolve a fully dotted name, following re-exports (memoised)."""
        return self._lookup_cache.made(qualname, lambda: self._lookup(qualname, _depth))

    def _lookup(self, qualname: str, _depth: int) -> Symbol:
        if _depth > 8:
            return Symbol("external", qualname)
        parts = qualname.split(".")
        for cut in range(len(parts), 0, -1):
            module_name = ".".join(parts[:cut])
            if module_name not in self.project.modules:
                continue
            module = self.summary(module_name)
            if module is None:
                return Symbol("external", qualname)
            rest = parts[cut:]
            if not rest:
                return Symbol("module", module_name, module=module)
            return self._member(module, rest, qualname, _depth)
        return Symbol("external", qualname)

    def _member(self, module: ModuleSummary, rest: list[str], qualname: str, depth: int) -> Symbol:
        head, tail = rest[0], rest[1:]
        found = binding(module, head)
        if found.cls is not None:
            cls = found.cls
            if not tail:
                return Symbol("class", cls.qualname, module=module, cls=cls)
            if len(tail) == 1:
                method = self.find_method(cls.qualname, tail[0])
                if method is not None:
                    return Symbol("function", method.qualname, module=module, function=method)
            return Symbol("external", qualname)
        if found.function is not None and not tail:
            fn = found.function
            return Symbol("function", fn.qualname, module=module, function=fn)
        target = found.target
        if target is not None and target != qualname:
            return self.lookup(".".join([target, *tail]), depth + 1)
        if found.value is not None and not tail:
            return Symbol("value", f"{module.module}.{head}", module=module, value=found.value)
        # A submodule not imported explicitly (package attribute access).
        sub = f"{module.module}.{head}"
        if sub in self.project.modules:
            return self.lookup(".".join([sub, *tail]), depth + 1)
        # A name a `from m import *` brought in (a package re-exporting its modules).
        for star in star_imports(module):
            if star in self.project.modules:
                found_there = self.lookup(".".join([star, head, *tail]), depth + 1)
                if found_there.kind != "external":
                    return found_there
        return Symbol("external", qualname)

    def resolve_local_name(self, module: ModuleSummary, name: str) -> str | None:
        """The dotted target a bare name in `module` refers to, if any."""
        found = binding(module, name)
        if found.cls is not None or found.function is not None or found.value is not None:
            return f"{module.module}.{name}"
        return found.target

    def resolve_dotted(self, module: ModuleSummary, expr: Expr) -> str | None:
        """`a.b.c` in `module` -> its fully dotted target (project or external)."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, tail = name.partition(".")
        base = self.resolve_local_name(module, head)
        if base is None:
            return None
        return f"{base}.{tail}" if tail else base

    # ------------------------------------------------------------------ classes
    def find_class(self, qualname: str) -> ClassSummary | None:
        symbol = self.lookup(qualname)
        return symbol.cls if symbol.kind == "class" else None

    def module_of(self, qualname: str) -> ModuleSummary | None:
        name = self.module_name_of(qualname)
        return self.summary(name) if name is not None else None

    def module_name_of(self, qualname: str) -> str | None:
        """The project module a dotted name lies in (the longest such prefix)."""
        parts = qualname.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if name in self.project.modules:
                return name
        return None

    def mro(self, qualname: str) -> tuple[ClassSummary, ...]:
        """Left-to-right depth-first linearisation, deduplicated (enough for dispatch)."""
        return self._mro_cache.made(qualname, lambda: self._mro(qualname), ())  # cycle guard

    def _mro(self, qualname: str) -> tuple[ClassSummary, ...]:
        cls = self.find_class(qualname)
        if cls is None:
            return ()
        order: list[ClassSummary] = [cls]
        module = self.module_of(cls.qualname)
        for base in cls.bases:
            target = self.resolve_dotted(module, base) if module else None
            if target is None:
                continue
            base_cls = self.find_class(target)
            if base_cls is None:
                continue
            for ancestor in self.mro(base_cls.qualname):
                if ancestor.qualname not in {c.qualname for c in order}:
                    order.append(ancestor)
        return tuple(order)

    def find_method(self, class_qualname: str, name: str) -> FunctionSummary | None:
        for cls in self.mro(class_qualname):
            found = method_named(cls, name)
            if found is not None:
                return found
        return None

    def overrides(self, class_qualname: str, method: str) -> list[tuple[str, FunctionSummary]]:
        """(class, function) for the method `class_qualname` runs (its own or
        inherited), then for each subclass that defines its own version.

        An `@abstractmethod` is left out where a concrete version exists: no
        instance runs it (its class cannot be instantiated), so a dispatch
        through the abstract base reaches only the overrides."""
        found = self.find_method(class_qualname, method)
        versions = [(class_qualname, found)] if found is not None else []
        for sub in self.subclasses(class_qualname, method):
            cls = self.find_class(sub)
            own = method_named(cls, method) if cls is not None else None
            if own is not None:
                versions.append((sub, own))
        concrete = [(c, f) for c, f in versions if not f.has_decorator("abstractmethod")]
        return concrete or versions

    def is_subclass(self, child: str, parent: str) -> bool:
        return any(c.qualname == parent for c in self.mro(child))

    def subclasses(self, qualname: str, method: str | None = None) -> tuple[str, ...]:
        """Classes in the tree deriving from `qualname` (transitively).

        Candidates come from a text scan of class headers, by name, so nothing
        is parsed to find them; with `method`, only classes whose module
        defines a function of that name are kept (only they can override it),
        and only those are parsed to confirm the inheritance.
        """
        if method is not None:
            reads.note(reads.defs_item(method))
        key = f"{qualname}#{method or ''}"
        return self._subclass_cache.made(key, lambda: self._subclasses(qualname, method))

    def _subclasses(self, qualname: str, method: str | None) -> tuple[str, ...]:
        _, defs = self._headers()
        by_base = self._by_base()
        names = {qualname.rsplit(".", 1)[-1]}
        candidates: list[str] = []
        frontier = list(names)
        while frontier:
            simple = frontier.pop()
            for module_name, name in by_base.get(simple, ()):
                candidate = f"{module_name}.{name}"
                if candidate == qualname or candidate in candidates:
                    continue
                candidates.append(candidate)
                if name not in names:
                    names.add(name)
                    frontier.append(name)
        return tuple(
            sorted(
                c
                for c in candidates
                if (method is None or method in defs.get(c.rsplit(".", 1)[0], ()))
                and self.is_subclass(c, qualname)
            )
        )

    def _by_base(self) -> dict[str, list[tuple[str, str]]]:
        """Identifier in a class's bases -> (module, class) it appears in."""
        if self._base_index is None:
            index: dict[str, list[tuple[str, str]]] = {}
            for module_name, found in self._headers()[0].items():
                for name, bases in found:
                    for ident in set(_IDENT.findall(bases)):
                        index.setdefault(ident, []).append((module_name, name))
            self._base_index = index
        return self._base_index

    def _headers(self) -> tuple[dict[str, list[tuple[str, str]]], dict[str, frozenset[str]]]:
        """Class headers and defined function names per module, from the file facts."""
        if self._class_headers is None:
            self.headers_used = True
            headers: dict[str, list[tuple[str, str]]] = {}
            defs: dict[str, frozenset[str]] = {}
            for module, facts in self.facts.all().items():
                if facts.classes:
                    headers[module] = list(facts.classes)
                    defs[module] = facts.defs
            self._class_headers = (headers, defs)
        return self._class_headers
