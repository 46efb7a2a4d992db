"""Build a ModuleSummary from one file's source with the standard library `ast`.

The index needs structure and line numbers only, which `ast` (CPython's own C
parser) gives many times faster than a concrete syntax tree; the comments it
drops come from tokenize, and only for files that carry markers. The tree lives
only inside `summarise`: it is converted into the IR and dropped, so memory
stays flat however many files a run reads.

Summaries keep the shape they had when built with libcst: columns are 1-based
and count characters (`ast` counts UTF-8 bytes), implicitly concatenated strings
keep one part per literal, a non-decimal int keeps its source text and
`x[(a, b)]` stays one index. Those details are read from the source bytes.
"""

from __future__ import annotations

import ast
import gc
import re
import warnings
from bisect import bisect_left
from collections.abc import Callable, Iterator
from functools import cached_property
from itertools import accumulate

from syncscan.index import ir
from syncscan.index.comments import marker_comments
from syncscan.index.summary import (
    ClassSummary,
    FunctionSummary,
    ImportBinding,
    ModuleSummary,
    Param,
    SummaryError,
)

_COMPARE_OPS: dict[type, str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}

# Operator names as summaries spell them (`x += 1` is "AddAssign").
_BIN_OPS: dict[type, str] = {
    ast.Add: "Add",
    ast.Sub: "Subtract",
    ast.Mult: "Multiply",
    ast.Div: "Divide",
    ast.FloorDiv: "FloorDivide",
    ast.Mod: "Modulo",
    ast.Pow: "Power",
    ast.LShift: "LeftShift",
    ast.RShift: "RightShift",
    ast.BitOr: "BitOr",
    ast.BitAnd: "BitAnd",
    ast.BitXor: "BitXor",
    ast.MatMult: "MatrixMultiply",
}
_AUG_OPS: dict[type, str] = {op: f"{name}Assign" for op, name in _BIN_OPS.items()}

# One string literal (prefix, quotes, body), and what may separate two of them.
_STRING_LITERAL = re.compile(
    rb"[A-Za-z]{0,2}(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\""
    rb"|'(?:[^'\\\r\n]|\\(?:\r\n|.))*'|\"(?:[^\"\\\r\n]|\\(?:\r\n|.))*\")",
    re.S,
)
_BETWEEN_TOKENS = re.compile(rb"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*")
_CLOSING_PARENS = re.compile(rb"(?:[ \t\f\r\n)]|\\\r?\n|#[^\r\n]*)*")
_COMMENT = re.compile(rb"#[^\r\n]*")
_QUOTES = frozenset(b"'\"")
_NON_DECIMAL_MARKS = frozenset((b"x", b"X", b"o", b"O", b"b", b"B"))


# Expression nesting a summary keeps; deeper parts are flattened (see
# `_Builder.expr`). Real code stays far below it (the deepest expression of
# all 3,231 files of vLLM 0.33 nests 25 levels); it bounds every recursive
# walk over the IR, the cache's JSON included.
MAX_EXPRESSION_DEPTH = 64


def summarise(source: str, module: str, path: str, is_package: bool) -> ModuleSummary:
    # The parse and the build only allocate and make no cycles, so the collector
    # is paused: its repeated scans of the young tree cost about a tenth of the
    # time. Warnings about the analysed code (invalid escapes) are not ours to show.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            builder = _Builder(source, module, is_package)
            builder.module_body(_parse(source).body)
    except RecursionError as exc:
        raise SummaryError("cannot summarise: nested too deeply") from exc
    finally:
        if collecting:
            gc.enable()
    return ModuleSummary(
        module=module,
        path=path,
        is_package=is_package,
        imports=tuple(builder.imports),
        functions=builder.functions,
        classes=builder.classes,
        assigns=builder.assigns,
        marker_comments=marker_comments(source),
    )


