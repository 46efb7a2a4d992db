"""The attributes of `self` a class's code can reach, so a callee is walked only
from the assumptions it could test.

A callee is memoised per start state, and the start holds the assumptions on
its `self` path. Where several objects share one path (wrapper backends cut to
one name, identity.py) or one object carries many modes, a callee would be
walked once per combination of assumptions it never reads. A method reaches
`self`'s state only through `self.<attr>` in the methods of its class's MRO
(`self.m()` dispatches there); where `self` itself escapes — passed to a call,
stored, returned — anything may read it, and every assumption stays.
"""

from __future__ import annotations

import re

from syncscan.index.reads import Memo
from syncscan.index.summary import class_self_attributes
from syncscan.resolve.program import Program

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


class SelfAttributes:
    def __init__(self, program: Program) -> None:
        self.program = program
        self._cache: Memo[str, frozenset[str] | None] = Memo()  # notes its reads on each hit

    def of(self, class_qualname: str) -> frozenset[str] | None:
        """Names read or written as `self.<name>` by the class's MRO; None
        where `self` escapes (or the class is unknown): any attribute may be read."""
        return self._cache.made(class_qualname, lambda: self._collect(class_qualname))

    def _collect(self, class_qualname: str) -> frozenset[str] | None:
        classes = self.program.mro(class_qualname)
        if not classes:
            return None
        names: set[str] = set()
        for cls in classes:
            found = class_self_attributes(cls)  # from the index: no body decoded
            if found is None:
                return None  # `self` itself is passed on
            names.update(found)
        return frozenset(names)


def relevant(key: str, prefix: str, names: frozenset[str] | None) -> bool:
    """Whether an assumption `key` under `prefix` (`<self path>.`) names one of
    `names` (None: all do)."""
    if names is None:
        return True
    found = _NAME.match(key, len(prefix))
    return found is not None and found.group(0) in names
