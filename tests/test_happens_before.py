"""The happens-before model on small engines: what orders a host write after the
device's access, what does not, and what the resolution must see to know."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FIXTURES, analyse, copy_project, write_project

PACK = """
[pack]
name = "hb"
[[step_root]]
class = "eng.Runner"
method = "execute_model"
"""

KERNEL = """
import torch
import triton


@triton.jit
def read_kernel(src, n):
    pass
"""


def codes(root: Path, source: str, pack: str = PACK) -> list[tuple[str, str]]:
    """(code, function) of every finding on a one-module engine `eng`."""
    write_project(root, {"eng.py": KERNEL + source}, pack)
    return sorted((f.code, f.location.function) for f in analyse(root).findings)


def messages(root: Path, files: dict[str, str], pack: str = PACK) -> list[str]:
    """The message of every finding on an engine made of `files`."""
    write_project(root, files, pack)
    return [f.message for f in analyse(root).findings]


def with_vocabulary(pack: str, key: str, name: str) -> str:
    """`pack` with a one-name vocabulary list `key` (nothing added for no name)."""
    return pack + (f'[vocabulary]\n{key} = ["{name}"]\n' if name else "")


# A persistent pinned buffer copied to the device with non_blocking=True every
# step and rewritten by the next step: nothing orders the write after the copy.
UNORDERED = """
class Runner:
    def __init__(self, pin):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory={pin})
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        return {{}}
"""


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ("True", [("SYNC001", "eng.Runner.execute_model")]),
        ("pin", [("SYNC001", "eng.Runner.execute_model")]),  # a flag: not provably false
        ("is_pin_memory_available()", [("SYNC001", "eng.Runner.execute_model")]),
        ("False", []),  # pageable: the copy is staged before the call returns
    ],
)
def test_pin_memory_expression_pins_unless_provably_false(
    tmp_path: Path, pin: str, expected: list
) -> None:
    assert codes(tmp_path, UNORDERED.format(pin=pin)) == expected


def test_a_blocking_copy_is_a_host_wait_not_a_launch(tmp_path: Path) -> None:
    """PyTorch synchronizes the stream for a copy to or from host memory without
    non_blocking: the next write is ordered after it."""
    source = UNORDERED.format(pin="True").replace(", non_blocking=True", "")
    assert codes(tmp_path, source) == []


def test_the_reader_is_the_launch_that_reads_the_written_buffer(tmp_path: Path) -> None:
    """A kernel reading other memory is not the write's device reader; the witness
    names the kernel that reads the pinned buffer."""
    source = """
class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, pin_memory=True)
        self.other = torch.zeros(8, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        read_kernel[(1,)](self.other, 8)
        read_kernel[(1,)](self.ids, 8)
        return {}
"""
    write_project(tmp_path, {"eng.py": KERNEL + source}, PACK)
    (finding,) = analyse(tmp_path).findings
    reader = next(w for w in finding.witness if w.note.startswith("the device reads it"))
    assert (
        reader.line
        == KERNEL.count("\n")
        + source.splitlines().index("        read_kernel[(1,)](self.ids, 8)")
        + 1
    )


def test_a_factory_method_types_self_and_its_buffer(tmp_path: Path) -> None:
    """`self.buf = self._make()` with a return annotation: `self` is typed as the
    class, so the writes and copies through `self.buf` are seen."""
    source = """
class Staging:
    def __init__(self):
        self.cpu = torch.zeros(8, pin_memory=True)
        self.gpu = torch.zeros(8, device="cuda")

    def upload(self):
        self.gpu.copy_(self.cpu, non_blocking=True)


class Runner:
    def __init__(self):
        self.buf = self._make()

    def _make(self) -> Staging:
        return Staging()

    def execute_model(self, batch):
        self.buf.cpu[: len(batch)] = batch
        self.buf.upload()
        return {}
"""
    assert codes(tmp_path, source) == [("SYNC001", "eng.Runner.execute_model")]


GUARDED = """
class Runner:
    def __init__(self, overlap):
        self.ids = torch.zeros(8, pin_memory=True)
        self.ids_gpu = torch.zeros(8, device="cuda")
        self.overlap = overlap
        self.prep_event = None
        if self.overlap:
            self.prep_event = torch.cuda.Event()

    def execute_model(self, batch):
        if self.prep_event is not None:
            self.prep_event.synchronize()
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if self.prep_event is not None:
            self.prep_event.record()
        return {}
"""


def test_a_guard_created_under_a_condition_orders_only_that_mode(tmp_path: Path) -> None:
    """`self.ev = None; if P: self.ev = Event()`: the semaphore holds where P does;
    where the guard is None the write escapes the protocol the buffer has in the
    other mode (SYNC003, in that mode)."""
    write_project(tmp_path, {"eng.py": KERNEL + GUARDED}, PACK)
    result = analyse(tmp_path)
    (finding,) = result.findings
    assert finding.code == "SYNC003"
    assert finding.mode == (("self.overlap", False),)
    verdicts = {
        (p.verdict, dict(p.state.assumptions).get("self.overlap"))
        for r in result.analysis.step_results
        for p in r.paths
    }
    assert ("semaphore", True) in verdicts and ("write outside guard", False) in verdicts


def test_a_pack_idle_condition_is_a_step_with_no_device_reader(tmp_path: Path) -> None:
    """A no-work step (the pack names its condition) writes nothing a kernel reads."""
    source = """
class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, pin_memory=True)
        self.ids_gpu = torch.zeros(8, device="cuda")
        self.event = torch.cuda.Event()

    def execute_model(self, out):
        self.ids[: len(out.ids)] = out.ids
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if not out.num_tokens:
            return {}
        self.event.record()
        self.event.synchronize()
        return {}
