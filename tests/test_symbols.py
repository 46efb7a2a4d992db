"""Callee walks in symbolic names: the rewrite is reversible and never merges two memories."""

from __future__ import annotations

from syncscan.flow.frames import ParamBinding
from syncscan.flow.state import PathState
from syncscan.flow.streams import StreamFacts
from syncscan.flow.symbols import symbolize


def _param(path: str | None) -> ParamBinding:
    return ParamBinding(path, None)


def test_two_callers_through_different_wrappers_share_one_symbolic_frame() -> None:
    a = symbolize(
        "self.worker.runner.attn.dense", (("buf", _param("self.worker.runner.attn.dense.t")),)
    )
    b = symbolize(
        "self.worker.runner.attn.primary.dense",
        (("buf", _param("self.worker.runner.attn.primary.dense.t")),),
    )
    assert a is not None and b is not None
    assert a.self_path == "self.worker.$0.dense"
    assert b.self_path == "self.worker.$0.dense"
    assert a.params == b.params  # the memo key no longer names the wrapper path


def test_rename_puts_the_callers_names_back_and_keeps_the_path_shape() -> None:
    symbols = symbolize(
        "self.worker.pools[].attn", (("x", _param("self.worker.pools[].attn.buf[]")),)
    )
    assert symbols is not None
    path = symbols.params[0][1].path
    assert path is not None and "[]" in path and path.startswith("self.worker.")
    facts = StreamFacts().access(f"{symbols.self_path}.out", "write", ())
    state = PathState(
        assumptions=((f"{symbols.self_path}.ready is None", True),),
        written=frozenset({f"site@{symbols.self_path}"}),
        streams=facts,
    )
    real = symbols.renamer().state(state)
    assert real.assumptions == (("self.worker.pools[].attn.ready is None", True),)
    assert real.written == frozenset({"site@self.worker.pools[].attn"})
    assert real.streams is not None
    assert real.streams.live[0][0][0] == "self.worker.pools[].attn.out"
    assert symbols.assumptions(real).assumptions == state.assumptions


def test_a_path_overlapping_a_base_keeps_the_real_names() -> None:
    # `self.a` is both the holder of `self` and a parameter: rewriting one and
    # not the other would make one memory two.
    assert symbolize("self.a.b", (("p", _param("self.a")),)) is None
    # The root object itself is the same for every caller: nothing to rewrite.
    assert symbolize("self", ()) is None


def test_numbering_is_canonical_and_distinct_bases_stay_distinct() -> None:
    symbols = symbolize("self.m.x.y", (("p", _param("self.n.z.w")),))
    assert symbols is not None
    assert symbols.self_path == "self.m.$0.y"
    assert symbols.params[0][1].path == "self.n.$1.w"
    renamer = symbols.renamer()
    assert renamer.text("self.m.$0.y@self.n.$1.w") == "self.m.x.y@self.n.z.w"
