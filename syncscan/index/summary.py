"""ModuleSummary: everything the analysis needs from one file, as plain data.

A summary is a pure function of the file's bytes and its module name, so it
is the unit of caching: serialise it with `summary_to_data`, read it back with
`summary_from_data`, and the analysis cannot tell the difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from syncscan.index import reads
from syncscan.index.ir import (
    Expr,
    Stmt,
    from_data,
    self_assignments,
    self_attribute_names,
)


class SummaryError(Exception):
    """The file could not be summarised (it does not parse); `line` where, 0 if unknown."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Param:
    name: str
    annotation: Expr | None
    default: Expr | None


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    qualname: str  # module-qualified: pkg.mod.Class.method
    params: tuple[Param, ...]
    decorators: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    returns: Expr | None
    line: int  # of the `def`
    col: int
    end_line: int
    is_generator: bool
    header_line: int  # of the first decorator (the `def` when undecorated)
    nested: tuple[FunctionSummary, ...] = ()  # functions defined in the body (callbacks)

    @property
    def flag_params(self) -> frozenset[str]:
        """Parameters with a boolean default (`dummy_run=False`): candidate modes."""
        from syncscan.index.ir import Const

        return frozenset(
            p.name
            for p in self.params
            if isinstance(p.default, Const) and isinstance(p.default.value, bool)
        )

    @property
    def self_assignments(self) -> tuple[tuple[str, Expr | None, Expr | None], ...]:
        """(attr, value, annotation) of every `self.attr = value` / `self.attr: T`
        in the body. The type oracle reads them in every method of a class, most
        of which no walk enters: a cached summary keeps them beside the body."""
        return _DERIVED["self_assignments"](self.body)

    @property
    def self_attributes(self) -> tuple[str, ...] | None:
        """Names the body reads or writes as `self.<name>`, or None where it
        passes `self` on (flow/attributes.py reads every method of a class)."""
        return _DERIVED["self_attributes"](self.body)

    def has_decorator(self, *names: str) -> bool:
        from syncscan.index.ir import Call, dotted

        for deco in self.decorators:
            target = deco.func if isinstance(deco, Call) else deco
            name = dotted(target)
            if name is not None and (name in names or name.split(".")[-1] in names):
                return True
        return False


# The facts a summary keeps beside each body, from the body.
_DERIVED: dict[str, Callable[[tuple[Stmt, ...]], Any]] = {
    "self_assignments": lambda body: tuple(self_assignments(body)),
    "self_attributes": self_attribute_names,
}


@dataclass(frozen=True)
class ClassSummary:
    name: str
    qualname: str
    bases: tuple[Expr, ...]
    decorators: tuple[Expr, ...]
    methods: dict[str, FunctionSummary]
    annotations: dict[str, Expr]  # class-level `x: T` and `x: T = v`
    assigns: dict[str, Expr]  # class-level `x = v`
    line: int


@dataclass(frozen=True)
class ImportBinding:
    """`name` in this module refers to `target` (a dotted module path)."""

    name: str
    target: str
    line: int


@dataclass(frozen=True)
class ModuleSummary:
    module: str
    path: str
    is_package: bool
    imports: tuple[ImportBinding, ...]
    functions: dict[str, FunctionSummary]
    classes: dict[str, ClassSummary]
    assigns: dict[str, Expr]  # module-level `NAME = value`
    # (line, marker) of each `# some-marker: why` comment (index/comments.py).
    marker_comments: tuple[tuple[int, str], ...] = field(default=())


def find_function(summary: ModuleSummary, qualname: str) -> FunctionSummary | None:
    """The function (method, nested function) of `summary` with this qualname."""
    return next(_with_qualname(summary, qualname), None)


def functions_named(summary: ModuleSummary, qualname: str) -> list[FunctionSummary]:
    """Every function of `summary` with this qualname (two nested `def`s in the
    branches of an `if` share one)."""
    return list(_with_qualname(summary, qualname))


