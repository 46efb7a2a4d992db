"""Build a ModuleSummary from one file's source with libcst.

The libcst tree lives only inside `summarise`: it is converted into the IR and
dropped, so memory stays flat however many files a run reads.
"""

from __future__ import annotations

import io
import re
import tokenize

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from syncscan.index import ir
from syncscan.index.summary import (
    ClassSummary,
    FunctionSummary,
    ImportBinding,
    ModuleSummary,
    Param,
    Suppression,
)

_SUPPRESSION = re.compile(r"#\s*syncscan:\s*ignore\[([A-Z0-9, ]+)\]\s*(.*)$")
_SANCTIONED = re.compile(r"#\s*gpu-sync-ok:\s*(\S.*)?$")

_COMPARE_OPS: dict[type, str] = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.Is: "is",
    cst.IsNot: "is not",
    cst.In: "in",
    cst.NotIn: "not in",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
}


class SummaryError(Exception):
    """The file could not be summarised (it does not parse)."""


def summarise(source: str, module: str, path: str, is_package: bool) -> ModuleSummary:
    try:
        tree = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SummaryError(f"does not parse: line {exc.raw_line}: {exc.message}") from exc
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    builder = _Builder(module, is_package, wrapper.resolve(PositionProvider))
    builder.module_body(tree.body)
    suppressions, sanctioned = _scan_comments(source)
    return ModuleSummary(
        module=module,
        path=path,
        is_package=is_package,
        imports=tuple(builder.imports),
        functions=builder.functions,
        classes=builder.classes,
        assigns=builder.assigns,
        suppressions=suppressions,
        sanctioned_sync_lines=sanctioned,
    )


def _scan_comments(source: str) -> tuple[tuple[Suppression, ...], tuple[int, ...]]:
    """Suppression and sanctioned-sync comments, by line.

    Only real comments count (tokenize), so a docstring that quotes the syntax
    suppresses nothing; files without the markers are not tokenized at all.
    """
    if "syncscan:" not in source and "gpu-sync-ok" not in source:
        return (), ()
    suppressions: list[Suppression] = []
    sanctioned: list[int] = []
    for number, text in comments(source):
        if match := _SUPPRESSION.search(text):
            codes = tuple(c.strip() for c in match.group(1).split(",") if c.strip())
            suppressions.append(Suppression(number, codes, match.group(2).strip()))
        if _SANCTIONED.search(text):
            sanctioned.append(number)
    return tuple(suppressions), tuple(sanctioned)


def comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment token in `source`."""
    found: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def scan_suppressions(source: str) -> tuple[Suppression, ...]:
    """The suppressions of a file the analysis did not need to summarise."""
    return _scan_comments(source)[0]


class _Builder:
    def __init__(self, module: str, is_package: bool, positions) -> None:
        self.module = module
        self.is_package = is_package
        self.positions = positions
        self.imports: list[ImportBinding] = []
        self.functions: dict[str, FunctionSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.assigns: dict[str, ir.Expr] = {}
        self._generator_stack: list[bool] = []
        self._nested_stack: list[tuple[str, list[FunctionSummary]]] = []

    # ------------------------------------------------------------------ positions
    def _pos(self, node: cst.CSTNode) -> tuple[int, int, int]:
        rng = self.positions[node]
        return rng.start.line, rng.start.column + 1, rng.end.line

    # ------------------------------------------------------------------ module
    def module_body(self, body) -> None:
        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                fn = self.function(stmt, f"{self.module}.{stmt.name.value}")
                self.functions[fn.name] = fn
            elif isinstance(stmt, cst.ClassDef):
                cls = self.class_def(stmt, f"{self.module}.{stmt.name.value}")
                self.classes[cls.name] = cls
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._module_small(small)
            elif isinstance(stmt, cst.If | cst.Try):
                # `if TYPE_CHECKING:` / `try: import x` blocks hold imports too.
                self._module_nested_imports(stmt)

    def _module_small(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Import | cst.ImportFrom):
            self.import_stmt(small)
        elif isinstance(small, cst.Assign) and small.value is not None:
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    self.assigns[target.target.value] = self.expr(small.value)
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            value = small.value if small.value is not None else small.annotation.annotation
            self.assigns[small.target.value] = self.expr(value)

    def _module_nested_imports(self, node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, cst.SimpleStatementLine):
                for small in child.body:
                    if isinstance(small, cst.Import | cst.ImportFrom):
                        self.import_stmt(small)
            elif isinstance(child, cst.FunctionDef | cst.ClassDef):
                continue
            else:
                self._module_nested_imports(child)

    # ------------------------------------------------------------------ imports
    def _absolute(self, relative: int, name: str | None) -> str:
        parts = self.module.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if relative > 1:
            parts = parts[: len(parts) - (relative - 1)]
        base = ".".join(parts)
        if name:
            return f"{base}.{name}" if base else name
        return base

    def import_stmt(self, node: cst.Import | cst.ImportFrom) -> None:
        line = self._pos(node)[0]
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _dotted_cst(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.imports.append(ImportBinding(alias.asname.name.value, full, line))
                else:
                    head = full.split(".")[0]
                    self.imports.append(ImportBinding(head, head, line))
            return
        relative = len(node.relative)
        module = _dotted_cst(node.module) if node.module is not None else None
        base = self._absolute(relative, module) if relative else (module or "")
        if isinstance(node.names, cst.ImportStar):
            self.imports.append(ImportBinding("*", base, line))
            return
        for alias in node.names:
            name = _dotted_cst(alias.name)
            if name is None:
                continue
            bound = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            target = f"{base}.{name}" if base else name
            self.imports.append(ImportBinding(bound, target, line))

    # ------------------------------------------------------------------ defs
    def class_def(self, node: cst.ClassDef, qualname: str) -> ClassSummary:
        methods: dict[str, FunctionSummary] = {}
        annotations: dict[str, ir.Expr] = {}
        assigns: dict[str, ir.Expr] = {}
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                fn = self.function(stmt, f"{qualname}.{stmt.name.value}")
                methods[fn.name] = fn
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        annotations[small.target.value] = self.expr(small.annotation.annotation)
                        if small.value is not None:
                            assigns[small.target.value] = self.expr(small.value)
                    elif isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                assigns[target.target.value] = self.expr(small.value)
        return ClassSummary(
            name=node.name.value,
            qualname=qualname,
            bases=tuple(self.expr(arg.value) for arg in node.bases),
            decorators=tuple(self.expr(d.decorator) for d in node.decorators),
            methods=methods,
            annotations=annotations,
            assigns=assigns,
            line=self._pos(node)[0],
        )

    def function(self, node: cst.FunctionDef, qualname: str) -> FunctionSummary:
        params: list[Param] = []
        p = node.params
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            params.append(
                Param(
                    param.name.value,
                    self.expr(param.annotation.annotation) if param.annotation else None,
                    self.expr(param.default) if param.default is not None else None,
                )
            )
        self._generator_stack.append(False)
        self._nested_stack.append((qualname, []))
        body = self.block(node.body)
        is_generator = self._generator_stack.pop()
        _, nested = self._nested_stack.pop()
        line, col, end_line = self._pos(node)
        return FunctionSummary(
            name=node.name.value,
            qualname=qualname,
            params=tuple(params),
            decorators=tuple(self.expr(d.decorator) for d in node.decorators),
            body=body,
            returns=self.expr(node.returns.annotation) if node.returns else None,
            line=line,
            col=col,
            end_line=end_line,
            is_generator=is_generator,
            nested=tuple(nested),
        )

    # ------------------------------------------------------------------ statements
    def block(self, node) -> tuple[ir.Stmt, ...]:
        if isinstance(node, cst.SimpleStatementSuite):
            out: list[ir.Stmt] = []
            for small in node.body:
                out.extend(self.small(small))
            return tuple(out)
        stmts: list[ir.Stmt] = []
        for stmt in node.body:
            stmts.extend(self.statement(stmt))
        return tuple(stmts)

    def statement(self, node: cst.BaseStatement) -> list[ir.Stmt]:
        line, col, _ = self._pos(node)
        if isinstance(node, cst.SimpleStatementLine):
            out: list[ir.Stmt] = []
            for small in node.body:
                out.extend(self.small(small))
            return out
        if isinstance(node, cst.If):
            return [self.if_stmt(node)]
        if isinstance(node, cst.For):
            return [
                ir.Loop(
                    line,
                    col,
                    self.expr(node.target),
                    self.expr(node.iter),
                    self.block(node.body),
                    self.block(node.orelse.body) if node.orelse else (),
                )
            ]
        if isinstance(node, cst.While):
            return [
                ir.Loop(
                    line,
                    col,
                    None,
                    self.expr(node.test),
                    self.block(node.body),
                    self.block(node.orelse.body) if node.orelse else (),
                )
            ]
        if isinstance(node, cst.With):
            items = tuple(
                ir.WithItem(
                    self.expr(item.item),
                    self.expr(item.asname.name) if item.asname else None,
                )
                for item in node.items
            )
            return [ir.With(line, col, items, self.block(node.body))]
        if isinstance(node, cst.Try | cst.TryStar):
            return [
                ir.Try(
                    line,
                    col,
                    self.block(node.body),
                    tuple(self.block(h.body) for h in node.handlers),
                    self.block(node.orelse.body) if node.orelse else (),
                    self.block(node.finalbody.body) if node.finalbody else (),
                )
            ]
        if isinstance(node, cst.Match):
            # Each case is one alternative; the subject is evaluated first.
            stmts: list[ir.Stmt] = [ir.Eval(line, col, self.expr(node.subject))]
            orelse: tuple[ir.Stmt, ...] = ()
            for case in reversed(node.cases):
                orelse = (ir.If(line, col, ir.Opaque(()), self.block(case.body), orelse),)
            return stmts + list(orelse)
        if isinstance(node, cst.FunctionDef) and self._nested_stack:
            # Not executed in place; kept for callbacks that run later.
            outer, nested = self._nested_stack[-1]
            nested.append(self.function(node, f"{outer}.<locals>.{node.name.value}"))
        return []

    def if_stmt(self, node: cst.If) -> ir.If:
        line, col, _ = self._pos(node)
        orelse: tuple[ir.Stmt, ...] = ()
        if isinstance(node.orelse, cst.If):
            orelse = (self.if_stmt(node.orelse),)
        elif isinstance(node.orelse, cst.Else):
            orelse = self.block(node.orelse.body)
        return ir.If(line, col, self.expr(node.test), self.block(node.body), orelse)

    def small(self, node: cst.BaseSmallStatement) -> list[ir.Stmt]:
        line, col, _ = self._pos(node)
        if isinstance(node, cst.Expr):
            return [ir.Eval(line, col, self.expr(node.value))]
        if isinstance(node, cst.Assign):
            targets = tuple(self.expr(t.target) for t in node.targets)
            return [ir.Assign(line, col, targets, self.expr(node.value))]
        if isinstance(node, cst.AnnAssign):
            value = self.expr(node.value) if node.value is not None else None
            return [
                ir.Assign(
                    line,
                    col,
                    (self.expr(node.target),),
                    value,
                    self.expr(node.annotation.annotation),
                )
            ]
        if isinstance(node, cst.AugAssign):
            op = type(node.operator).__name__
            return [
                ir.Assign(line, col, (self.expr(node.target),), self.expr(node.value), None, op)
            ]
        if isinstance(node, cst.Return):
            value = self.expr(node.value) if node.value is not None else None
            return [ir.Return(line, col, value)]
        if isinstance(node, cst.Raise):
            value = self.expr(node.exc) if node.exc is not None else None
            return [ir.Raise(line, col, value)]
        if isinstance(node, cst.Assert):
            return [ir.Eval(line, col, self.expr(node.test))]
        if isinstance(node, cst.Import | cst.ImportFrom):
            # Imports inside functions bind names like module-level ones.
            self.import_stmt(node)
            return []
        return []

    # ------------------------------------------------------------------ expressions
    def expr(self, node: cst.CSTNode | None) -> ir.Expr:
        if node is None:
            return ir.Opaque(())
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return ir.Const(node.value == "True")
            if node.value == "None":
                return ir.Const(None)
            return ir.Name(node.value)
        if isinstance(node, cst.Attribute):
            return ir.Attr(self.expr(node.value), node.attr.value)
        if isinstance(node, cst.Call):
            args: list[ir.Expr] = []
            kwargs: list[tuple[str, ir.Expr]] = []
            for arg in node.args:
                value = self.expr(arg.value)
                if arg.keyword is not None:
                    kwargs.append((arg.keyword.value, value))
                elif arg.star == "**":
                    kwargs.append(("**", value))
                elif arg.star == "*":
                    args.append(ir.Opaque((value,)))
                else:
                    args.append(value)
            line, col, end_line = self._pos(node)
            return ir.Call(self.expr(node.func), tuple(args), tuple(kwargs), line, col, end_line)
        if isinstance(node, cst.Subscript):
            elements = node.slice
            is_slice = any(isinstance(e.slice, cst.Slice) for e in elements)
            parts: list[ir.Expr] = []
            for element in elements:
                if isinstance(element.slice, cst.Index):
                    parts.append(self.expr(element.slice.value))
                else:
                    sl = element.slice
                    parts.extend(
                        self.expr(x) for x in (sl.lower, sl.upper, sl.step) if x is not None
                    )
            index = parts[0] if len(parts) == 1 and not is_slice else ir.Opaque(tuple(parts))
            return ir.Subscript(self.expr(node.value), index, is_slice)
        if isinstance(node, cst.Integer | cst.Float):
            try:
                return ir.Const(
                    int(node.value) if isinstance(node, cst.Integer) else float(node.value)
                )
            except ValueError:
                return ir.Const(node.value)
        if isinstance(node, cst.SimpleString):
            try:
                return ir.Const(
                    node.evaluated_value if isinstance(node.evaluated_value, str) else None
                )
            except Exception:  # noqa: BLE001 - odd literal prefixes
                return ir.Const(None)
        if isinstance(node, cst.BooleanOperation):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            return ir.BoolOp(op, (self.expr(node.left), self.expr(node.right)))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return ir.Not(self.expr(node.expression))
            return ir.Opaque((self.expr(node.expression),))
        if isinstance(node, cst.Comparison):
            ops = tuple(_COMPARE_OPS.get(type(c.operator), "?") for c in node.comparisons)
            comps = tuple(self.expr(c.comparator) for c in node.comparisons)
            return ir.Compare(self.expr(node.left), ops, comps)
        if isinstance(node, cst.BinaryOperation):
            return ir.BinOp(
                type(node.operator).__name__, self.expr(node.left), self.expr(node.right)
            )
        if isinstance(node, cst.IfExp):
            return ir.IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, cst.List | cst.Tuple | cst.Set):
            return ir.Seq(tuple(self.expr(e.value) for e in node.elements))
        if isinstance(node, cst.ListComp | cst.GeneratorExp | cst.SetComp):
            iters: list[ir.Expr] = []
            comp = node.for_in
            while comp is not None:
                iters.append(self.expr(comp.iter))
                comp = comp.inner_for_in
            return ir.Comp(self.expr(node.elt), tuple(iters))
        if isinstance(node, cst.NamedExpr) and isinstance(node.target, cst.Name):
            return ir.NamedExpr(node.target.value, self.expr(node.value))
        if isinstance(node, cst.Yield):
            if self._generator_stack:
                self._generator_stack[-1] = True
            value = node.value
            if isinstance(value, cst.From):
                value = value.item
            return ir.Yield(self.expr(value) if value is not None else None)
        if isinstance(node, cst.Await):
            return self.expr(node.expression)
        if isinstance(node, cst.Lambda):
            return ir.Opaque(())
        if isinstance(node, cst.StarredElement):
            return ir.Opaque((self.expr(node.value),))
        if isinstance(node, cst.DictComp):
            return ir.Opaque(
                (self.expr(node.key), self.expr(node.value), self.expr(node.for_in.iter))
            )
        # Anything else: keep the sub-expressions (evaluation order preserved).
        parts = tuple(
            self.expr(child)
            for child in node.children
            if isinstance(
                child,
                cst.BaseExpression | cst.DictElement | cst.Element | cst.FormattedStringExpression,
            )
        )
        return ir.Opaque(parts)


def _dotted_cst(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted_cst(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None
