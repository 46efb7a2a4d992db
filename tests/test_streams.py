"""The stream model on small engines: which edges order two streams' accesses of
the same memory (SYNC004), and which leave them unordered."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import analyse, write_project

PACK = """
[pack]
name = "streams"
[[step_root]]
class = "eng.Runner"
method = "execute_model"
"""

HEAD = """
from contextlib import contextmanager

import torch


class Runner:
    def __init__(self):
        self.tables = torch.zeros(8, dtype=torch.int32, device="cuda")
        self.out = torch.zeros(8, device="cuda")
        self.side = torch.cuda.Stream()
        self.ready = torch.cuda.Event()

    def forward(self):
        torch.ops.eng.forward(self.tables, out=self.out)
"""


def hazards(root: Path, body: str, pack: str = PACK) -> list[tuple[str, str]]:
    """(function, message start) of every SYNC004 finding of a Runner whose
    `execute_model` is `body`."""
    write_project(root, {"eng.py": HEAD + body}, pack)
    result = analyse(root)
    assert result.diagnostics == []
    return sorted(
        (f.location.function, f.message.split(":", 1)[0])
        for f in result.findings
        if f.code == "SYNC004"
    )


# The side stream writes the tables, the current stream reads them: which
# statement (at X) orders the read after the write?
WRITE_THEN_READ = """
    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        {edge}
        self.forward()
        torch.cuda.synchronize()  # the next step's copy follows this forward
"""


@pytest.mark.parametrize(
    ("edge", "ordered"),
    [
        ("pass", False),
        ("torch.cuda.current_stream().wait_stream(self.side)", True),
        ("self.side.wait_stream(torch.cuda.current_stream())", False),  # the wrong direction
        ("self.ready.record(self.side); torch.cuda.current_stream().wait_event(self.ready)", True),
        ("self.ready.record(self.side); self.ready.wait()", True),  # Event.wait: current stream
        ("self.ready.record(); self.ready.wait()", False),  # recorded on the current stream
        ("ev = self.side.record_event(); torch.cuda.current_stream().wait_event(ev)", True),
        ("self.side.synchronize()", True),  # the host waits for the side stream
        ("torch.cuda.synchronize()", True),
        ("torch.cuda.current_stream().synchronize()", False),  # the host waits for the wrong one
    ],
)
def test_an_edge_orders_the_read_after_the_side_streams_write(
    tmp_path: Path, edge: str, ordered: bool
) -> None:
    found = hazards(tmp_path, WRITE_THEN_READ.format(edge=edge))
    expected = (
        []
        if ordered
        else [
            ("eng.Runner.forward", "In mode 'every mode', read-after-write hazard on self.tables")
        ]
    )
    assert found == expected


def test_an_edge_made_inside_a_helper_orders_the_callers_accesses(tmp_path: Path) -> None:
    """A callee's wait is replayed after its caller's state (composition)."""
    body = """
    def _join(self):
        torch.cuda.current_stream().wait_stream(self.side)

    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        self._join()
        self.forward()
        torch.cuda.synchronize()
"""
    assert hazards(tmp_path, body) == []


def test_a_helper_returning_the_current_stream_names_it(tmp_path: Path) -> None:
    """`get_current_stream_fast()` is the project's own name for the current
    stream: the comparison with the side stream is decided, so the wait under
    it orders the forward's read after the side stream's write; the helper's
    look-alike returning the side stream orders nothing."""
    body = """
    def _current(self):
        return torch.get_device_module().current_stream(0)

    def _side(self):
        return self.side

    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        now = self.{helper}()
        if now != self.side:
            now.wait_stream(self.side)
        self.forward()
        torch.cuda.synchronize()
"""
    assert hazards(tmp_path / "current", body.format(helper="_current")) == []
    assert [f for f, _ in hazards(tmp_path / "side", body.format(helper="_side"))] == [
        "eng.Runner.forward"
    ]


@pytest.mark.parametrize("star", [True, False])
def test_a_helper_re_exported_by_a_star_import_is_resolved(tmp_path: Path, star: bool) -> None:
    """`from util import current_stream` where `util/__init__.py` re-exports its
    modules with `from util.common import *`: the helper is found and names the
    current stream, so the wait under the comparison orders the read. Not
    re-exported, the call is unresolved and the wait orders nothing."""
    body = """
    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        now = current_stream()
        if now != self.side:
            now.wait_stream(self.side)
        self.forward()
        torch.cuda.synchronize()
