"""Source edits a fix is made of, applied with libcst so every comment, blank
line and formatting choice around them stays as it was.

A codemod describes its fix as edits anchored to the original source (a line,
a class, a method), never to text offsets: several findings' edits to one file
are resolved against one parse and applied together, so one fix cannot shift
another's lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


@dataclass(frozen=True)
class Before:
    """Insert `code` (statements) before the innermost statement holding `line`.
    Edits with one `once` key insert once per block: before the first of their
    anchors in each block (later ones in that block follow it)."""

    path: str
    line: int
    code: str
    once: str = ""


@dataclass(frozen=True)
class MoveIntoWith:
    """Move the innermost statement holding `line` to the start of the `with`
    statement that directly follows it in its block (into the guarded region)."""

    path: str
    line: int


@dataclass(frozen=True)
class AppendToMethod:
    """Append `code` to the end of method `method` of class `cls` (its name)."""

    path: str
    cls: str
    method: str
    code: str


@dataclass(frozen=True)
class AddMethod:
    """Add the method `code` at the end of class `cls`, unless it defines `name`."""

    path: str
    cls: str
    name: str
    code: str


@dataclass(frozen=True)
class EnsureImport:
    """`import <module>` after the module's last top-level import, unless present."""

    path: str
    module: str


Edit = Before | MoveIntoWith | AppendToMethod | AddMethod | EnsureImport


class EditError(Exception):
    """An edit's anchor is not in the source (the fix is dropped, with this reason)."""


def imported_as(source: str, module: str) -> str | None:
    """The name a top-level `import module [as alias]` binds, or None."""
    tree = cst.parse_module(source)
    for stmt in tree.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                if _dotted(alias.name) == module:
                    if alias.asname is None:
                        return module.split(".")[0]
                    return cst.ensure_type(alias.asname.name, cst.Name).value
    return None


def apply(source: str, edits: Sequence[Edit]) -> str:
    """`source` with `edits` applied (all anchored to `source` itself)."""
    if not edits:
        return source
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    statements = [
        (node, positions[node])
        for node in positions
        if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    ]
    before: dict[int, list[cst.BaseStatement]] = {}
    groups: dict[str, list[tuple[cst.CSTNode, Before]]] = {}
    for edit in sorted((e for e in edits if isinstance(e, Before)), key=lambda e: e.line):
        target = _innermost(statements, edit.line)
        groups.setdefault(edit.once or f"\0{id(edit)}", []).append((target, edit))
    for group in groups.values():
        target = _hoisted([t for t, _ in group], parents)
        new = _statements(group[0][1].code)
        queued = before.setdefault(id(target), [])
        if not any(n.deep_equals(new[0]) for n in queued):
            queued.extend(new)
    moved: set[int] = set()
    for edit in edits:
        if isinstance(edit, MoveIntoWith):
            target = _innermost(statements, edit.line)
            _guard_after(target, parents[target])  # raises when there is none
            moved.add(id(target))
    appended: dict[tuple[str, str], list[cst.BaseStatement]] = {}
    added: dict[str, list[cst.BaseStatement]] = {}
    for edit in edits:
        if isinstance(edit, AppendToMethod):
            appended.setdefault((edit.cls, edit.method), []).extend(_statements(edit.code))
        elif isinstance(edit, AddMethod) and not _defines(wrapper.module, edit.cls, edit.name):
            method, *rest = _statements(edit.code)
            method = method.with_changes(leading_lines=(cst.EmptyLine(indent=False),))
            added.setdefault(edit.cls, []).extend((method, *rest))
    imports = sorted({e.module for e in edits if isinstance(e, EnsureImport)})
    imports = [m for m in imports if imported_as(source, m) is None]
    inserter = _Inserter(before, appended, added, moved)
    module = wrapper.module.visit(inserter)
    for name in (*appended, *((c, "") for c in added)):
        if name not in inserter.done:
            raise EditError(f"no {'.'.join(n for n in name if n)} in the file to edit")
    if imports:
        module = _with_imports(module, imports)
    return module.code


def _innermost(statements, line: int) -> cst.CSTNode:
    """The deepest statement whose lines hold `line` (the one starting there first)."""
    holding = [(node, pos) for node, pos in statements if pos.start.line <= line <= pos.end.line]
    if not holding:
        raise EditError(f"no statement at line {line}")
    node, _ = min(holding, key=lambda np: (np[1].end.line - np[1].start.line, -np[1].start.line))
    return node


