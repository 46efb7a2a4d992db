"""Frames: a function being analysed, where its `self` sits, what its params hold."""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncscan.flow.identity import Anchors
from syncscan.index.summary import FunctionSummary
from syncscan.resolve.types import Scope


@dataclass(frozen=True)
class BufferFact:
    """Where a tensor's memory comes from, as far as the step can tell."""

    pinned: bool
    persistent: bool  # held by an object across steps (not a fresh local)
    origin: str  # e.g. "UvaBuffer.cpu"
    path: str | None  # file of the allocation
    line: int
    pool: str | None = None  # "UvaBufferPool._uva_bufs[_curr]": a round-robin slot
    uva: bool = False  # a device view reading pinned memory in place
    device: bool = False  # memory on the device
    host: bool = False  # host memory (pinned or pageable)
    site: str = ""  # the allocation, "path:line": views and attributes keep it

    @property
    def shared_pinned(self) -> bool:
        """Pinned host memory that outlives a step (the device may still access it)."""
        return self.pinned and self.persistent

    def with_pool(self, pool: str | None) -> BufferFact:
        if pool is None or self.pool is not None:
            return self
        return replace(self, pool=pool)


@dataclass(frozen=True)
class ParamBinding:
    path: str | None  # access path of the argument in the root's terms
    buffer: BufferFact | None
    # (class, attribute) when the argument is the caller's `self.attribute`: a
    # test of the parameter is a test of that attribute (its mode correlations).
    owner: tuple[str, str] | None = None
    const: bool | None = None  # a literal True/False passed (or defaulted): tests of it are decided
    # The device memory the argument names for the stream model when it is that
    # memory or a slice of it (`out=self.bitmask[:n]`): the parameter is a view
    # of it; None for a gather (fresh memory) or memory the model cannot name.
    memory: str | None = None


@dataclass(frozen=True)
class Frame:
    scope: Scope
    self_path: str  # access path of `self` from the root, e.g. "self.sampler"
    params: tuple[tuple[str, ParamBinding], ...]
    mode_params: frozenset[str]  # root parameters that are mode predicates
    relpath: str
    anchors: Anchors = ()  # what paths start from, with their classes (identity.py)

    @property
    def function(self) -> FunctionSummary:
        assert self.scope.function is not None
        return self.scope.function

    def param(self, name: str) -> ParamBinding | None:
        for key, binding in self.params:
            if key == name:
                return binding
        return None