def _parse(source: str) -> ast.Module:
    """The tree, or SummaryError with a one-line reason."""
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        message = " ".join(str(exc.msg).split())
        raise SummaryError(f"does not parse: {where}{message}", exc.lineno or 0) from exc
    except ValueError as exc:  # null bytes (before 3.11.4) or unencodable text
        raise SummaryError(f"does not parse: {exc}") from exc
    except (RecursionError, MemoryError) as exc:  # the parser's depth limits
        raise SummaryError("does not parse: nested too deeply") from exc


_Stmts = list[ir.Stmt]
_WIDE = re.compile("[^\x00-\x7f]")  # a character UTF-8 writes in more than one byte
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Source:
    """The source as UTF-8 bytes, which is what `ast` offsets count."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self._wide: dict[int, tuple[list[int], list[int]]] = {}  # by line

    @cached_property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    @cached_property
    def starts(self) -> list[int]:
        """Byte offset of each line; bytes.splitlines breaks where the tokenizer does."""
        return list(accumulate(map(len, self.data.splitlines(True)), initial=0))

    def offset(self, line: int, col: int) -> int:
        """Byte offset of an `ast` (line, col_offset)."""
        return self.starts[line - 1] + col

    def segment(self, node: ast.expr) -> bytes:
        starts = self.starts
        start = starts[node.lineno - 1] + node.col_offset
        return self.data[start : starts[node.end_lineno - 1] + node.end_col_offset]

    def column(self, line: int, col: int) -> int:
        """1-based column in characters, as summaries count them (`ast` counts bytes)."""
        if self.ascii:
            return col + 1
        found = self._wide.get(line)
        if found is None:
            found = self._wide[line] = self._wide_characters(line)
        offsets, extra = found
        before = bisect_left(offsets, col)  # the wide characters starting before `col`
        return col - (extra[before - 1] if before else 0) + 1

    def _wide_characters(self, line: int) -> tuple[list[int], list[int]]:
        """The byte offset in the line of each character wider than a byte, and
        the bytes beyond one that it and those before it take: found by a regex
        over the decoded line, once per line (a loop over each byte of each
        line was a tenth of summarising a file with one such character)."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.data)
        offsets: list[int] = []
        extra: list[int] = []
        beyond = 0
        for match in _WIDE.finditer(self.data[start:end].decode("utf-8", "replace")):
            offsets.append(match.start() + beyond)
            beyond += len(match.group().encode("utf-8")) - 1
            extra.append(beyond)
        return offsets, extra