def _hoisted(targets: list[cst.CSTNode], parents) -> cst.CSTNode:
    """Where one insertion goes before all of `targets` (in source order): before
    the first one, lifted to the innermost block that holds them all (`if c:
    reset()` then `return`: before the `if`)."""
    chains = [_blocks(t, parents) for t in targets]
    common = set(map(id, (b for _, b in chains[0])))
    for chain in chains[1:]:
        common &= set(map(id, (b for _, b in chain)))
    return next(stmt for stmt, block in chains[0] if id(block) in common)


def _blocks(stmt: cst.CSTNode, parents) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(statement, the block holding it) from `stmt` out to its function's body."""
    chain = []
    node = stmt
    while True:
        block = parents[node]
        chain.append((node, block))
        outer = parents.get(block)
        while outer is not None and not isinstance(outer, cst.BaseStatement):
            outer = parents.get(outer)
        if outer is None or isinstance(outer, cst.FunctionDef | cst.ClassDef):
            return chain
        node = outer


def _guard_after(stmt: cst.CSTNode, block: cst.CSTNode) -> cst.With:
    """The `with` statement right after `stmt` in its block; EditError if none, or
    if the `with` reads a name the statement binds (it must run first)."""
    body = getattr(block, "body", ())
    index = next((i for i, s in enumerate(body) if s is stmt), None)
    after = body[index + 1] if index is not None and index + 1 < len(body) else None
    if not isinstance(after, cst.With) or not isinstance(after.body, cst.IndentedBlock):
        raise EditError("no guarded region right after the statement")
    bound = {
        n.value
        for small in getattr(stmt, "body", ())
        if isinstance(small, cst.Assign | cst.AnnAssign | cst.AugAssign)
        for target in getattr(small, "targets", ()) or (small,)
        for n in _names(getattr(target, "target", None))
    }
    used = {n.value for item in after.items for n in _names(item.item)}
    if bound & used:
        raise EditError("the guard's expression reads what the statement assigns")
    return after


def _names(node: cst.CSTNode | None) -> list[cst.Name]:
    """Every Name node inside `node`."""
    if node is None:
        return []
    found: list[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(Collect())
    return found


def _statements(code: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(code).body)


def _defines(module: cst.Module, cls: str, name: str) -> bool:
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == cls:
            return any(
                isinstance(s, cst.FunctionDef) and s.name.value == name for s in stmt.body.body
            )
    return False


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


class _Inserter(cst.CSTTransformer):
    """Applies the resolved insertions in one pass over the module."""

    def __init__(self, before, appended, added, moved) -> None:
        super().__init__()
        self.moved = moved  # statements that go to the start of the `with` after them
        self.done: set[tuple[str, str]] = set()  # (class, method) edited; (class, "") added to
        self.before = before
        self.appended = appended
        self.added = added
        self.classes: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
        name = self.classes.pop()
        extra = self.added.get(name)
        if extra and isinstance(updated.body, cst.IndentedBlock):
            self.done.add((name, ""))
            updated = updated.with_changes(
                body=updated.body.with_changes(body=(*updated.body.body, *extra))
            )
        return updated

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        key = (self.classes[-1] if self.classes else "", original.name.value)
        extra = self.appended.get(key)
        if extra and isinstance(updated.body, cst.IndentedBlock):
            self.done.add(key)
            body = updated.body.body
            # Before a trailing `return`, so the appended code runs.
            cut = len(body) - 1 if body and _returns(body[-1]) else len(body)
            updated = updated.with_changes(
                body=updated.body.with_changes(body=(*body[:cut], *extra, *body[cut:]))
            )
        return updated

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        if isinstance(updated, cst.IndentedBlock | cst.Module):
            body: list[cst.BaseStatement] = []
            changed = False
            carried: cst.BaseStatement | None = None
            for old, new in zip(original.body, updated.body, strict=True):
                extra = self.before.get(id(old))
                if extra:
                    changed = True
                    body.extend(extra)
                if id(old) in self.moved:
                    carried, changed = new, True
                    continue
                if carried is not None and isinstance(new, cst.With):
                    inner = cst.ensure_type(new.body, cst.IndentedBlock)
                    new = new.with_changes(body=inner.with_changes(body=(carried, *inner.body)))
                    carried = None
                body.append(new)
            if changed:
                updated = updated.with_changes(body=tuple(body))
        return updated


def _returns(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, cst.Return) for s in stmt.body
    )


def _with_imports(module: cst.Module, names: list[str]) -> cst.Module:
    """`import name` for each of `names`, after the last top-level import."""
    body = list(module.body)
    last = -1
    for index, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(s, cst.Import | cst.ImportFrom) for s in stmt.body
        ):
            last = index
    new = [cst.parse_statement(f"import {name}") for name in names]
    return module.with_changes(body=(*body[: last + 1], *new, *body[last + 1 :]))