def _with_qualname(summary: ModuleSummary, qualname: str) -> Iterator[FunctionSummary]:
    pending = [*summary.functions.values()]
    for cls in summary.classes.values():
        pending.extend(cls.methods.values())
    while pending:
        function = pending.pop()
        if function.qualname == qualname:
            yield function
        pending.extend(function.nested)


def find_class(summary: ModuleSummary, qualname: str) -> ClassSummary | None:
    """The top-level class of `summary` with this qualname."""
    for cls in summary.classes.values():
        if cls.qualname == qualname:
            return cls
    return None


def module_header(summary: ModuleSummary) -> tuple:
    """What a module holds outside its classes' and functions' contents
    (reads.py's "module" item)."""
    return (
        summary.module,
        summary.path,
        summary.is_package,
        summary.imports,
        tuple(summary.functions),
        tuple(summary.classes),
        summary.assigns,
        summary.marker_comments,
    )


class Binding(NamedTuple):
    """What one name of a module's own level stands for, in the order name
    resolution asks: a class, a function, the first import binding it, a
    module-level assignment (None each where it is not one)."""

    cls: ClassSummary | None
    function: FunctionSummary | None
    target: str | None
    value: Expr | None


def binding(summary: ModuleSummary, name: str) -> Binding:
    """`name` in `summary`, its read noted as that name's item alone (reads.py
    "name"): a function added to the module leaves the other names' items as
    they were."""
    values = summary.__dict__
    known = values.get("_bindings")
    if known is None:
        known = values["_bindings"] = {}
    found = known.get(name)
    if found is None:  # name resolution asks the same names again and again
        found = known[name] = (
            reads.item(values["module"], "name", name),
            Binding(
                values["classes"].get(name),
                values["functions"].get(name),
                _import_table(summary).get(name),
                values["assigns"].get(name),
            ),
        )
    reads.note(found[0])
    return found[1]


def binding_key(summary: ModuleSummary, name: str) -> tuple:
    """A name's binding as two summaries of a module compare it; the class's
    and function's contents are items of their own."""
    found = binding(summary, name)
    return (
        found.cls.qualname if found.cls is not None else None,
        found.function.qualname if found.function is not None else None,
        found.target,
        found.value,
    )


def star_imports(summary: ModuleSummary) -> tuple[str, ...]:
    """The modules `from m import *` binds names from, in order (item "stars")."""
    reads.note(reads.item(summary.module, "stars"))
    return tuple(b.target for b in _unnoted(summary, "imports") if b.name == "*")


def markers(summary: ModuleSummary) -> tuple[tuple[int, str], ...]:
    """The module's marker comments (item "markers")."""
    reads.note(reads.item(summary.module, "markers"))
    return _unnoted(summary, "marker_comments")


def markers_unnoted(summary: ModuleSummary) -> tuple[tuple[int, str], ...]:
    """The module's marker comments where the analysis does not read them, but
    checks that a kept walk still stands beside them (flow/root_record.py)."""
    return _unnoted(summary, "marker_comments")


def imports_unnoted(summary: ModuleSummary) -> tuple[ImportBinding, ...]:
    """The module's imports for what is not the analysis (guessing the next
    files to summarise): no read is noted."""
    return _unnoted(summary, "imports")


def _unnoted(summary: ModuleSummary, name: str) -> Any:
    return summary.__dict__[name]


def _import_table(summary: ModuleSummary) -> dict[str, str]:
    """Name -> target of the module's imports, the first binding of a name
    winning (made once per summary)."""
    values = summary.__dict__
    table = values.get("_import_table")
    if table is None:
        table = {}
        for found in values["imports"]:
            table.setdefault(found.name, found.target)
        values["_import_table"] = table
    return table


def class_header(cls: ClassSummary) -> tuple:
    """What a class holds outside its methods' contents (reads.py's "class"
    item) but its line, which moves.py compares as the line the rest is
    relative to."""
    return (cls.name, cls.qualname, cls.bases, cls.decorators, cls.annotations, cls.assigns)


