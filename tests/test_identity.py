"""One name per object where access paths go round a cycle of classes
(flow/identity.py), and the attributes a class's code can read (flow/attributes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import analyse, walks_of, write_project

from syncscan.flow.attributes import SelfAttributes, relevant
from syncscan.flow.context import Analysis
from syncscan.flow.identity import ObjectNames, root_anchors

PACK = """
[pack]
name = "identity"
[[step_root]]
class = "eng.Runner"
method = "execute_model"
"""

ENGINE = '''
import torch


class Backend:
    def __init__(self):
        self.kv_indptr = torch.zeros(8, device="cuda")


class Wrapper(Backend):
    """Holds another backend, typed as the base class (a composite)."""

    def __init__(self, inner: Backend):
        self.inner = inner


class Stager:
    def __init__(self, runner: "Runner"):
        self.runner = runner

    def stage(self):
        self.helper(self)


class Runner:
    def __init__(self):
        self.tokens = torch.zeros(8, device="cuda")
        self.attn: Backend = Wrapper(Backend())
        self.stager = Stager(self)
        self.draft = Draft()

    def execute_model(self, batch):
        if self.attn is not None:
            return self.tokens


class Draft(Runner):
    """A subclass of the runner held by it: another object."""
'''


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    root = write_project(tmp_path_factory.mktemp("identity"), {"eng.py": ENGINE}, PACK)
    result = analyse(root)
    assert result.analysis is not None
    return result.analysis


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("self.stager.runner.tokens", "self.tokens"),  # a back reference to the root
        ("self.attn.inner.kv_indptr", "self.attn.kv_indptr"),  # a composite's child
        ("self.attn.inner.inner.kv_indptr", "self.attn.kv_indptr"),
        ("self.draft.tokens", "self.draft.tokens"),  # a subclass is another object
        ("self.tokens.storage.x", "self.tokens.storage.x"),  # no class known: as written
        ("batch.tokens", "batch.tokens"),  # not from the root
    ],
)
def test_a_route_back_to_a_class_on_it_is_cut_to_that_object(
    analysis: Analysis, path: str, name: str
) -> None:
    names = ObjectNames(analysis.program, analysis.types)
    assert names.canonical(path, root_anchors("eng.Runner")) == name


def test_a_symbolic_base_is_an_anchor_with_its_class(analysis: Analysis) -> None:
    """Inside a walk in symbolic names (symbols.py) the base's class is known:
    a route from it back to the root, or round a composite, is cut as well."""
    names = ObjectNames(analysis.program, analysis.types)
    anchors = (("self", frozenset({"eng.Runner"})), ("self.x.$0", frozenset({"eng.Stager"})))
    assert names.canonical("self.x.$0.runner.tokens", anchors) == "self.tokens"
    anchors = (("self.x.$0", frozenset({"eng.Backend"})),)  # declared, as chains give it
    assert names.canonical("self.x.$0.inner.kv_indptr", anchors) == "self.x.$0.kv_indptr"
    assert names.canonical("self.y.kv_indptr", anchors) == "self.y.kv_indptr"  # no anchor


def test_the_attributes_a_class_reads_and_where_self_escapes(analysis: Analysis) -> None:
    attributes = SelfAttributes(analysis.program)
    assert attributes.of("eng.Backend") == frozenset({"kv_indptr"})
    assert attributes.of("eng.Wrapper") == frozenset({"inner", "kv_indptr"})  # its MRO too
    assert attributes.of("eng.Stager") is None  # `self.helper(self)` passes itself on
    assert attributes.of("eng.Runner") is None  # `Stager(self)`
    assert attributes.of("eng.Missing") is None


def test_an_assumption_is_relevant_by_its_first_attribute() -> None:
    names = frozenset({"attn"})
    assert relevant("self.w.attn.ready is None", "self.w.", names)
    assert relevant("self.w.attn == 'x'", "self.w.", names)
    assert not relevant("self.w.attention is None", "self.w.", names)
    assert relevant("self.w.anything", "self.w.", None)


def test_a_callee_is_walked_once_for_modes_it_cannot_read(tmp_path: Path) -> None:
    """Two modes set on the helper by its owner, one walk of the helper's
    method, which never reads them (without the filter: one walk per mode)."""
    body = """
import torch


class Helper:
    def __init__(self):
        self.buf = torch.zeros(8, device="cuda")

    def run(self):
        torch.ops.eng.k(self.buf)


class Runner:
    def __init__(self, fast, big):
        self.helper = Helper()
        self.helper.fast = fast
        self.helper.big = big

    def execute_model(self, batch):
        if self.helper.fast:
            torch.ops.eng.fast(batch)
        if self.helper.big:
            torch.ops.eng.big(batch)
        self.helper.run()
"""
    root = write_project(tmp_path, {"eng.py": body}, PACK)

    assert walks_of(root, "eng.Helper.run") == 1
