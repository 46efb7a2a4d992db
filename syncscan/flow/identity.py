"""One name per device memory where access paths go round a cycle of objects.

Memory is named by its access path from the root (`self.worker.runner.kv`).
Engines hold objects that lead back to their own kind: a CUDA-graph runner
holds the model runner that holds it (`runner.graph_runner.runner.attn`), and
a wrapper attention backend holds inner backends typed as the same base class
(`attn.primary.dense.kv_indptr`). Followed by name, such paths multiply: one
buffer gets a name per route, the stream facts of one path grow to thousands
of entries, and a write and a read of the same buffer through two routes never
meet.

The classes of each prefix of a path, from the root's class and the declared
types of each attribute, say where a route came back to an object of a class
already on it: the path is cut back to that earlier prefix (k-limiting by
class, as points-to analyses do). Two routes to one object get one name; two
distinct objects of related classes on one route also share one, which can
only add conflicting accesses, never hide one.
"""

from __future__ import annotations

import re

from syncscan.index.reads import Memo
from syncscan.resolve.program import Program
from syncscan.resolve.types import TypeOracle

_SEGMENT = re.compile(r"\.[^.\[]+|\[\]")

Classes = frozenset[str]
# (path, the classes its object may have), outermost first: what a frame knows
# of the objects its paths start from — the root object, or a symbolic base
# (symbols.py) with the chain of objects above it.
Anchors = tuple[tuple[str, Classes], ...]


def root_anchors(root_class: str) -> Anchors:
    return (("self", frozenset({root_class})),)


class ObjectNames:
    """Canonical access paths, given what the frame knows of their start."""

    def __init__(self, program: Program, types: TypeOracle) -> None:
        self.program = program
        self.types = types
        # Memo tables note, on each hit, what making the value read (reads.Memo).
        self._chains: Memo[tuple[str, Anchors], Anchors | None] = Memo()
        self._attrs: Memo[tuple[Classes, str], Classes] = Memo()

    def canonical(self, path: str, anchors: Anchors) -> str:
        """`path` with every cycle of classes cut out; unchanged where it starts
        from no anchor."""
        chain = self.chain(path, anchors)
        return path if chain is None else chain[-1][0]

    def chain(self, path: str, anchors: Anchors) -> Anchors | None:
        """The canonical prefixes of `path` with their classes, ending at the
        path's own canonical name (its classes empty where the types ran out);
        None where it starts from no anchor."""
        if not anchors:
            return None
        return self._chains.made((path, anchors), lambda: self._chain(path, anchors))

    def _chain(self, path: str, anchors: Anchors) -> Anchors | None:
        chain = [a for a in anchors if within(path, a[0])]
        if not chain:
            return None
        segments = _SEGMENT.findall(path, len(chain[-1][0]))
        for index, segment in enumerate(segments):
            prefix, classes = chain[-1]
            if segment == "[]":
                classes = frozenset(t[5:-1] for t in classes if t.startswith("list["))
            else:
                classes = self._attr_classes(classes, segment[1:])
            if not classes:
                # Nothing more is known of the route: the rest stays as written.
                rest = prefix + segment + "".join(segments[index + 1 :])
                return (*chain, (rest, frozenset()))
            earlier = next((e for e in chain if self._meet(e[1], classes)), None)
            chain.append(earlier if earlier is not None else (prefix + segment, classes))
        return tuple(chain)

    def _attr_classes(self, classes: Classes, attr: str) -> Classes:
        """The project classes (or lists of them) `x.attr` may hold for `x` of
        `classes`; an attribute a base class lacks is looked up in its subclasses."""
        return self._attrs.made((classes, attr), lambda: self._attr_classes_of(classes, attr))

    def _attr_classes_of(self, classes: Classes, attr: str) -> Classes:
        out: set[str] = set()
        for cls in sorted(c for c in classes if not c.startswith("list[")):
            types = self.types.attr_types(cls, attr)
            if not types:
                for sub in self.program.subclasses(cls):
                    types |= self.types.attr_types(sub, attr)
            out |= types
        return frozenset(t for t in out if self._project_class(t))

    def _project_class(self, name: str) -> bool:
        """A class of the tree, or a list of one (`list[C]`, as types.py writes it)."""
        if name.startswith("list["):
            name = name[5:-1]
        return self.program.find_class(name) is not None

    @staticmethod
    def _meet(a: Classes, b: Classes) -> bool:
        """Whether the route came back to a class already on it. Declared
        classes, not their subclasses: an engine's draft runner subclasses its
        decode runner, yet is another object holding other buffers."""
        return not a.isdisjoint(b)


def within(text: str, base: str) -> bool:
    """`text` is `base` or a path (or key) under it."""
    return text.startswith(base) and (len(text) == len(base) or text[len(base)] in ".[ ")