"""
    assert codes(tmp_path, source) == [("SYNC001", "eng.Runner.execute_model")]
    idle = PACK + '[vocabulary]\nidle_conditions = ["out.num_tokens == 0"]\n'
    assert codes(tmp_path / "idle", source, idle) == []


def test_an_accessor_call_predicate_is_a_mode_a_pack_can_bound(tmp_path: Path) -> None:
    """`get_group().is_last` (a module function's result, constant for the
    process) splits modes. A pack's peer bound (the last rank waits, and the
    engine admits only so many steps ahead) covers a pool as deep as that bound,
    never a single buffer the very next step rewrites (vLLM PR #47644)."""
    single = """
def get_group():
    return GROUP


class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, pin_memory=True)
        self.ids_gpu = torch.zeros(8, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if not get_group().is_last:
            return {}
        torch.cuda.synchronize()
        return {}
"""
    pooled = single.replace(
        "        self.ids = torch.zeros(8, pin_memory=True)\n",
        "        self.pool = [torch.zeros(8, pin_memory=True) for _ in range(2)]\n"
        "        self.slot = 0\n",
    ).replace(
        "        self.ids[: len(batch)] = batch\n        self.ids_gpu.copy_(self.ids, ",
        "        self.slot = (self.slot + 1) % 2\n        ids = self.pool[self.slot]\n"
        "        ids[: len(batch)] = batch\n        self.ids_gpu.copy_(ids, ",
    )
    assert pooled != single
    write_project(tmp_path, {"eng.py": KERNEL + single}, PACK)
    (finding,) = analyse(tmp_path).findings
    assert dict(finding.mode) == {"get_group().is_last": False}
    bounded = PACK + (
        '[[bounded_mode]]\npredicate = "get_group().is_last"\nvalue = false\n'
        'reason = "the last rank waits and the engine admits two steps ahead"\n'
    )
    unbounded = [("SYNC001", "eng.Runner.execute_model")]
    assert codes(tmp_path / "single", single, bounded) == unbounded
    assert codes(tmp_path / "pooled", pooled, PACK) == unbounded
    assert codes(tmp_path / "pooled-bounded", pooled, bounded) == []


# The deferred fixture's output: get_output waits on an event its constructor
# records after the step's launches. The engine walks get_output from each path's
# end, so the wait covers what the record saw, and a host read meets the
# non_blocking device-to-host copy still landing in its fresh pinned result.
DEFERRED = FIXTURES / "deferred_wait_through_output" / "clean"
RECORD = "        self.copy_event.record()\n"
WAIT_THEN_READ = (
    "        self.copy_event.synchronize()\n"
    "        return dict(zip(self.req_ids, self.sampled_cpu.tolist()))\n"
)
READ_THEN_WAIT = (
    "        out = dict(zip(self.req_ids, self.sampled_cpu.tolist()))\n"
    "        self.copy_event.synchronize()\n"
    "        return out\n"
)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (RECORD, RECORD, []),
        # Never recorded: the synchronize returns at once, covering nothing, so
        # the read after it still meets the landing copy.
        (RECORD, "", [("SYNC003", "engine.outputs.AsyncOutput.get_output")]),
        # The host reads the copy's destination before the wait that covers it.
        (WAIT_THEN_READ, READ_THEN_WAIT, [("SYNC003", "engine.outputs.AsyncOutput.get_output")]),
    ],
    ids=["as-shipped", "event-never-recorded", "read-before-wait"],
)
def test_the_resolution_is_walked_from_the_step_end(
    tmp_path: Path, old: str, new: str, expected: list[tuple[str, str]]
) -> None:
    project = copy_project(DEFERRED, tmp_path / "p")
    outputs = project / "engine" / "outputs.py"
    text = outputs.read_text(encoding="utf-8")
    assert old in text
    outputs.write_text(text.replace(old, new), encoding="utf-8")
    found = sorted((f.code, f.location.function) for f in analyse(project).findings)
    assert found == expected