"""
    files = {
        "eng.py": "from util import current_stream\n" + HEAD + body,
        "util/__init__.py": "from util.common import *\n" if star else "",
        "util/common.py": "import torch\n\n\ndef current_stream():\n"
        "    return torch.get_device_module().current_stream(0)\n",
    }
    write_project(tmp_path, files, PACK)
    result = analyse(tmp_path)
    found = [f.location.function for f in result.findings if f.code == "SYNC004"]
    assert (found == []) is star, found


def test_wait_stream_is_transitive(tmp_path: Path) -> None:
    """current waits for side2, which waited for side after side's write."""
    body = """
    def execute_model(self, new):
        side2 = torch.cuda.Stream()
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        side2.wait_stream(self.side)
        torch.cuda.current_stream().wait_stream(side2)
        self.forward()
        torch.cuda.synchronize()
"""
    assert hazards(tmp_path, body) == []


def test_the_stream_current_before_a_with_region_comes_back_after_it(tmp_path: Path) -> None:
    """Inside the region `current_stream()` is the side stream: waiting on it
    from itself orders nothing, and the forward after the region runs on the
    step's stream again."""
    body = """
    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.side.wait_stream(torch.cuda.current_stream())
            self.tables.copy_(new, non_blocking=True)
        self.forward()
        torch.cuda.synchronize()
"""
    assert [f for f, _ in hazards(tmp_path, body)] == ["eng.Runner.forward"]


def test_set_stream_changes_the_stream_until_set_back(tmp_path: Path) -> None:
    body = """
    def execute_model(self, new):
        torch.cuda.set_stream(self.side)
        self.tables.copy_(new, non_blocking=True)
        torch.cuda.set_stream(torch.cuda.default_stream())
        self.forward()
        torch.cuda.synchronize()
"""
    # default_stream() names the stream the step began on, not the current one:
    # the forward runs there again, unordered after the side stream's copy.
    assert [f for f, _ in hazards(tmp_path, body)] == ["eng.Runner.forward"]
    current = body.replace("torch.cuda.default_stream()", "torch.cuda.current_stream()")
    # current_stream() there is the side stream: the forward stays on it.
    assert hazards(tmp_path / "current", current) == []


def test_a_gathered_argument_is_fresh_memory(tmp_path: Path) -> None:
    """`x[idx]` with a tensor index copies: the side stream reads the copy."""
    body = """
    def execute_model(self, idx):
        self.forward()
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            torch.ops.eng.offload(self.tables[idx])
        torch.ops.eng.update(self.tables, out=self.tables)
        torch.cuda.synchronize()
"""
    assert hazards(tmp_path, body) == []
    sliced = body.replace("self.tables[idx]", "self.tables[:4]")
    assert [f for f, _ in hazards(tmp_path / "sliced", sliced)] == ["eng.Runner.execute_model"]


def test_a_stream_context_kept_as_an_attribute_switches_the_stream(tmp_path: Path) -> None:
    """`self.side_ctx = torch.cuda.stream(self.side)` in __init__, then `with self.side_ctx:`."""
    body = """
    def make_context(self):
        self.side_ctx = torch.cuda.stream(self.side)

    def execute_model(self, new):
        with self.side_ctx:
            self.tables.copy_(new, non_blocking=True)
        self.forward()
        torch.cuda.synchronize()
"""
    assert [f for f, _ in hazards(tmp_path, body)] == ["eng.Runner.forward"]