def method_named(cls: ClassSummary, name: str) -> FunctionSummary | None:
    """The class's own method `name`, its read noted as that name's item alone
    (reads.py "method"): a method added under another name leaves it as it was."""
    _note_class(cls, "method", f".{name}")
    return cls.__dict__["methods"].get(name)


def class_self_assignments(
    cls: ClassSummary,
) -> tuple[tuple[FunctionSummary, tuple[tuple[str, Expr | None, Expr | None], ...]], ...]:
    """(method, its `self.x = ...` assignments) for each method of the class
    that makes any, read as one item (reads.py "class-assigned"): a method
    added that assigns nothing through `self` leaves it as it was."""
    _note_class(cls, "class-assigned")
    with reads.paused():
        found = ((m, m.self_assignments) for m in cls.__dict__["methods"].values())
        return tuple((method, assigned) for method, assigned in found if assigned)


def class_self_attributes(cls: ClassSummary) -> frozenset[str] | None:
    """The names the class's methods read or write through `self`, None where
    one passes `self` on; read as one item (reads.py "class-attributes")."""
    _note_class(cls, "class-attributes")
    names: set[str] = set()
    with reads.paused():
        for method in cls.__dict__["methods"].values():
            found = method.self_attributes
            if found is None:
                return None
            names.update(found)
    return frozenset(names)


def _note_class(cls: ClassSummary, kind: str, member: str = "") -> None:
    """Note item `kind` of a recorded class (of its `member`, `.name`)."""
    values = cls.__dict__
    if reads.LOG is not None and "_module" in values:
        reads.note(reads.item(values["_module"], kind, values["qualname"] + member))


# The JSON writer of IR trees, compact: a summary (cache.py) and each function's
# body in it. A tree holds no cycles: no per-container check for one. A body is
# the JSON text of its IR, a string in the summary's JSON: a run reads a few of
# the bodies of each module it loads (an edit's run on vLLM 0.33.0 loads 68
# summaries); read as text, a summary parses in a third of the time (bodies are
# 79 % of its bytes), and a body parses when it is first used.
TREES = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def _body_from_text(text: Any) -> tuple[Stmt, ...]:
    """A body as `summary_to_data` writes it (DECODE_ERRORS where it is not one)."""
    if type(text) is not str:
        raise TypeError("a damaged body")
    return from_data(json.loads(text))


def summary_to_data(summary: ModuleSummary) -> dict[str, Any]:
    """A JSON-compatible form; functions are positional lists (compact, fast to
    read), each body its IR's JSON text (`TREES`). IR nodes are tuples
    `json` writes as arrays as they stand (ir.py)."""

    def fn(f: FunctionSummary) -> list[Any]:
        return [
            f.name,
            f.qualname,
            [[p.name, p.annotation, p.default] for p in f.params],
            f.decorators,
            TREES.encode(f.body),
            f.returns,
            [f.line, f.col, f.end_line, f.header_line],
            f.is_generator,
            [fn(n) for n in f.nested],
            f.self_assignments,
            f.self_attributes,
        ]

    return {
        "module": summary.module,
        "path": summary.path,
        "is_package": summary.is_package,
        "imports": [[i.name, i.target, i.line] for i in summary.imports],
        "functions": {k: fn(v) for k, v in summary.functions.items()},
        "classes": {
            k: [
                c.name,
                c.qualname,
                c.bases,
                c.decorators,
                {m: fn(f) for m, f in c.methods.items()},
                c.annotations,
                c.assigns,
                c.line,
            ]
            for k, c in summary.classes.items()
        },
        "assigns": summary.assigns,
        "marker_comments": [list(pair) for pair in summary.marker_comments],
    }


class DamagedEntryError(ValueError):
    """A cached function body could not be decoded and nothing could rebuild it."""