# Two pools allocated by one class are two identities: a slot write into one
# after the guard's record is not covered by the record of the other's accesses.
# And a helper's parameter keeps the holder of the buffer it was passed.
HELPER_COPY = """
def copy_slice(src, dst, n):
    dst[:n].copy_(src[:n], non_blocking=True)


class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        copy_slice(self.ids, self.ids_gpu, len(batch))
        return {}
"""


def test_a_helper_parameter_keeps_the_holder_of_its_buffer(tmp_path: Path) -> None:
    assert codes(tmp_path, HELPER_COPY) == [("SYNC001", "eng.Runner.execute_model")]


# A dummy batch (an idle data-parallel rank's) shares the step's buffers: its
# writes race a real step's pending copy, but what its own device work reads is
# discarded, so its paths are never judged themselves.
WITH_DUMMY = """
class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.event = torch.cuda.Event()

    def execute_model(self, batch):
        self.event.synchronize()
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        self.event.record()
        return {}

    def dummy_run(self):
        self.ids[:1] = 0
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        return {}
"""
DUMMY_ROOT = '[[step_root]]\nclass = "eng.Runner"\nmethod = "dummy_run"\n'


@pytest.mark.parametrize(
    ("discards", "expected"),
    [
        ("true", [("SYNC003", "eng.Runner.dummy_run")]),
        # Judged as a step of its own, its copy (which no event records) is also
        # raced by each entry point's next write: the real step's guarded one and
        # its own.
        (
            "false",
            [
                ("SYNC003", "eng.Runner.dummy_run"),
                ("SYNC003", "eng.Runner.dummy_run"),
                ("SYNC003", "eng.Runner.execute_model"),
            ],
        ),
    ],
)
def test_a_dummy_batch_root_is_a_next_step_whose_output_is_discarded(
    tmp_path: Path, discards: str, expected: list[tuple[str, str]]
) -> None:
    pack = PACK + DUMMY_ROOT + f"discards_output = {discards}\n"
    assert codes(tmp_path, WITH_DUMMY, pack) == expected


PRODUCER_RETURNS_EARLY = """
class Runner:
    def __init__(self, producer):
        self.producer = producer
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if self.producer:
            return {}
        torch.cuda.synchronize()
        return {}
"""


def test_an_unread_mode_row_silences_a_mode_whose_uploads_reach_no_output(
    tmp_path: Path,
) -> None:
    assert codes(tmp_path / "plain", PRODUCER_RETURNS_EARLY) == [
        ("SYNC001", "eng.Runner.execute_model")
    ]
    unread = PACK + (
        '[[unread_mode]]\npredicate = "self.producer"\nvalue = true\n'
        'reason = "a producer runs only the encoder"\n'
    )
    assert codes(tmp_path / "unread", PRODUCER_RETURNS_EARLY, unread) == []


def test_the_audit_lists_unresolved_method_calls_on_the_step_path(tmp_path: Path) -> None:
    """`self.model(...)` on a model built at load time resolves to nothing: it may
    hide a wait or a launch, so the audit names it with its site."""
    from syncscan.report.audit_model import unresolved_rows

    source = """
class Runner:
    def __init__(self, loader):
        self.model = loader.load()
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        out = self.model.forward_step(self.ids)
        return {}
"""
    write_project(tmp_path, {"eng.py": KERNEL + source}, PACK)
    rows = unresolved_rows(analyse(tmp_path))
    assert rows == [("self.model.forward_step(...)", 1, "eng.py:17")]


def test_a_with_target_is_the_entered_object(tmp_path: Path) -> None:
    """`with Staging(...) as st`: st's pinned buffer is the object's own, so the
    unordered rewrite of it is found through the `as` name."""
    source = """
class Staging:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Runner:
    def __init__(self):
        self.staging = Staging()
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        with self.staging as st:
            st.ids[: len(batch)] = batch
            self.ids_gpu.copy_(st.ids, non_blocking=True)
        return {}
"""
    assert codes(tmp_path, source) == [("SYNC001", "eng.Runner.execute_model")]


def test_the_widening_keeps_a_guards_wait_on_the_writes_it_orders(tmp_path: Path) -> None:
    """Past 16 states at one point the walk joins states that agree on what a
    verdict reads. A state that waited on the guard's event (the overlapping
    mode) must not be joined with one that did not: the join keeps only the
    waits both made before each write, so the guard would vanish from the
    write and the overlapping mode would race a copy its guard orders."""
    flags = "".join(f"        if self.f{i}:\n            self.p{i}[0] = 1\n" for i in range(5))
    buffers = "".join(
        f"        self.f{i} = cfg.f{i}\n        self.p{i} = torch.zeros(2, pin_memory=True)\n"
        for i in range(5)
    )
    source = f"""
class Runner:
    def __init__(self, cfg):
{buffers}        self.overlap = cfg.overlap
        self.event = torch.cuda.Event() if self.overlap else None
        self.other = torch.cuda.Event()
        self.ids = torch.zeros(8, pin_memory=True)
        self.ids_gpu = torch.zeros(8, device="cuda")

    def execute_model(self, batch):
        self.other.synchronize()
        if self.event is not None:
            self.event.synchronize()
        self.ids[: len(batch)] = batch
{flags}        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if self.event is not None:
            self.event.record()
            return {{}}
        torch.cuda.synchronize()
        return {{}}
"""
    assert codes(tmp_path, source) == []