def test_an_argument_indexed_where_it_was_bound_is_not_the_indexed_memory(
    tmp_path: Path,
) -> None:
    """`helper(self.tables[idx])`: the helper's parameter may be a gathered copy."""
    body = """
    def _offload(self, rows):
        with torch.cuda.stream(self.side):
            torch.ops.eng.offload(rows)

    def execute_model(self, idx):
        self.side.wait_stream(torch.cuda.current_stream())
        self._offload(self.tables[idx])
        torch.ops.eng.update(self.tables, out=self.tables)
        self.side.synchronize()
"""
    assert hazards(tmp_path, body) == []
    whole = body.replace("self._offload(self.tables[idx])", "self._offload(self.tables)")
    assert [f for f, _ in hazards(tmp_path / "whole", whole)] == ["eng.Runner.execute_model"]
    # A slice is a view (also beside an int): the helper's parameter is the tables'
    # memory; beside a tensor index it gathers a copy (vLLM's draft tokens,
    # `draft_tokens[idx_mapping, :n]`).
    for n, (index, reported) in enumerate(
        [("[:4]", True), ("[0, :4]", True), ("[idx, :4]", False)]
    ):
        view = body.replace("self._offload(self.tables[idx])", f"self._offload(self.tables{index})")
        found = [f for f, _ in hazards(tmp_path / f"view{n}", view)]
        assert found == (["eng.Runner.execute_model"] if reported else []), index


@pytest.mark.parametrize(
    "bound",
    [
        "rows = self.tables[:4]",
        "rows = self.tables[:4].copy_(new, non_blocking=True)",
        "rows = self._staged(new, out=self.tables[:4])",  # the helper returns `out`
    ],
)
@pytest.mark.parametrize("edge", ["", "self.side.wait_stream(torch.cuda.current_stream())"])
def test_a_local_bound_to_a_view_is_that_memory(tmp_path: Path, bound: str, edge: str) -> None:
    """The side stream overwrites a slice of the tables through a helper's
    parameter (`out=`) and the forward reads them through a local bound to a
    slice (or to what an in-place copy returns: its receiver); the next step's
    write must wait for this step's read (vLLM PR #33059's review)."""
    body = f"""
    def _upload(self, new, out):
        out.copy_(new, non_blocking=True)

    def _staged(self, new, out=None):
        if out is None:
            out = torch.empty_like(new)
        return out.copy_(new, non_blocking=True)

    def execute_model(self, new):
        {edge}
        with torch.cuda.stream(self.side):
            self._upload(new, out=self.tables[:4])
        torch.cuda.current_stream().wait_stream(self.side)
        {bound}
        torch.ops.eng.forward(rows, out=self.out)
        return self.out
"""
    expected = set() if edge else {"eng.Runner._upload"}
    assert {f for f, _ in hazards(tmp_path, body)} == expected


def test_locals_defined_through_each_other_name_no_memory(tmp_path: Path) -> None:
    """Following a local's one value ends where a local is defined through itself."""
    body = """
    def execute_model(self, new):
        if new is None:
            a = b[:1]
        else:
            b = a[:1]
        with torch.cuda.stream(self.side):
            torch.ops.eng.forward(a, out=b)
        return self.out
"""
    assert hazards(tmp_path, body) == []
    assert not [n for n in analyse(tmp_path).notes if "incomplete" in n]


def test_two_modes_on_two_streams_are_never_paired(tmp_path: Path) -> None:
    """Overlap mode runs the step on a side stream, the normal mode on the
    current one; each is one stream. A merge that joined their paths would pair
    one mode's writes with the other's in the next step."""
    body = """
    def execute_model(self, new):
        if self.overlap:
            with torch.cuda.stream(self.side):
                self.tables.copy_(new, non_blocking=True)
                self.forward()
        else:
            self.tables.copy_(new, non_blocking=True)
            self.forward()
        return self.out
"""
    source = body.replace("def execute_model", "overlap = False\n\n    def execute_model")
    assert hazards(tmp_path, source) == []


def test_a_join_keeps_the_mode_that_left_each_access(tmp_path: Path) -> None:
    """Both modes run on both streams, so their paths are merged; only the
    speculative one reads `tables` (on the current stream), only the other
    writes them (on the side stream). Joined, the write and the read would pair
    across steps; the mode that made each access says no step runs both."""
    body = """
    def execute_model(self, batch):
        if self.spec:
            with torch.cuda.stream(self.side):
                torch.ops.eng.fill(batch, out=self.staged)
            torch.ops.eng.forward(self.tables, out=self.out)
        else:
            with torch.cuda.stream(self.side):
                torch.ops.eng.fill(batch, out=self.tables)
            torch.ops.eng.forward(batch, out=self.out)
        return self.out
"""
    source = body.replace(
        "def execute_model",
        "def __init__(self, spec: bool):\n        super().__init__()\n"
        "        self.spec = spec\n"
        "        self.staged = torch.zeros(8, device='cuda')\n\n    def execute_model",
    )
    pack = PACK.replace("eng.Runner", "eng.Modal")
    assert hazards(tmp_path, "\n\nclass Modal(Runner):" + source, pack) == []