class _Builder:
    def __init__(self, source: str, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.source = _Source(source)
        self._ascii = self.source.ascii
        self.imports: list[ImportBinding] = []
        self.functions: dict[str, FunctionSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.assigns: dict[str, ir.Expr] = {}
        self._depth = 0  # expressions being built, one inside the other
        self._generator_stack: list[bool] = []
        self._nested_stack: list[tuple[str, list[FunctionSummary]]] = []

    # ------------------------------------------------------------------ positions
    def _col(self, node: ast.stmt | ast.expr) -> int:
        if self._ascii:  # the common case, kept cheap: columns are read for every statement
            return node.col_offset + 1
        return self.source.column(node.lineno, node.col_offset)

    # ------------------------------------------------------------------ module
    def module_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                fn = self.function(stmt, f"{self.module}.{stmt.name}")
                self.functions[fn.name] = fn
            elif kind is ast.ClassDef:
                cls = self.class_def(stmt, f"{self.module}.{stmt.name}")
                self.classes[cls.name] = cls
            elif kind is ast.If or kind is ast.Try:
                # `if TYPE_CHECKING:` / `try: import x` blocks hold imports too.
                self._module_nested_imports(stmt)
            else:
                self._module_small(stmt)

    def _module_small(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Import or kind is ast.ImportFrom:
            self.import_stmt(stmt)
        elif kind is ast.Assign:
            for target in stmt.targets:
                if type(target) is ast.Name:
                    self.assigns[target.id] = self.expr(stmt.value)
        elif kind is ast.AnnAssign and type(stmt.target) is ast.Name:
            value = stmt.value if stmt.value is not None else stmt.annotation
            self.assigns[stmt.target.id] = self.expr(value)

    def _module_nested_imports(self, stmt: ast.stmt) -> None:
        """Imports anywhere under `stmt` but outside defs: they bind module names."""
        for block in _child_blocks(stmt):
            for child in block:
                kind = type(child)
                if kind is ast.Import or kind is ast.ImportFrom:
                    self.import_stmt(child)
                elif kind is not ast.ClassDef and kind not in _FUNCTION_DEFS:
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

    def import_stmt(self, node: ast.Import | ast.ImportFrom) -> None:
        line = node.lineno
        if type(node) is ast.Import:
            for alias in node.names:
                if alias.asname is not None:
                    self.imports.append(ImportBinding(alias.asname, alias.name, line))
                else:
                    head = alias.name.split(".")[0]
                    self.imports.append(ImportBinding(head, head, line))
            return
        relative = node.level
        module = node.module
        base = self._absolute(relative, module) if relative else (module or "")
        if node.names[0].name == "*":
            self.imports.append(ImportBinding("*", base, line))
            return
        for alias in node.names:
            name = alias.name
            bound = alias.asname if alias.asname is not None else name
            target = f"{base}.{name}" if base else name
            self.imports.append(ImportBinding(bound, target, line))

    # ------------------------------------------------------------------ defs
    def class_def(self, node: ast.ClassDef, qualname: str) -> ClassSummary:
        methods: dict[str, FunctionSummary] = {}
        annotations: dict[str, ir.Expr] = {}
        assigns: dict[str, ir.Expr] = {}
        for stmt in node.body:
            kind = type(stmt)
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                fn = self.function(stmt, f"{qualname}.{stmt.name}")
                methods[fn.name] = fn
            elif kind is ast.AnnAssign:
                if type(stmt.target) is ast.Name:
                    annotations[stmt.target.id] = self.expr(stmt.annotation)
                    if stmt.value is not None:
                        assigns[stmt.target.id] = self.expr(stmt.value)
            elif kind is ast.Assign:
                for target in stmt.targets:
                    if type(target) is ast.Name:
                        assigns[target.id] = self.expr(stmt.value)
        return ClassSummary(
            name=node.name,
            qualname=qualname,
            bases=tuple(self._unstarred(base) for base in node.bases),
            decorators=tuple(self.expr(d) for d in node.decorator_list),
            methods=methods,
            annotations=annotations,
            assigns=assigns,
            line=node.lineno,
        )

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str
    ) -> FunctionSummary:
        params = self._params(node.args)
        self._generator_stack.append(False)
        self._nested_stack.append((qualname, []))
        body = self.block(node.body)
        is_generator = self._generator_stack.pop()
        _, nested = self._nested_stack.pop()
        return FunctionSummary(
            name=node.name,
            qualname=qualname,
            params=params,
            decorators=tuple(self.expr(d) for d in node.decorator_list),
            body=body,
            returns=self.expr(node.returns) if node.returns is not None else None,
            line=node.lineno,
            col=self._col(node),
            end_line=node.end_lineno,
            is_generator=is_generator,
            header_line=min([node.lineno, *(d.lineno for d in node.decorator_list)]),
            nested=tuple(nested),
        )

    def _params(self, args: ast.arguments) -> tuple[Param, ...]:
        """Named parameters in order (not *args / **kwargs), with their defaults."""
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        params: list[Param] = []
        for arg, default in zip(
            [*positional, *args.kwonlyargs], [*defaults, *args.kw_defaults], strict=True
        ):
            params.append(
                Param(
                    arg.arg,
                    self.expr(arg.annotation) if arg.annotation is not None else None,
                    self.expr(default) if default is not None else None,
                )
            )
        return tuple(params)

    # ------------------------------------------------------------------ statements
    def block(self, body: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        """IR of a statement list; statements the analysis does not model add nothing."""
        out: _Stmts = []
        handlers = self._STATEMENTS
        for stmt in body:
            handler = handlers.get(type(stmt))
            if handler is not None:
                handler(self, stmt, out)
        return tuple(out)

    def _eval(self, node: ast.Expr, out: _Stmts) -> None:
        out.append(ir.Eval(node.lineno, self._col(node), self.expr(node.value)))

    def _assign(self, node: ast.Assign, out: _Stmts) -> None:
        targets = tuple(self.expr(t) for t in node.targets)
        out.append(ir.Assign(node.lineno, self._col(node), targets, self.expr(node.value)))

    def _ann_assign(self, node: ast.AnnAssign, out: _Stmts) -> None:
        value = self.expr(node.value) if node.value is not None else None
        target = (self.expr(node.target),)
        annotation = self.expr(node.annotation)
        out.append(ir.Assign(node.lineno, self._col(node), target, value, annotation))

    def _aug_assign(self, node: ast.AugAssign, out: _Stmts) -> None:
        target = (self.expr(node.target),)
        value = self.expr(node.value)
        op = _AUG_OPS[type(node.op)]
        out.append(ir.Assign(node.lineno, self._col(node), target, value, None, op))

    def _return(self, node: ast.Return, out: _Stmts) -> None:
        value = self.expr(node.value) if node.value is not None else None
        out.append(ir.Return(node.lineno, self._col(node), value))

    def _raise(self, node: ast.Raise, out: _Stmts) -> None:
        value = self.expr(node.exc) if node.exc is not None else None
        out.append(ir.Raise(node.lineno, self._col(node), value))

    def _assert(self, node: ast.Assert, out: _Stmts) -> None:
        out.append(ir.Eval(node.lineno, self._col(node), self.expr(node.test)))

    def _import(self, node: ast.Import | ast.ImportFrom, out: _Stmts) -> None:
        # Imports inside functions bind names like module-level ones.
        self.import_stmt(node)

    def _if(self, node: ast.If, out: _Stmts) -> None:
        """An `if`/`elif` chain, walked as a loop (a chain may be thousands long).

        Each `elif` is an `If` in the previous one's else branch. Past
        `MAX_EXPRESSION_DEPTH` links the rest of the chain becomes one `If`
        whose body holds every remaining branch in order: its calls and writes
        are kept, only which branch runs is lost.
        """
        chain = [node]
        while len(chain[-1].orelse) == 1 and type(chain[-1].orelse[0]) is ast.If:
            chain.append(chain[-1].orelse[0])
        # The else branch first: the order imports and nested defs have always had.
        orelse = self.block(chain[-1].orelse)
        if len(chain) > MAX_EXPRESSION_DEPTH:
            chain, tail = chain[:MAX_EXPRESSION_DEPTH], chain[MAX_EXPRESSION_DEPTH:]
            tests: list[ir.Expr] = []
            bodies: list[ir.Stmt] = []
            for link in reversed(tail):
                tests.insert(0, self.expr(link.test))
                bodies[:0] = self.block(link.body)
            first = tail[0]
            test = ir.Opaque(tuple(tests))
            orelse = (ir.If(first.lineno, self._col(first), test, tuple(bodies), orelse),)
        for link in reversed(chain):
            test = self.expr(link.test)
            body = self.block(link.body)
            orelse = (ir.If(link.lineno, self._col(link), test, body, orelse),)
        out.extend(orelse)

    def _for(self, node: ast.For | ast.AsyncFor, out: _Stmts) -> None:
        target = self.expr(node.target)
        iterable = self.expr(node.iter)
        body = self.block(node.body)
        orelse = self.block(node.orelse)
        out.append(ir.Loop(node.lineno, self._col(node), target, iterable, body, orelse))

    def _while(self, node: ast.While, out: _Stmts) -> None:
        test = self.expr(node.test)
        body = self.block(node.body)
        orelse = self.block(node.orelse)
        out.append(ir.Loop(node.lineno, self._col(node), None, test, body, orelse))

    def _with(self, node: ast.With | ast.AsyncWith, out: _Stmts) -> None:
        items = tuple(
            ir.WithItem(
                self.expr(item.context_expr),
                self.expr(item.optional_vars) if item.optional_vars is not None else None,
            )
            for item in node.items
        )
        out.append(ir.With(node.lineno, self._col(node), items, self.block(node.body)))

    def _try(self, node: ast.Try | ast.TryStar, out: _Stmts) -> None:
        out.append(
            ir.Try(
                node.lineno,
                self._col(node),
                self.block(node.body),
                tuple(self.block(h.body) for h in node.handlers),
                self.block(node.orelse),
                self.block(node.finalbody),
            )
        )

    def _match(self, node: ast.Match, out: _Stmts) -> None:
        # Each case is one alternative; the subject is evaluated first.
        line, col = node.lineno, self._col(node)
        out.append(ir.Eval(line, col, self.expr(node.subject)))
        orelse: tuple[ir.Stmt, ...] = ()
        for case in reversed(node.cases):
            orelse = (ir.If(line, col, ir.Opaque(()), self.block(case.body), orelse),)
        out.extend(orelse)

    def _nested_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef, out: _Stmts) -> None:
        # Not executed in place; kept for callbacks that run later.
        outer, nested = self._nested_stack[-1]
        nested.append(self.function(node, f"{outer}.<locals>.{node.name}"))

    _STATEMENTS: dict[type, Callable[[_Builder, ast.stmt, _Stmts], None]] = {
        ast.Expr: _eval,
        ast.Assign: _assign,
        ast.If: _if,
        ast.Return: _return,
        ast.For: _for,
        ast.AugAssign: _aug_assign,
        ast.AnnAssign: _ann_assign,
        ast.With: _with,
        ast.Raise: _raise,
        ast.Try: _try,
        ast.Assert: _assert,
        ast.Import: _import,
        ast.ImportFrom: _import,
        ast.While: _while,
        ast.FunctionDef: _nested_def,
        ast.AsyncFunctionDef: _nested_def,
        ast.AsyncFor: _for,
        ast.AsyncWith: _with,
        ast.TryStar: _try,
        ast.Match: _match,
    }

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.expr | None) -> ir.Expr:
        """IR of one expression (a missing one is an empty Opaque).

        Past `MAX_EXPRESSION_DEPTH` nested levels the rest of the expression
        is flattened (`_flattened`): the parser accepts nesting far deeper
        than a recursive walk can follow, and that one expression is what
        degrades, never the file.
        """
        if node is None:
            return ir.Opaque(())
        depth = self._depth
        if depth >= MAX_EXPRESSION_DEPTH:
            return self._flattened(node)
        self._depth = depth + 1
        result = self._EXPRESSIONS[type(node)](self, node)
        self._depth = depth
        return result

    def _flattened(self, node: ast.expr) -> ir.Expr:
        """Every call inside `node`, in evaluation order, each with a shallow callee.

        An iterative walk: the calls still happen (a `.synchronize()` at the
        end of a 300-call chain is still a host wait), with receivers and
        arguments reduced to names and constants.
        """
        calls: list[ast.Call] = []
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            kind = type(current)
            if kind is ast.Lambda:
                continue  # not evaluated here, as `_lambda` says
            if kind is ast.Call:
                calls.append(current)
            elif (kind is ast.Yield or kind is ast.YieldFrom) and self._generator_stack:
                self._generator_stack[-1] = True
            stack.extend(ast.iter_child_nodes(current))
        # A call finishes after everything inside it: end position is evaluation order.
        calls.sort(key=lambda c: (c.end_lineno, c.end_col_offset, -c.lineno, -c.col_offset))
        return ir.Opaque(
            tuple(
                ir.Call(
                    _shallow(call.func),
                    tuple(_shallow(arg) for arg in call.args),
                    tuple((kw.arg or "**", _shallow(kw.value)) for kw in call.keywords),
                    call.lineno,
                    self._col(call),
                    call.end_lineno,
                )
                for call in calls
            )
        )

    def _name(self, node: ast.Name) -> ir.Expr:
        return ir.Name(node.id)

    def _attribute(self, node: ast.Attribute) -> ir.Expr:
        return ir.Attr(self.expr(node.value), node.attr)

    def _call(self, node: ast.Call) -> ir.Expr:
        args = tuple(
            ir.Opaque((self.expr(arg.value),)) if type(arg) is ast.Starred else self.expr(arg)
            for arg in node.args
        )
        kwargs = tuple(
            (kw.arg if kw.arg is not None else "**", self.expr(kw.value)) for kw in node.keywords
        )
        func = self.expr(node.func)
        return ir.Call(func, args, kwargs, node.lineno, self._col(node), node.end_lineno)

    def _constant(self, node: ast.Constant) -> ir.Expr:
        value = node.value
        kind = type(value)
        if kind is str or kind is bytes:
            return self._string(node)
        if kind is int:
            return self._integer(node)
        if kind is bool or kind is float or value is None:
            return ir.Const(value)
        return ir.Opaque(())  # complex, Ellipsis

    def _integer(self, node: ast.Constant) -> ir.Expr:
        """`0x10` stays its text, as summaries always kept it."""
        source = self.source
        start = source.offset(node.lineno, node.col_offset)
        if source.data[start + 1 : start + 2] in _NON_DECIMAL_MARKS:
            return ir.Const(source.segment(node).decode("ascii"))
        return ir.Const(node.value)

    def _subscript(self, node: ast.Subscript) -> ir.Expr:
        """`x[i]` keeps its index; several indices or any slice become one Opaque."""
        index = node.slice
        if type(index) is ast.Tuple and not self._parenthesised(index):
            elements = index.elts
        else:
            elements = [index]
        is_slice = False
        basic = True  # every element a slice, an int, None or `...`: the result is a view
        parts: list[ir.Expr] = []
        for element in elements:
            kind = type(element)
            if kind is not ast.Slice and not _view_index(element):
                basic = False
            if kind is ast.Slice:
                is_slice = True
                parts.extend(
                    self.expr(x)
                    for x in (element.lower, element.upper, element.step)
                    if x is not None
                )
            else:
                parts.append(self._unstarred(element))
        value = parts[0] if len(parts) == 1 and not is_slice else ir.Opaque(tuple(parts))
        return ir.Subscript(self.expr(node.value), value, is_slice and basic)

    def _parenthesised(self, node: ast.Tuple) -> bool:
        """`x[(a, b)]` (one tuple index) rather than `x[a, b]` (two indices)."""
        if not node.elts:
            return True
        first = node.elts[0]
        if first.col_offset == node.col_offset and first.lineno == node.lineno:
            return False
        # Parens before the first element that it does not close itself are the tuple's.
        source = self.source
        start = source.offset(node.lineno, node.col_offset)
        first_start = source.offset(first.lineno, first.col_offset)
        first_end = source.offset(first.end_lineno, first.end_col_offset)
        opened = _COMMENT.sub(b"", source.data[start:first_start]).count(b"(")
        after = _CLOSING_PARENS.match(source.data, first_end).group()
        return opened > _COMMENT.sub(b"", after).count(b")")

    def _bool_op(self, node: ast.BoolOp) -> ir.Expr:
        # Summaries pair operands left to right: `a and b and c` is ((a and b) and c).
        op = "and" if type(node.op) is ast.And else "or"
        values = node.values
        result = ir.BoolOp(op, (self.expr(values[0]), self.expr(values[1])))
        for value in values[2:]:
            result = ir.BoolOp(op, (result, self.expr(value)))
        return result

    def _unary_op(self, node: ast.UnaryOp) -> ir.Expr:
        if type(node.op) is ast.Not:
            return ir.Not(self.expr(node.operand))
        return ir.Opaque((self.expr(node.operand),))

    def _compare(self, node: ast.Compare) -> ir.Expr:
        ops = tuple(_COMPARE_OPS[type(op)] for op in node.ops)
        comparators = tuple(self.expr(c) for c in node.comparators)
        return ir.Compare(self.expr(node.left), ops, comparators)

    def _bin_op(self, node: ast.BinOp) -> ir.Expr:
        return ir.BinOp(_BIN_OPS[type(node.op)], self.expr(node.left), self.expr(node.right))

    def _if_exp(self, node: ast.IfExp) -> ir.Expr:
        return ir.IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))

    def _display(self, node: ast.List | ast.Tuple | ast.Set) -> ir.Expr:
        return ir.Seq(tuple(self._unstarred(e) for e in node.elts))

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> ir.Expr:
        iters = tuple(self.expr(comp.iter) for comp in node.generators)
        return ir.Comp(self.expr(node.elt), iters)

    def _dict_comp(self, node: ast.DictComp) -> ir.Expr:
        # Its elements are its values (`d[k]` reads one); the key is kept for its calls.
        iterable = self.expr(node.generators[0].iter)
        return ir.Comp(self.expr(node.value), (iterable, self.expr(node.key)))

    def _dict(self, node: ast.Dict) -> ir.Expr:
        # `**mapping` entries are not kept, as before.
        return ir.Opaque(
            tuple(
                ir.Opaque((self.expr(key), self.expr(value)))
                for key, value in zip(node.keys, node.values, strict=True)
                if key is not None
            )
        )

    def _named_expr(self, node: ast.NamedExpr) -> ir.Expr:
        return ir.NamedExpr(node.target.id, self.expr(node.value))

    def _yield(self, node: ast.Yield | ast.YieldFrom) -> ir.Expr:
        if self._generator_stack:
            self._generator_stack[-1] = True
        return ir.Yield(self.expr(node.value) if node.value is not None else None)

    def _await(self, node: ast.Await) -> ir.Expr:
        return self.expr(node.value)

    def _lambda(self, node: ast.Lambda) -> ir.Expr:
        return ir.Opaque(())

    def _starred(self, node: ast.Starred) -> ir.Expr:
        return ir.Opaque((self.expr(node.value),))

    def _unstarred(self, node: ast.expr) -> ir.Expr:
        """An element of a display, subscript or base list: `*x` is kept as `x`."""
        return self.expr(node.value if type(node) is ast.Starred else node)

    def _joined_str(self, node: ast.JoinedStr) -> ir.Expr:
        return self._string(node)

    def _slice(self, node: ast.Slice) -> ir.Expr:
        # Subscripts take their slices apart; this only keeps any stray one evaluated.
        bounds = (node.lower, node.upper, node.step)
        return ir.Opaque(tuple(self.expr(x) for x in bounds if x is not None))

    # ------------------------------------------------------------------ strings
    def _string(self, node: ast.Constant | ast.JoinedStr) -> ir.Expr:
        """One part per literal: `"a" f"{b}"` is two parts, as summaries always had it."""
        literals = self._literals(node)
        if literals is None:
            return self._single_string(node)
        parts: list[ir.Expr] = []
        fields = (
            [v for v in node.values if type(v) is ast.FormattedValue]
            if type(node) is ast.JoinedStr
            else []
        )
        offsets = [self.source.offset(f.value.lineno, f.value.col_offset) for f in fields]
        placed = 0
        for start, end, text in literals:
            prefix = _prefix(text)
            if b"f" not in prefix:
                parts.append(_string_const(text, prefix))
                continue
            inside = [f for f, at in zip(fields, offsets, strict=True) if start <= at < end]
            placed += len(inside)
            parts.append(ir.Opaque(tuple(self._formatted(f) for f in inside)))
        if placed != len(fields):  # a field outside every literal: never lose its calls
            return self._single_string(node)
        result = parts[-1]
        for part in reversed(parts[:-1]):
            result = ir.Opaque((part, result))
        return result

    def _single_string(self, node: ast.Constant | ast.JoinedStr) -> ir.Expr:
        if type(node) is ast.JoinedStr:
            return ir.Opaque(
                tuple(self._formatted(v) for v in node.values if type(v) is ast.FormattedValue)
            )
        return ir.Const(node.value if type(node.value) is str else None)

    def _formatted(self, node: ast.FormattedValue) -> ir.Expr:
        """`{value:spec}`: the value, then any fields nested in the spec."""
        parts = [self.expr(node.value)]
        if node.format_spec is not None:
            parts.extend(
                self._formatted(v) for v in node.format_spec.values if type(v) is ast.FormattedValue
            )
        return ir.Opaque(tuple(parts))

    def _literals(self, node: ast.expr) -> list[tuple[int, int, bytes]] | None:
        """(start, end, text) of each literal of an implicit concatenation, else None."""
        source = self.source
        segment = source.segment(node)
        match = _STRING_LITERAL.match(segment)
        if match is None or match.end() == len(segment):
            return None
        base = source.offset(node.lineno, node.col_offset)
        found: list[tuple[int, int, bytes]] = []
        pos = 0
        while match is not None:
            found.append((base + pos, base + match.end(), match.group()))
            pos = _BETWEEN_TOKENS.match(segment, match.end()).end()
            if pos >= len(segment):
                return found
            match = _STRING_LITERAL.match(segment, pos)
        return None  # not a run of literals after all: keep it whole

    _EXPRESSIONS: dict[type, Callable[[_Builder, ast.expr], ir.Expr]] = {
        ast.Name: _name,
        ast.Attribute: _attribute,
        ast.Call: _call,
        ast.Constant: _constant,
        ast.Subscript: _subscript,
        ast.BinOp: _bin_op,
        ast.Compare: _compare,
        ast.Tuple: _display,
        ast.BoolOp: _bool_op,
        ast.UnaryOp: _unary_op,
        ast.JoinedStr: _joined_str,
        ast.List: _display,
        ast.Dict: _dict,
        ast.IfExp: _if_exp,
        ast.Starred: _starred,
        ast.ListComp: _comprehension,
        ast.GeneratorExp: _comprehension,
        ast.Await: _await,
        ast.Lambda: _lambda,
        ast.Set: _display,
        ast.SetComp: _comprehension,
        ast.DictComp: _dict_comp,
        ast.Yield: _yield,
        ast.YieldFrom: _yield,
        ast.NamedExpr: _named_expr,
        ast.Slice: _slice,
    }