def test_merged_paths_keep_the_modes_they_had(tmp_path: Path) -> None:
    """Two paths with the same facts merge only where their modes combine
    exactly. `post` returns early when `not spec` or when `spec and not hybrid`;
    keeping only the assumptions those two share would make the merged path
    one of every mode, `spec and hybrid` included, and it does not wait. Taken
    as the next step of the `spec and hybrid` step (whose next step waits in
    `post` before it rewrites `ids`), it would make that step's copy unbounded.
    The shape of vLLM 0.19.1's _update_states_after_model_execute."""
    source = """
class Runner:
    def __init__(self, cfg):
        self.spec = cfg.spec
        self.hybrid = cfg.hybrid
        self.sync_at_end = cfg.sync_at_end
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.counts_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def post(self):
        if not self.spec or not self.hybrid:
            return
        self.counts_gpu.cpu()

    def execute_model(self, batch):
        self.post()
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if self.sync_at_end:
            torch.cuda.synchronize()
        return {}
"""
    write_project(tmp_path, {"eng.py": KERNEL + source}, PACK)
    result = analyse(tmp_path)
    verdicts = {
        tuple(sorted(p.state.assumptions)): p.verdict
        for r in result.analysis.step_results
        for p in r.paths
    }
    both = (("self.hybrid", True), ("self.spec", True), ("self.sync_at_end", False))
    assert verdicts[both] == "not rewritten"
    # The modes that never wait stay reported, each under its own mode.
    assert verdicts[(("self.spec", False), ("self.sync_at_end", False))] == "unbounded"
    not_hybrid = (("self.hybrid", False), ("self.spec", True), ("self.sync_at_end", False))
    assert verdicts[not_hybrid] == "unbounded"


def test_exact_modes() -> None:
    """The union of the modes, as few conjunctions as the two rules give."""
    from syncscan.flow.alternatives import exact_modes

    a, b, c = ("a", True), ("b", True), ("c", True)
    not_a, not_b = ("a", False), ("b", False)
    assert exact_modes([(a,), (not_a,)]) == [()]
    assert exact_modes([(a,), (a, b)]) == [(a,)]
    assert exact_modes([(a, b), (a, not_b), (not_a,)]) == [()]
    assert sorted(exact_modes([(not_a,), (a, not_b)])) == [(not_a,), (a, not_b)]
    assert sorted(exact_modes([(a, c), (not_a, b)])) == [(not_a, b), (a, c)]


# A guard created under nested conditions, and tested through helpers that take
# it as a parameter: its non-None is the conjunction of the ifs around it.
NESTED_GUARD = """
def wait_for(event: torch.cuda.Event | None) -> None:
    if event is not None:
        event.synchronize()


def record(event: torch.cuda.Event | None) -> None:
    if event is not None:
        event.record()


class Runner:
    def __init__(self, cfg):
        self.overlap = cfg.overlap
        self.spec = cfg.spec
        self.draft = cfg.draft
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.event = None
        if self.spec:
            if self.overlap:
                self.event = {value}

    def execute_model(self, batch):
        wait_for(self.event)
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        record(self.event)
        if not (self.spec and self.overlap):
            torch.cuda.synchronize()
        return {{}}
"""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("torch.cuda.Event()", []),
        # None with a draft model, in a mode that still overlaps steps
        (
            "torch.cuda.Event() if self.draft is None else None",
            [("SYNC003", "eng.Runner.execute_model")],
        ),
    ],
)
def test_a_guard_is_correlated_with_every_condition_around_it(
    tmp_path: Path, value: str, expected: list
) -> None:
    write_project(tmp_path, {"eng.py": KERNEL + NESTED_GUARD.format(value=value)}, PACK)
    result = analyse(tmp_path)
    assert sorted((f.code, f.location.function) for f in result.findings) == expected
    for finding in result.findings:
        assert dict(finding.mode).get("self.draft") is True


# A per-step flag: the step waits on the previous step's event only when the
# previous step left `state.prev` set. Set every step, every next step waits.
FLAG = """
class State:
    def __init__(self):
        self.prev = None


class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.event = torch.cuda.Event()
        self.state = State()

    def execute_model(self, batch):
        self._wait_previous()
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        self.event.record()
        self.state.prev = {value}
        return {{}}

    def _wait_previous(self):
        prev = self.state.prev
        if prev is None:
            return
        self.event.synchronize()
"""