@pytest.mark.parametrize(("count", "ordered"), [("2", True), ("n", False), ("0", False)])
def test_a_loop_counting_to_a_positive_constant_runs_its_body(
    tmp_path: Path, count: str, ordered: bool
) -> None:
    """`for _ in range(2): torch.cuda.synchronize()` always waits; `range(n)` may not."""
    body = f"""
    def execute_model(self, new, n):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        for _ in range({count}):
            torch.cuda.synchronize()
        self.forward()
        torch.cuda.synchronize()
"""
    assert (hazards(tmp_path, body) == []) is ordered


def test_a_device_modules_stream_is_a_stream(tmp_path: Path) -> None:
    """`torch.get_device_module().Stream()`: its synchronize is a host wait on it."""
    body = """
    def make_stream(self):
        self.d2h = torch.get_device_module().Stream()

    def execute_model(self, new):
        with torch.get_device_module().stream(self.d2h):
            self.tables.copy_(new, non_blocking=True)
        self.d2h.synchronize()
        self.forward()
        torch.cuda.synchronize()
"""
    assert hazards(tmp_path, body) == []
    unsynced = body.replace("        self.d2h.synchronize()\n", "")
    assert [f for f, _ in hazards(tmp_path / "u", unsynced)] == ["eng.Runner.forward"]


def test_a_comparison_with_the_current_stream_is_decided_per_path(tmp_path: Path) -> None:
    """`if curr_stream != stream: stream.wait_stream(curr_stream)` (a graph-capture
    context): the capture stream is not the current one, so the wait happens."""
    body = """
    @contextmanager
    def capturing(self, context=None):
        stream = torch.cuda.Stream() if context is None else context
        curr_stream = torch.cuda.current_stream()
        if curr_stream != stream:
            stream.wait_stream(curr_stream)
        with torch.cuda.stream(stream):
            yield stream
        curr_stream.wait_stream(stream)

    def execute_model(self, new, recapture):
        if recapture:
            with self.capturing():
                torch.ops.eng.capture(self.tables)
        self.tables.fill_(0)
"""
    assert hazards(tmp_path, body) == []


@pytest.mark.parametrize(("stream", "ordered"), [("", False), ('stream = "self.sched"', True)])
def test_a_step_stream_named_by_the_pack_is_the_steps_current_stream(
    tmp_path: Path, stream: str, ordered: bool
) -> None:
    """The loop runs every step inside `with torch.cuda.stream(self.sched)`: the
    step's writes are on `sched`, which the forward stream waits for. Unnamed,
    the writes are on the stream current at entry and that wait orders nothing."""
    body = """
    def execute_model(self, new):
        self.tables.copy_(new, non_blocking=True)
        self.side.wait_stream(self.sched)
        with torch.cuda.stream(self.side):
            self.forward()
        self.sched.wait_stream(self.side)
        return self.out
"""
    source = body.replace(
        "def execute_model",
        "def __init__(self):\n        super().__init__()\n"
        "        self.sched = torch.cuda.Stream()\n\n    def execute_model",
    )
    source = "\n\nclass Scheduled(Runner):" + source
    pack = PACK.replace("eng.Runner", "eng.Scheduled") + stream + "\n"
    assert (hazards(tmp_path, source, pack) == []) is ordered


# A fresh tensor of the step, read on the side stream: when execute_model
# returns, the caching allocator may give its block to the current stream's next
# allocation (`record_stream` is the remedy). {use} is how the side stream reads
# it, {after} what follows the read.
FRESH = """
    def execute_model(self, n):
        x = torch.empty(n, 8, device="cuda")
        torch.ops.eng.fill(out=x)
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            {use}
        {after}
        return self.out

    def read_on_side(self, t):
        torch.ops.eng.consume(t, out=self.out)

    def read_and_record(self, t):
        torch.ops.eng.consume(t, out=self.out)
        t.record_stream(self.side)

    def read_and_keep(self, t):
        torch.ops.eng.consume(t, out=self.out)
        self.kept = t
"""