def _shallow(node: ast.expr) -> ir.Expr:
    """A name, `name.attr`, `<...>.attr` or a plain constant; anything else is Opaque."""
    kind = type(node)
    if kind is ast.Name:
        return ir.Name(node.id)
    if kind is ast.Attribute:
        base = node.value
        return ir.Attr(ir.Name(base.id) if type(base) is ast.Name else ir.Opaque(()), node.attr)
    if kind is ast.Constant and type(node.value) in (bool, int, float, str, type(None)):
        return ir.Const(node.value)
    return ir.Opaque(())


def _prefix(literal: bytes) -> bytes:
    """The prefix letters of one string literal, lower-cased (`rb`, `f`, ...)."""
    start = 0
    while literal[start] not in _QUOTES:
        start += 1
    return literal[:start].lower()


def _string_const(literal: bytes, prefix: bytes) -> ir.Expr:
    """The value of one plain literal; bytes are not kept."""
    if b"b" in prefix:
        return ir.Const(None)
    width = 3 if literal[len(prefix) : len(prefix) + 3] in (b'"""', b"'''") else 1
    body = literal[len(prefix) + width : len(literal) - width]
    if b"\\" in body and b"r" not in prefix:
        # Escapes: let Python read it (rare enough that the cost does not show).
        try:
            return ir.Const(ast.literal_eval(literal.decode("utf-8")))
        except (ValueError, SyntaxError):
            return ir.Const(None)
    text = body.decode("utf-8")
    if "\r" in text:  # newlines inside a literal read as \n, as Python reads them
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return ir.Const(text)


def _child_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement blocks directly inside a compound statement, in source order."""
    body = getattr(stmt, "body", None)
    if body is not None:
        yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    orelse = getattr(stmt, "orelse", None)
    if orelse:
        yield orelse
    finalbody = getattr(stmt, "finalbody", None)
    if finalbody:
        yield finalbody
    for case in getattr(stmt, "cases", ()):
        yield case.body


def _view_index(element: ast.expr) -> bool:
    """An index that keeps basic indexing: an int, None (a new axis) or `...`."""
    if type(element) is not ast.Constant:
        return False
    return element.value is None or element.value is Ellipsis or type(element.value) is int