@pytest.mark.parametrize(
    ("value", "reported"),
    [("self.ids_gpu.clone()", False), ("None", True)],
)
def test_a_flag_the_previous_step_set_decides_the_next_steps_wait(
    tmp_path: Path, value: str, reported: bool
) -> None:
    found = codes(tmp_path, FLAG.format(value=value))
    assert bool(found) == reported


# A D2H copy into pinned memory lands later; the next step reads it on the host.
# Before the wait, the host reads what has not landed.
D2H_READ = """
class Runner:
    def __init__(self):
        self.counts = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.counts_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.event = torch.cuda.Event()

    def execute_model(self, batch):
        {before}
        first = self.counts.tolist()
        {after}
        self.counts.copy_(self.counts_gpu, non_blocking=True)
        self.event.record()
        return first
"""


@pytest.mark.parametrize(
    ("before", "after", "reported"),
    [
        ("pass", "self.event.synchronize()", True),
        ("self.counts[2] = 1", "self.event.synchronize()", True),  # the read is shown
        ("self.event.synchronize()", "pass", False),
    ],
)
def test_a_host_read_of_a_landing_copy_is_the_race_shown(
    tmp_path: Path, before: str, after: str, reported: bool
) -> None:
    write_project(tmp_path, {"eng.py": KERNEL + D2H_READ.format(before=before, after=after)}, PACK)
    findings = analyse(tmp_path).findings
    assert bool(findings) == reported
    for finding in findings:
        assert finding.code == "SYNC003"
        assert "reads pinned buffer" in finding.witness[-1].note


def test_joined_alternatives_keep_the_modes_a_join_lost() -> None:
    """Three paths joined under what they share keep their own modes: a split
    skips a branch none admits, and a step pairs only where one agrees."""
    from syncscan.flow.state import PathState, join

    a, b = ("self.hybrid", True), ("self.align", True)
    paths = [
        PathState(assumptions=(a, ("self.align", False))),
        PathState(assumptions=(("self.hybrid", False),)),
    ]
    joined = join(paths, ())
    assert joined.assumptions == ()
    assert joined.admits("self.align", False)
    assert not joined.assume("self.hybrid", True).admits(*b)
    assert joined.modes() == ((("self.align", False), a), (("self.hybrid", False),))


# A literal argument decides the callee's test of it; a dummy batch's host reads
# reach no output, so as the next step only its writes race.
CONST_ARG = """
class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self._stage(batch, only_zeros={flag})
        torch.cuda.synchronize()
        self._stage(batch)
        return {{}}

    def _stage(self, batch, only_zeros=False):
        if not only_zeros:
            self.ids_gpu.copy_(self.ids, non_blocking=True)
        else:
            self.ids[: len(batch)] = 0
"""


@pytest.mark.parametrize(("flag", "reported"), [("True", True), ("False", False)])
def test_a_literal_argument_decides_the_callees_branch(
    tmp_path: Path, flag: str, reported: bool
) -> None:
    """The last call copies (its default); with only_zeros=True the first call
    writes the buffer the previous step's last copy may still read."""
    assert bool(codes(tmp_path, CONST_ARG.format(flag=flag))) == reported


DUMMY_READS = """
class Runner:
    def __init__(self):
        self.counts = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.counts_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.counts.copy_(self.counts_gpu, non_blocking=True)
        return {}

    def dummy_run(self):
        seen = self.counts.tolist()
        torch.cuda.synchronize()
        return seen
"""


@pytest.mark.parametrize(("discards", "reported"), [("true", False), ("false", True)])
def test_a_dummy_batchs_host_reads_reach_no_output(
    tmp_path: Path, discards: str, reported: bool
) -> None:
    pack = PACK + DUMMY_ROOT + f"discards_output = {discards}\n"
    write_project(tmp_path, {"eng.py": KERNEL + DUMMY_READS}, pack)
    assert bool(analyse(tmp_path).findings) == reported


# An upload whose only device reader does not run in a mode (a pack's
# `unread_upload` row): a race on it there reaches no output.
UNREAD_UPLOAD = """
class Runner:
    def __init__(self, cfg):
        self.last = cfg.last
        self.temps = torch.zeros(8, pin_memory=True)
        self.temps_gpu = torch.zeros(8, device="cuda")

    def execute_model(self, batch):
        self.temps[: len(batch)] = batch
        self._upload_sampling()
        if not self.last:
            return {}
        torch.cuda.synchronize()
        return {}

    def _upload_sampling(self):
        self.temps_gpu.copy_(self.temps, non_blocking=True)
"""
UNREAD_ROW = """
[[unread_upload]]
launched_in = "eng.Runner._upload_sampling"
predicate = "self.last"
value = false
reason = "only the last rank reads it"
"""