# What decoding damaged data can raise: a wrong shape, an unknown tag, nesting
# deeper than a recursive decoder can follow.
DECODE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)

# Given a function's qualname, the function summarised afresh from the source.
Rebuild = Callable[[str], FunctionSummary]


def _params_from_data(raw: Any) -> tuple[Param, ...]:
    return tuple(Param(n, from_data(a), from_data(v)) for n, a, v in raw)


def _assignments_from_data(raw: Any) -> tuple[tuple[str, Expr | None, Expr | None], ...]:
    found = tuple((a, v, n) for a, v, n in from_data(raw))
    if not all(type(a) is str for a, _, _ in found):
        raise TypeError("a damaged self-assignment")
    return found


def _names_from_data(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if type(raw) is not list or not all(type(n) is str for n in raw):
        raise TypeError("damaged attribute names")
    return tuple(raw)


def _same_fields(summary: Any, other: object, kind: type) -> bool:
    """Field-wise equality across a recorded summary and a plain one (a
    dataclass's own `__eq__` asks for the same class)."""
    if not isinstance(other, kind):
        return NotImplemented
    return all(getattr(summary, f.name) == getattr(other, f.name) for f in fields(kind))


def _items_of(summary: Any, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """A function's or class's items (reads.py), one per kind, made on the
    first read a run notes: most functions of a loaded module are never read."""
    values = summary.__dict__
    found = values.get("_items")
    if found is None:
        module, qualname = values["_module"], values["qualname"]
        found = values["_items"] = tuple(reads.item(module, kind, qualname) for kind in kinds)
    return found


def _noting(name: str, kind: int = 0) -> property:
    """A field whose read is noted in `reads.LOG`: item `kind` of the owner's
    `_read_items()` (a function has three, a class two)."""

    def get(self: Any) -> Any:
        log = reads.LOG
        if log is not None:
            log.add(self._read_items()[kind])
        return self.__dict__[name]

    return property(get)


class _CachedFunction(FunctionSummary):
    """A function as the program hands it out: read from the cache (its body,
    parameters, decorators and return annotation decoded on first use) or
    freshly built (`recorded`), every field read noted in `reads.LOG`.

    A run loads whole modules but walks few of their functions, and decoding
    them was most of a warm run's loading time (parameters alone, half of what
    is left once bodies wait). Decoding late means damage is found late,
    outside the cache's guarded read: then the function is rebuilt from the
    source (which also replaces the cache entry).
    """

    def _decoded(
        self, name: str, decode: Callable[[Any], Any], kind: int | None = 0, derived: bool = False
    ) -> Any:
        """The field `name`, decoded on first use, its read noted as item `kind`
        (None: not noted). Missing or damaged, a fact `derived` from the body is
        derived again; anything else is rebuilt from the source."""
        values = self.__dict__
        log = reads.LOG
        if log is not None and kind is not None:
            log.add(self._read_items()[kind])
        key = f"_{name}"
        if key not in values:
            try:
                values[key] = decode(values.pop(f"_raw_{name}"))
            except DECODE_ERRORS as exc:
                values[key] = self._recovered(name, derived, exc)
        return values[key]

    def _read_items(self) -> tuple[str, ...]:
        return _items_of(self, reads.FUNCTION_KINDS)

    def _recovered(self, name: str, derived: bool, damage: Exception) -> Any:
        if derived:  # from the body, which counts as read only where it is
            return _DERIVED[name](self._decoded("body", _body_from_text, None))
        rebuild: Rebuild | None = self.__dict__.get("_rebuild")
        if rebuild is None:
            raise DamagedEntryError(f"damaged cache entry for {self.qualname}") from damage
        return getattr(rebuild(self.qualname), name)

    @property
    def body(self) -> tuple[Stmt, ...]:  # type: ignore[override]
        return self._decoded("body", _body_from_text)

    @property
    def params(self) -> tuple[Param, ...]:  # type: ignore[override]
        return self._decoded("params", _params_from_data)

    @property
    def decorators(self) -> tuple[Expr, ...]:  # type: ignore[override]
        return self._decoded("decorators", from_data)

    @property
    def returns(self) -> Expr | None:  # type: ignore[override]
        return self._decoded("returns", from_data)

    @property
    def self_assignments(self) -> tuple[tuple[str, Expr | None, Expr | None], ...]:  # type: ignore[override]
        return self._decoded("self_assignments", _assignments_from_data, 1, derived=True)

    @property
    def self_attributes(self) -> tuple[str, ...] | None:  # type: ignore[override]
        return self._decoded("self_attributes", _names_from_data, 2, derived=True)

    # Positions are read like the rest: a finding carries them.
    line = _noting("line")  # type: ignore[assignment]
    col = _noting("col")  # type: ignore[assignment]
    end_line = _noting("end_line")  # type: ignore[assignment]
    header_line = _noting("header_line")  # type: ignore[assignment]
    is_generator = _noting("is_generator")  # type: ignore[assignment]
    nested = _noting("nested")  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        """Equal to a freshly built summary of the same function."""
        return _same_fields(self, other, FunctionSummary)

    __hash__ = FunctionSummary.__hash__


class _RecordedClass(ClassSummary):
    """A class as the program hands it out, every field but its names noted
    in `reads.LOG` when read: its methods as the set of them ("methods"),
    the rest as its header ("class")."""

    bases = _noting("bases")  # type: ignore[assignment]
    decorators = _noting("decorators")  # type: ignore[assignment]
    methods = _noting("methods", 1)  # type: ignore[assignment]
    annotations = _noting("annotations")  # type: ignore[assignment]
    assigns = _noting("assigns")  # type: ignore[assignment]
    line = _noting("line")  # type: ignore[assignment]

    def _read_items(self) -> tuple[str, ...]:
        return _items_of(self, ("class", "methods"))

    def __eq__(self, other: object) -> bool:
        """Equal to a freshly built summary of the same class."""
        return _same_fields(self, other, ClassSummary)

    __hash__ = ClassSummary.__hash__


class _RecordedModule(ModuleSummary):
    """A module as the program hands it out: a read of its own level through
    a field notes the whole of it ("module"); name resolution reads one name
    at a time (`binding`, `star_imports`, `markers`)."""

    imports = _noting("imports")  # type: ignore[assignment]
    functions = _noting("functions")  # type: ignore[assignment]
    classes = _noting("classes")  # type: ignore[assignment]
    assigns = _noting("assigns")  # type: ignore[assignment]
    marker_comments = _noting("marker_comments")  # type: ignore[assignment]

    def _read_items(self) -> tuple[str]:
        return (reads.item(self.__dict__["module"], "module"),)

    def __eq__(self, other: object) -> bool:
        """Equal to a freshly built summary of the same module."""
        return _same_fields(self, other, ModuleSummary)

    __hash__ = ModuleSummary.__hash__


_FUNCTION_FIELDS = tuple(f.name for f in fields(FunctionSummary))
_CLASS_FIELDS = tuple(f.name for f in fields(ClassSummary))
_MODULE_FIELDS = tuple(f.name for f in fields(ModuleSummary))
# The fields a cached function decodes on first use (kept as `_raw_<f>`, then `_<f>`).
_DECODED_LATE = frozenset({"params", "decorators", "body", "returns"})


def _recorded_function(module: str, **values: Any) -> FunctionSummary:
    """A function of `module` noting its reads: `values` hold its plain fields
    (names, positions, nested) and, per late field, `_raw_<f>` (decoded on first
    use) or `_<f>` (decoded already)."""
    function = object.__new__(_CachedFunction)
    function.__dict__.update(values, _module=module)
    return function


def _recorded_class(module: str, **values: Any) -> ClassSummary:
    cls = object.__new__(_RecordedClass)
    cls.__dict__.update(values, _module=module)
    return cls


def recorded(summary: ModuleSummary) -> ModuleSummary:
    """A freshly built summary whose own level, functions and classes note
    their reads, as those read from the cache do."""
    if isinstance(summary, _RecordedModule):
        return summary
    module = summary.module

    def fn(f: FunctionSummary) -> FunctionSummary:
        if isinstance(f, _CachedFunction):
            return f
        values = {
            f"_{name}" if name in _DECODED_LATE else name: getattr(f, name)
            for name in _FUNCTION_FIELDS
        }
        values["nested"] = tuple(fn(n) for n in f.nested)
        return _recorded_function(module, **values, _rebuild=None)

    def cls(c: ClassSummary) -> ClassSummary:
        if isinstance(c, _RecordedClass):
            return c
        values = {name: getattr(c, name) for name in _CLASS_FIELDS}
        values["methods"] = {m: fn(f) for m, f in c.methods.items()}
        return _recorded_class(module, **values)

    values = {name: getattr(summary, name) for name in _MODULE_FIELDS}
    values["functions"] = {k: fn(v) for k, v in summary.functions.items()}
    values["classes"] = {k: cls(c) for k, c in summary.classes.items()}
    return _recorded_module(**values)


def at_path(summary: ModuleSummary, path: str) -> ModuleSummary:
    """The summary of a file with the same bytes and module name at `path`
    (a cache entry serves copies of one file)."""
    values = {name: _unnoted(summary, name) for name in _MODULE_FIELDS}
    return _recorded_module(**{**values, "path": path})


def _recorded_module(**values: Any) -> ModuleSummary:
    found = object.__new__(_RecordedModule)
    found.__dict__.update(values)
    return found


def summary_from_data(data: dict[str, Any], rebuild: Rebuild | None = None) -> ModuleSummary:
    """Inverse of `summary_to_data`; `rebuild` recovers a function found damaged later."""
    if not isinstance(data, dict):
        raise TypeError("a summary is a JSON object")
    module = data["module"]
    if type(module) is not str:
        raise TypeError("a damaged summary")

    def fn(d: list[Any]) -> FunctionSummary:
        name, qualname, params, decorators, body, returns, pos, is_generator, nested, *derived = d
        assigned, attributes = derived
        return _recorded_function(
            module,
            _raw_self_assignments=assigned,
            _raw_self_attributes=attributes,
            name=name,
            qualname=qualname,
            _raw_params=params,
            _raw_decorators=decorators,
            _raw_body=body,
            _rebuild=rebuild,
            _raw_returns=returns,
            line=pos[0],
            col=pos[1],
            end_line=pos[2],
            header_line=pos[3],
            is_generator=is_generator,
            nested=tuple(fn(n) for n in nested),
        )

    def cls(c: list[Any]) -> ClassSummary:
        name, qualname, bases, decorators, methods, annotations, assigns, line = c
        return _recorded_class(
            module,
            name=name,
            qualname=qualname,
            bases=from_data(bases),
            decorators=from_data(decorators),
            methods={m: fn(f) for m, f in methods.items()},
            annotations={a: from_data(e) for a, e in annotations.items()},
            assigns={a: from_data(e) for a, e in assigns.items()},
            line=line,
        )

    imports = tuple(ImportBinding(n, t, ln) for n, t, ln in data["imports"])
    if not (
        type(data["path"]) is str
        and all(type(i.name) is str and type(i.target) is str for i in imports)
    ):
        raise TypeError("a damaged summary")  # what resolution reads as text must be text
    return _recorded_module(
        module=module,
        path=data["path"],
        is_package=data["is_package"],
        imports=imports,
        functions={k: fn(v) for k, v in data["functions"].items()},
        classes={k: cls(c) for k, c in data["classes"].items()},
        assigns={k: from_data(v) for k, v in data["assigns"].items()},
        marker_comments=tuple((int(line), str(marker)) for line, marker in data["marker_comments"]),
    )
