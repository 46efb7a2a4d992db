"""ModuleSummary: everything the analysis needs from one file, as plain data.

A summary is a pure function of the file's bytes and its module name, so it
is the unit of caching: serialise it with `to_data`, read it back with
`summary_from_data`, and the analysis cannot tell the difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from syncscan.index.ir import Expr, Stmt, from_data, to_data


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
    line: int
    col: int
    end_line: int
    is_generator: bool
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

    def has_decorator(self, *names: str) -> bool:
        from syncscan.index.ir import Call, dotted

        for deco in self.decorators:
            target = deco.func if isinstance(deco, Call) else deco
            name = dotted(target)
            if name is not None and (name in names or name.split(".")[-1] in names):
                return True
        return False


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
class Suppression:
    line: int
    codes: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class ModuleSummary:
    module: str
    path: str
    is_package: bool
    imports: tuple[ImportBinding, ...]
    functions: dict[str, FunctionSummary]
    classes: dict[str, ClassSummary]
    assigns: dict[str, Expr]  # module-level `NAME = value`
    suppressions: tuple[Suppression, ...] = field(default=())
    sanctioned_sync_lines: tuple[int, ...] = field(default=())


def summary_to_data(summary: ModuleSummary) -> dict[str, Any]:
    def fn(f: FunctionSummary) -> dict[str, Any]:
        return {
            "name": f.name,
            "qualname": f.qualname,
            "params": [[p.name, to_data(p.annotation), to_data(p.default)] for p in f.params],
            "decorators": to_data(f.decorators),
            "body": to_data(f.body),
            "returns": to_data(f.returns),
            "pos": [f.line, f.col, f.end_line],
            "is_generator": f.is_generator,
            "nested": [fn(n) for n in f.nested],
        }

    return {
        "module": summary.module,
        "path": summary.path,
        "is_package": summary.is_package,
        "imports": [[i.name, i.target, i.line] for i in summary.imports],
        "functions": {k: fn(v) for k, v in summary.functions.items()},
        "classes": {
            k: {
                "name": c.name,
                "qualname": c.qualname,
                "bases": to_data(c.bases),
                "decorators": to_data(c.decorators),
                "methods": {m: fn(f) for m, f in c.methods.items()},
                "annotations": {a: to_data(e) for a, e in c.annotations.items()},
                "assigns": {a: to_data(e) for a, e in c.assigns.items()},
                "line": c.line,
            }
            for k, c in summary.classes.items()
        },
        "assigns": {k: to_data(v) for k, v in summary.assigns.items()},
        "suppressions": [[s.line, list(s.codes), s.reason] for s in summary.suppressions],
        "sanctioned_sync_lines": list(summary.sanctioned_sync_lines),
    }


def summary_from_data(data: dict[str, Any]) -> ModuleSummary:
    def fn(d: dict[str, Any]) -> FunctionSummary:
        return FunctionSummary(
            name=d["name"],
            qualname=d["qualname"],
            params=tuple(Param(n, from_data(a), from_data(v)) for n, a, v in d["params"]),
            decorators=from_data(d["decorators"]),
            body=from_data(d["body"]),
            returns=from_data(d["returns"]),
            line=d["pos"][0],
            col=d["pos"][1],
            end_line=d["pos"][2],
            is_generator=d["is_generator"],
            nested=tuple(fn(n) for n in d["nested"]),
        )

    return ModuleSummary(
        module=data["module"],
        path=data["path"],
        is_package=data["is_package"],
        imports=tuple(ImportBinding(n, t, ln) for n, t, ln in data["imports"]),
        functions={k: fn(v) for k, v in data["functions"].items()},
        classes={
            k: ClassSummary(
                name=c["name"],
                qualname=c["qualname"],
                bases=from_data(c["bases"]),
                decorators=from_data(c["decorators"]),
                methods={m: fn(f) for m, f in c["methods"].items()},
                annotations={a: from_data(e) for a, e in c["annotations"].items()},
                assigns={a: from_data(e) for a, e in c["assigns"].items()},
                line=c["line"],
            )
            for k, c in data["classes"].items()
        },
        assigns={k: from_data(v) for k, v in data["assigns"].items()},
        suppressions=tuple(
            Suppression(ln, tuple(codes), reason) for ln, codes, reason in data["suppressions"]
        ),
        sanctioned_sync_lines=tuple(data["sanctioned_sync_lines"]),
    )