@pytest.mark.parametrize(("row", "expected"), [("", 1), (UNREAD_ROW, 0)])
def test_an_upload_no_device_work_reads_in_a_mode_races_nothing_there(
    tmp_path: Path, row: str, expected: int
) -> None:
    write_project(tmp_path, {"eng.py": KERNEL + UNREAD_UPLOAD}, PACK + row)
    assert len(analyse(tmp_path).findings) == expected


# A helper records an event and waits on it at once (`_to_list`): every launch
# before the record is done, the caller's included. The other branch waits on
# the whole device; the join must keep what both waits cover.
DRAIN = """
class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.out = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.done = torch.cuda.Event()

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        return self._bookkeeping(batch)

    def _bookkeeping(self, batch):
        if len(batch) > 1:
            return self._to_list()
        torch.cuda.synchronize()
        return []

    def _to_list(self):
        self.out.copy_(self.ids_gpu, non_blocking=True)
        self.done.record()
        {wait}
        return self.out.tolist()
"""


@pytest.mark.parametrize(("wait", "reported"), [("self.done.synchronize()", False), ("", True)])
def test_a_wait_on_an_event_a_callee_recorded_drains_the_callers_launches(
    tmp_path: Path, wait: str, reported: bool
) -> None:
    assert bool(codes(tmp_path, DRAIN.format(wait=wait))) == reported


# `n = 0; if cfg: n = cfg.k`: with `k` validated positive (a pack says so),
# `n` is truthy exactly when `cfg` is set, so testing `n` tests the mode.
# Without that fact, a path with `cfg` set and `n` zero skips the wait.
POSITIVE = """
class Spec:
    def __init__(self, k: int):
        self.k = k


class Runner:
    def __init__(self, spec: Spec | None):
        self.spec = spec
        self.n = 0
        if self.spec:
            self.n = self.spec.k
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.event = torch.cuda.Event()

    def execute_model(self, batch):
        if self.n:
            self.event.synchronize()
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        if self.spec:
            self.event.record()
            return {}
        torch.cuda.synchronize()
        return {}
"""
POSITIVE_ROW = """
[vocabulary]
positive_attributes = ["eng.Spec.k"]
"""


@pytest.mark.parametrize(("row", "reported"), [(POSITIVE_ROW, False), ("", True)])
def test_a_falsy_default_set_positive_under_a_condition_is_that_condition(
    tmp_path: Path, row: str, reported: bool
) -> None:
    assert bool(codes(tmp_path, POSITIVE, PACK + row)) == reported


# A wake-up that restores buffers saved as host copies (`{n: b.cpu().clone()}`)
# with blocking copies: PyTorch synchronizes the stream after each (measured in
# tests/gpu), so nothing of it is still running when it returns. A kernel
# launched after the restore still is.
WAKE_UP = """
class Worker:
    def __init__(self, model):
        self.model = model
        self.saved = {{}}

    def sleep(self):
        torch.cuda.synchronize()
        self.saved = {{name: buf.cpu().clone() for name, buf in self.model.named_buffers()}}

    def wake_up(self):
        for name, buf in self.model.named_buffers():
            if name in self.saved:
                buf.data.copy_(self.saved[name].data)
        self.saved = {{}}
        {after}
"""
QUIESCENCE = """
[pack]
name = "hb"
[[quiescence]]
function = "eng.Worker.wake_up"
busy_on_entry = false
why = "the caller runs device work on the restored memory"
"""


@pytest.mark.parametrize(
    ("after", "reported"),
    [("return None", False), ("read_kernel[(1,)](self.model, 1)", True)],
)
def test_a_blocking_restore_from_host_copies_leaves_no_device_work(
    tmp_path: Path, after: str, reported: bool
) -> None:
    found = codes(tmp_path, WAKE_UP.format(after=after), QUIESCENCE)
    assert found == ([("SYNC002", "eng.Worker.wake_up")] if reported else [])


# An if/elif chain whose branches all bind the name read right after it: with
# no branch taken the read raises, so that path is no step that completes.
FALLTHROUGH = """
class Runner:
    def __init__(self, method):
        self.method = method
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        return self._finish()

    def _finish(self):
        {before}
        if self.method == "a":
            out = self._wait()
        elif self.method == "b":
            out = self._wait()
        {orelse}
        return out

    def _wait(self):
        torch.cuda.synchronize()
        return 1
"""


@pytest.mark.parametrize(
    ("before", "orelse", "reported"),
    [
        ("pass", "", False),  # no branch taken: `return out` raises
        ("pass", "else:\n            out = 0", True),  # the else path returns unwaited
        ("out = 0", "", True),  # bound before the chain: falling through returns it
    ],
)
def test_a_fall_through_that_reads_an_unbound_name_is_no_path(
    tmp_path: Path, before: str, orelse: str, reported: bool
) -> None:
    assert bool(codes(tmp_path, FALLTHROUGH.format(before=before, orelse=orelse))) == reported