FREED = (
    "eng.Runner.execute_model",
    "In mode 'every mode', the fresh tensor x of Runner.execute_model is freed (eng.py",
)


@pytest.mark.parametrize(
    ("use", "after", "reported"),
    [
        ("torch.ops.eng.consume(x, out=self.out)", "pass", True),
        ("self.read_on_side(x)", "pass", True),  # through a parameter
        ("torch.ops.eng.consume(x[:4], out=self.out)", "pass", True),  # a view of it
        ("torch.ops.eng.consume(x, out=self.out)", "x.record_stream(self.side)", False),
        ("self.read_and_record(x)", "pass", False),  # recorded through the parameter
        ("torch.ops.eng.consume(x, out=self.out)", "self.later = x", False),  # kept
        ("self.read_and_keep(x)", "pass", False),  # the helper keeps it
        ("torch.ops.eng.consume(x, out=self.out)", "self.later = [x]", False),  # in a list
        ("torch.ops.eng.consume(x, out=self.out)", "y = x.view(-1); self.later = y", False),
        (
            "torch.ops.eng.consume(x, out=self.out)",
            "torch.cuda.current_stream().wait_stream(self.side)",
            False,
        ),
        ("torch.ops.eng.consume(x, out=self.out)", "torch.cuda.synchronize()", False),
    ],
)
def test_a_fresh_tensor_freed_while_another_stream_reads_it(
    tmp_path: Path, use: str, after: str, reported: bool
) -> None:
    found = hazards(tmp_path, FRESH.format(use=use, after=after))
    assert found == ([FREED] if reported else []), found


def test_a_fresh_tensor_allocated_on_one_stream_and_written_on_another_needs_a_wait(
    tmp_path: Path,
) -> None:
    """The block a fresh allocation gets may still be used by the allocating
    stream's earlier work: the other stream must wait before writing it."""
    body = """
    def execute_model(self, n):
        x = torch.empty(n, 8, device="cuda")
        {edge}
        with torch.cuda.stream(self.side):
            torch.ops.eng.fill(out=x)
            x.record_stream(self.side)
        torch.cuda.current_stream().wait_stream(self.side)
        torch.ops.eng.consume(x, out=self.out)
        return self.out
"""
    unordered = hazards(tmp_path / "a", body.format(edge="pass"))
    assert [m.split(" hazard")[0] for _, m in unordered] == [
        "In mode 'every mode', write-after-write"
    ]
    ordered = body.format(edge="self.side.wait_stream(torch.cuda.current_stream())")
    assert hazards(tmp_path / "b", ordered) == []


# The side stream writes the tables; the host copies them out on the current
# stream (`.cpu()`, `.item()`, `.tolist()`): a D2H copy on that stream reads them
# there, and the host then waits for that stream only. Measured on an H200 (the
# `stream_lazy_event_per_mode` program's probe: a blocking `.cpu()` of memory the
# forward stream wrote, with no edge, read stale data in 20 of 20 trials).
COPY_OUT = """
    def execute_model(self, new):
        with torch.cuda.stream(self.side):
            self.tables.copy_(new, non_blocking=True)
        {edge}
        return self.tables.{method}
"""


@pytest.mark.parametrize("method", ["cpu()", "tolist()"])
@pytest.mark.parametrize(
    ("edge", "ordered"),
    [
        ("pass", False),
        ("torch.cuda.current_stream().wait_stream(self.side)", True),
        ("self.side.synchronize()", True),
    ],
)
def test_a_copy_to_the_host_reads_on_the_current_stream(
    tmp_path: Path, method: str, edge: str, ordered: bool
) -> None:
    found = hazards(tmp_path, COPY_OUT.format(edge=edge, method=method))
    expected = (
        []
        if ordered
        else [
            (
                "eng.Runner.execute_model",
                "In mode 'every mode', read-after-write hazard on self.tables",
            )
        ]
    )
    assert found == expected
