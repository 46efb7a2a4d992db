"""Boolean-mask indexing: `x[mask]` has a data-dependent shape, so on a device
tensor the host waits for the mask before it can size the result.

The walk cannot tell a boolean tensor from an integer one, so a match here is an
uncertain sync (host_syncs.py): it counts towards a sanctioned region the engine
drew around it and is never reported on its own. What looks like a mask: a
comparison (`x[x > 0]`), its inversion or combination (`~m`, `a & b`), or a name
that says so (`valid_mask`, `self.attention_mask`).
"""

from __future__ import annotations

from syncscan.index import ir
from syncscan.index.summary import FunctionSummary

_LOGICAL_OPS = frozenset(("BitAnd", "BitOr", "BitXor"))


def mask_indexed(expr: ir.Expr | None, masks: frozenset[str] = frozenset()) -> bool:
    """Whether `expr` indexes something with what looks like a boolean mask;
    `masks`: the function's locals bound to one (`keep = x > 0`)."""
    if expr is None:
        return False
    if isinstance(expr, ir.Subscript) and not expr.is_slice and _looks_boolean(expr.index, masks):
        return True
    return any(mask_indexed(child, masks) for child in ir.children(expr))


def boolean_locals(function: FunctionSummary) -> frozenset[str]:
    """Names the function binds to a mask-looking value, anywhere in its body."""
    found: set[str] = set()
    pending = list(function.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ir.Assign) and _looks_boolean(stmt.value, frozenset()):
            found.update(t.id for t in stmt.targets if isinstance(t, ir.Name))
        for name in ("body", "orelse", "finalbody"):
            pending.extend(getattr(stmt, name, ()))
        for handler in getattr(stmt, "handlers", ()):
            pending.extend(handler)
    return frozenset(found)


def _looks_boolean(index: ir.Expr, masks: frozenset[str]) -> bool:
    if isinstance(index, ir.Compare):
        return True
    if isinstance(index, ir.Seq):  # `x[m, :3]`
        return any(_looks_boolean(e, masks) for e in index.elts)
    if isinstance(index, ir.Opaque):  # `~m`, `x[m, :3]`
        return any(_looks_boolean(part, masks) for part in index.parts)
    if isinstance(index, ir.BinOp) and index.op in _LOGICAL_OPS:
        return _looks_boolean(index.left, masks) or _looks_boolean(index.right, masks)
    if isinstance(index, ir.Subscript):  # `masks[i]`, `inputs["features_mask"]`
        key = index.index
        named = isinstance(key, ir.Const) and isinstance(key.value, str)
        return (named and "mask" in str(key.value).lower()) or _looks_boolean(index.base, masks)
    if isinstance(index, ir.Name) and index.id in masks:
        return True
    name = index.attr if isinstance(index, ir.Attr) else getattr(index, "id", "")
    return "mask" in name.lower()