@pytest.mark.parametrize(
    ("body", "raises"),
    [
        ("if a:\n        x = 1\n    elif b:\n        x = 2\n    return x", True),
        ("if a:\n        x = 1\n    return x", True),
        ("if a:\n        x = 1\n    else:\n        x = 2\n    return x", False),  # no fall-through
        ("x = 0\n    if a:\n        x = 1\n    return x", False),  # bound before
        ("if a:\n        x = 1\n    log()\n    return x", False),  # not read right after
        ("if a:\n        x = 1\n    elif b:\n        y = 2\n    return x", False),  # one branch
        ("for i in c:\n        if a:\n            x = 1\n        print(x)", False),  # a loop
        ("try:\n        if a:\n            x = 1\n        print(x)\n    except NameError:\n"
         "        pass", False),  # a handler
    ],
)  # fmt: skip
def test_which_fall_throughs_raise(body: str, raises: bool) -> None:
    from syncscan.flow.unbound import raising_fallthroughs
    from syncscan.index.build import summarise

    function = summarise(f"def f(a, b, c):\n    {body}\n", "m", "m.py", False).functions["f"]
    assert bool(raising_fallthroughs(function)) == raises


# `x = wait() if P else None`: the wait runs only where P holds; the other arm's
# path leaves the copy unwaited.
IFEXP = """
class Runner:
    def __init__(self, eager):
        self.eager = eager
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        done = self.ids_gpu.tolist() if {test} else None
        return done
"""


@pytest.mark.parametrize(("test", "reported"), [("self.eager", True), ("True", False)])
def test_a_call_in_one_arm_of_a_conditional_expression_runs_only_there(
    tmp_path: Path, test: str, reported: bool
) -> None:
    assert bool(codes(tmp_path, IFEXP.format(test=test))) == reported


@pytest.mark.parametrize(
    ("value", "reported"),
    [
        ("self.eager and self.ids_gpu.tolist()", True),  # runs only in eager mode
        ("self.eager or self.ids_gpu.tolist()", True),  # runs only when not eager
        ("self.ids_gpu.tolist() and self.eager", False),  # the first operand always runs
    ],
)
def test_a_call_in_a_later_operand_of_and_or_runs_only_if_reached(
    tmp_path: Path, value: str, reported: bool
) -> None:
    source = IFEXP.replace("self.ids_gpu.tolist() if {test} else None", value)
    assert bool(codes(tmp_path, source)) == reported


@pytest.mark.parametrize(("assume", "reported"), [("", True), ("eng.DEBUG", False)])
def test_a_flag_the_pack_assumes_off_takes_only_its_false_branch(
    tmp_path: Path, assume: str, reported: bool
) -> None:
    """`if DEBUG:` (a module flag read from the environment) is data unless a
    pack says it is off in the configuration analysed: then its body never runs."""
    source = """
import os

import torch

DEBUG = os.environ.get("ENG_DEBUG") == "1"


class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        if DEBUG:
            self.ids[: len(batch)] = batch
            self.ids_gpu.copy_(self.ids, non_blocking=True)
        return {}
"""
    found = messages(tmp_path, {"eng.py": source}, with_vocabulary(PACK, "assume_false", assume))
    assert bool(found) is reported, found


@pytest.mark.parametrize(("other", "reported"), [("", True), ("eng.npu", False)])
def test_a_subclass_for_another_device_is_never_dispatched_to(
    tmp_path: Path, other: str, reported: bool
) -> None:
    """A graph runner typed as the CUDA base also dispatches to its subclasses;
    one in a package a pack names as another device's is never made here."""
    core = """
import torch


class GraphRunner:
    def replay(self, batch):
        return batch


class Runner:
    def __init__(self):
        self.graphs: GraphRunner = GraphRunner()

    def execute_model(self, batch):
        return self.graphs.replay(batch)
"""
    npu = """
import torch

from eng.core import GraphRunner


class NpuGraphRunner(GraphRunner):
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def replay(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        return {}
"""
    pack = with_vocabulary(
        PACK.replace("eng.Runner", "eng.core.Runner"), "other_device_modules", other
    )
    files = {
        "eng/__init__.py": "",
        "eng/core.py": core,
        "eng/npu/__init__.py": "",
        "eng/npu/graph.py": npu,
    }
    found = messages(tmp_path, files, pack)
    assert bool(found) is reported, found


@pytest.mark.parametrize(("effect_free", "reported"), [("", True), ("eng.Staging.stage", False)])
def test_a_function_a_pack_declares_effect_free_is_not_walked(
    tmp_path: Path, effect_free: str, reported: bool
) -> None:
    """A pinned staging branch that never runs on the device analysed (the
    pack says why) is not walked: the call resolves and has no effect."""
    source = """
import torch


class Staging:
    def __init__(self):
        self.lens = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.lens_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def stage(self, given, batch):
        if given is not None:
            return given
        self.lens[: len(batch)] = batch
        self.lens_gpu.copy_(self.lens, non_blocking=True)
        return self.lens_gpu


class Runner:
    def __init__(self):
        self.staging = Staging()

    def execute_model(self, batch):
        self.staging.stage(batch.lens, batch)
        return {}
"""
    pack = with_vocabulary(PACK, "effect_free_functions", effect_free)
    found = messages(tmp_path, {"eng.py": source}, pack)
    assert bool(found) is reported, found


@pytest.mark.parametrize(("dead", "writer"), [("", "add"), ("eng.Batch.add", "swap")])
def test_a_write_a_pack_declares_dead_races_nothing(tmp_path: Path, dead: str, writer: str) -> None:
    """The next step's first write into memory a D2H copy may still be landing
    races it, unless a pack says nothing reads what that write stores: then
    the race shown is the next write, whose value is read."""
    source = """
import torch


class Batch:
    def __init__(self):
        self.counts = torch.ones(8, dtype=torch.int64, pin_memory=True)

    def add(self, i):
        self.counts[i] = 1

    def swap(self, i, j):
        self.counts[i], self.counts[j] = self.counts[j], self.counts[i]


class Runner:
    def __init__(self):
        self.batch = Batch()
        self.counts_gpu = torch.ones(8, dtype=torch.int64, device="cuda")
        self.counts_event = torch.cuda.Event()

    def execute_model(self, new):
        for i in new:
            self.batch.add(i)
        self.batch.swap(0, 1)
        self.counts_event.synchronize()
        self.counts_gpu += self.batch.counts.sum()
        self.batch.counts.copy_(self.counts_gpu, non_blocking=True)
        self.counts_event.record()
        return {}
"""
    row = f'[[dead_store]]\nfunction = "{dead}"\nbuffer = "Batch.counts"\nreason = "r"\n'
    found = messages(tmp_path, {"eng.py": source}, PACK + (row if dead else ""))
    assert [m.split(" pinned buffer", 1)[0].rsplit(" ", 2)[-2] for m in found] == [writer], found


@pytest.mark.parametrize(("decorator", "reported"), [("", True), ("@abstractmethod", False)])
def test_dispatch_through_an_abstract_base_reaches_only_its_overrides(
    tmp_path: Path, decorator: str, reported: bool
) -> None:
    """Every concrete backend waits; the abstract base's `...` body never runs
    for an instance, so the wait is on every path (a plain base method could)."""
    source = f"""
from abc import ABC, abstractmethod

import torch


class Backend(ABC):
    {decorator}
    def finish(self): ...


class FullBackend(Backend):
    def finish(self):
        torch.cuda.synchronize()


class PiecewiseBackend(Backend):
    def finish(self):
        torch.cuda.synchronize()


def make_backend(full) -> Backend:
    return FullBackend() if full else PiecewiseBackend()


class Runner:
    def __init__(self, full):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.backend = make_backend(full)

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
        self.backend.finish()
        return {{}}
"""
    found = messages(tmp_path, {"eng.py": source})
    assert bool(found) is reported, found


# A device view of a pinned buffer (the pack's `uva_view_functions`) copied on
# the device, then the pinned buffer rewritten by the next step with no wait.
UVA_COPY = """
def device_view(t):
    return t


class Runner:
    def __init__(self):
        self.ids = torch.zeros(8, dtype=torch.int64, pin_memory=True)
        self.ids_view = device_view(self.ids)
        self.ids_gpu = torch.zeros(8, dtype=torch.int64, device="cuda")

    def execute_model(self, batch):
        self.ids[: len(batch)] = batch
        {copy}
        return {{}}
"""


@pytest.mark.parametrize(
    ("copy", "races"),
    [
        # A device-to-device copy is queued whatever `non_blocking` says: it reads
        # the pinned memory when it runs.
        ("self.ids_gpu.copy_(self.ids_view, non_blocking=True)", True),
        ("self.ids_gpu.copy_(self.ids_view)", True),
        ("self.ids_gpu.copy_(self.ids_view); torch.cuda.synchronize()", False),
    ],
)
def test_a_copy_from_a_device_view_of_pinned_memory_reads_it_later(
    tmp_path: Path, copy: str, races: bool
) -> None:
    pack = with_vocabulary(PACK, "uva_view_functions", "eng.device_view")
    found = codes(tmp_path, UVA_COPY.format(copy=copy), pack)
    assert found == ([("SYNC001", "eng.Runner.execute_model")] if races else [])
