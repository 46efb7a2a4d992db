"""Each rule's buggy/fixed shape, run: corruption in the buggy program, none once fixed.

`programs/<shape>/{buggy,fixed}` are the fixtures' shapes written as programs that
run (PyTorch operators where the fixtures call Triton kernels): the same files that
`tests/test_gpu_programs.py` has syncscan analyse, reporting each buggy one and
staying silent on each fixed one. Here a driver plays the engine: it calls the
step TRIALS times over a few steps, puts a short `torch.cuda._sleep` on the stream
where a real engine has its model running (so the host runs ahead, as with async
scheduling), keeps each step's result with a stream-ordered clone (no host wait),
and checks every step's data once the device is idle. A trial is corrupted when
any step's data differs from what the step was given. A few drivers differ where
the shape needs it, each saying why: no sleep where an idle stream shows the race
(`write_after_record`, `stream_freed_in_use`), and worker processes where the bad
outcome is a device fault (`sleep_releases_before_barrier`, in COUNTED).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from gpu_trials import NONE, ON_DEVICE, SLEEP_CYCLES, SOME, TRIALS, observe, torch

pytestmark = ON_DEVICE

PROGRAMS = Path(__file__).with_name("programs")
STEPS = 6
STEP_CYCLES = SLEEP_CYCLES // 10  # about 1 ms: the model's time on the device per step
VOCAB = 4096
TOKENS = 1024


def load(shape: str, variant: str, module: str) -> ModuleType:
    """Import `engine.<module>` of one program; each program has its own `engine`."""
    for name in [n for n in sys.modules if n == "engine" or n.startswith("engine.")]:
        del sys.modules[name]
    sys.path.insert(0, str(PROGRAMS / shape / variant))
    try:
        return importlib.import_module(f"engine.{module}")
    finally:
        sys.path.pop(0)


def _tokens(step: int, n: int = TOKENS) -> list[int]:
    """Distinct, nonzero ids for each step."""
    return [(step * 131 + j) % (VOCAB - 1) + 1 for j in range(n)]


def slot_pool(variant: str) -> bool:
    """SYNC001: encoder-only steps back to back; each step's gathered rows checked."""
    runner_mod = load("slot_pool_mode_without_wait", variant, "runner")
    config = SimpleNamespace(encoder_only=True, max_tokens=TOKENS, async_depth=2, vocab_size=VOCAB)
    runner = runner_mod.Runner(config)
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        batch = SimpleNamespace(token_ids=_tokens(step), req_ids=list(range(TOKENS)))
        runner.execute_model(batch)
        kept.append(runner.hidden[:TOKENS].argmax(dim=-1))
    torch.cuda.synchronize()
    return any(kept[step].tolist() != _tokens(step) for step in range(STEPS))


def pause(variant: str) -> bool:
    """SYNC002: one step, then pause(); the caller then doubles the weights on its own
    stream. The step was scheduled with the old weights: rows of 2.0 are corrupted."""
    core = load("pause_returns_after_launch", variant, "core").EngineCore(
        SimpleNamespace(max_tokens=TOKENS, vocab_size=VOCAB)
    )
    ids = torch.tensor(_tokens(1), dtype=torch.int64).pin_memory()
    update = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda._sleep(STEP_CYCLES)
    core.step(SimpleNamespace(token_ids=_tokens(1), ids_cpu=ids))
    core.pause()
    with torch.cuda.stream(update):
        core.table.mul_(2.0)  # the weight update: the caller was told the device is idle
    torch.cuda.synchronize()
    return core.hidden[:TOKENS].max().item() != 1.0


def d2h_read(variant: str) -> bool:
    """SYNC003 (host read): each step reports the previous step's sampled tokens."""
    runner = load("d2h_read_before_wait", variant, "runner").Runner(
        SimpleNamespace(max_tokens=TOKENS, vocab_size=VOCAB)
    )
    ids = [torch.tensor(_tokens(step), device="cuda") for step in range(STEPS)]
    torch.cuda.synchronize()
    reported = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        out = runner.execute_model(SimpleNamespace(req_ids=list(range(TOKENS)), ids=ids[step]))
        reported.append(out.prev_tokens)
    torch.cuda.synchronize()
    return any(reported[step] != _tokens(step - 1) for step in range(1, STEPS))


PADDED = 1 << 22  # a 32 MB pinned buffer: the copy and the host's pad write overlap


def write_after_record(variant: str) -> bool:
    """SYNC003 (write after record): full batches alternate with short ones padded to
    PADDED; a short step's pad must reach the device as zeros, not the last batch's
    ids. No sleep here: the race is the copy reading before the host's pad write."""
    runner = load("write_after_record", variant, "runner").Runner(
        SimpleNamespace(max_tokens=PADDED, vocab_size=VOCAB)
    )
    full = torch.arange(PADDED, dtype=torch.int64) % (VOCAB - 1) + 1
    corrupted = False
    for step in range(STEPS):
        n = PADDED if step % 2 == 0 else 16
        batch = SimpleNamespace(token_ids=full[:n].numpy(), req_ids=[], padded_size=PADDED)
        got = runner.execute_model(batch).get_output()
        corrupted |= not torch.equal(got[:n], full[:n]) or bool(got[n:].any())
    return corrupted


def one_way_wait(variant: str) -> bool:
    """SYNC004 (one direction only): each step's forward must read its own tables."""
    scheduler = load("stream_one_way_wait", variant, "scheduler").Scheduler(64, 1024)
    tables = [torch.full((64, 1024), step + 1, dtype=torch.int32, device="cuda")
              for step in range(STEPS)]  # fmt: skip
    positions = torch.zeros(64, 1024, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        logits = scheduler.execute_model(
            SimpleNamespace(block_tables=tables[step], positions=positions)
        )
        kept.append(logits.clone())
    torch.cuda.synchronize()
    return any(not torch.equal(kept[step], tables[step]) for step in range(STEPS))


def _logits(step: int, n: int = TOKENS) -> torch.Tensor:
    """Logits on the device whose argmax is `_tokens(step)`."""
    ids = torch.tensor(_tokens(step, n), device="cuda")
    return torch.nn.functional.one_hot(ids, VOCAB).float()


def output_copy(variant: str) -> bool:
    """SYNC004 (no edge): each step's sampled tokens, copied out on the output stream."""
    runner = load("output_copy_without_edge", variant, "runner").Runner(TOKENS)
    logits = [_logits(step) for step in range(STEPS)]
    torch.cuda.synchronize()
    outputs = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        outputs.append(runner.execute_model(SimpleNamespace(logits=logits[step])))
    return any(outputs[step].get_output() != _tokens(step) for step in range(STEPS))


KV = 2048  # the offloaded KV block is KV x KV floats: its matmul takes a fraction of a ms


def offload_wait(variant: str) -> bool:
    """SYNC004 (wait before the write): each step's offloaded KV block, read on the host."""
    runner = load("offload_wait_before_write", variant, "runner").Runner(KV)
    queries = [torch.full((KV, KV), step + 1.0, device="cuda") for step in range(STEPS)]
    torch.cuda.synchronize()
    corrupted = False
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        runner.execute_model(SimpleNamespace(query=queries[step], req_ids=[]))
        # The step synchronized its copy stream: the host copy is the step's block.
        corrupted |= not bool((runner.kv_host == (step + 1.0) * KV).all())
    return corrupted


def stale_event(variant: str) -> bool:
    """SYNC004 (stale event): one prefill step, then decode steps; each step's tokens."""
    runner = load("stream_stale_event", variant, "runner").Runner(TOKENS)
    logits = [_logits(step) for step in range(STEPS)]
    torch.cuda.synchronize()
    corrupted = False
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        batch = SimpleNamespace(is_prefill=step == 0, logits=logits[step])
        corrupted |= runner.execute_model(batch).tolist() != _tokens(step)
    return corrupted


HIDDEN = 4096  # each step's `hidden` is TOKENS*4 x HIDDEN floats (64 MB): a long copy out


def freed_in_use(variant: str) -> bool:
    """SYNC004 (freed in use): each step's offloaded hidden states, fetched on the host.
    Right after the step returns, the engine's next allocation of that size on the
    compute stream (here filled with -1) is where the caching allocator puts it."""
    n = TOKENS * 4
    runner = load("stream_freed_in_use", variant, "runner").Runner(n, HIDDEN, VOCAB)
    ids = [torch.tensor(_tokens(step, n), device="cuda") for step in range(STEPS)]
    torch.cuda.synchronize()
    corrupted = False
    for step in range(STEPS):
        runner.execute_model(SimpleNamespace(num_tokens=n, input_ids=ids[step]))
        scratch = torch.full((n, HIDDEN), -1.0, device="cuda")
        host = runner.offloader.fetch()
        expected = torch.tensor(_tokens(step, n), dtype=torch.float32)[:, None]
        corrupted |= not bool((host == expected).all())
        del scratch
    return corrupted


def back_reference(variant: str) -> bool:
    """SYNC004 (no edge, one buffer under two names): each step's forward reads its tokens."""
    runner = load("stream_buffer_through_back_reference", variant, "runner").Runner(TOKENS)
    host = [torch.tensor(_tokens(step)).pin_memory() for step in range(STEPS)]
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        kept.append(runner.execute_model(SimpleNamespace(host_tokens=host[step])))
    torch.cuda.synchronize()
    return any(kept[step].tolist() != _tokens(step) for step in range(STEPS))


def lazy_event(variant: str) -> bool:
    """SYNC004 (stale event, lazily created): without speculation each step must see
    the lengths the last step published (its input ids + 1)."""
    runner_mod = load("stream_lazy_event_per_mode", variant, "runner")
    algo = sys.modules["engine.algo"].Algo.NONE
    runner = runner_mod.Runner(TOKENS, algo)
    ids = [torch.tensor(_tokens(step), device="cuda") for step in range(STEPS)]
    indices = torch.arange(TOKENS, device="cuda")
    torch.cuda.synchronize()
    corrupted = False
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        with torch.cuda.stream(runner.forward_stream):
            # A slow forward stream (about 10 ms queued before the step's own
            # work): the step's write of the lengths lands late, so a next step
            # reading them without an edge from this stream reads stale ones (on
            # the copy stream, or on the current one behind `.cpu()`).
            torch.cuda._sleep(SLEEP_CYCLES)
        lens = runner.execute_model(SimpleNamespace(input_ids=ids[step], indices=indices))
        if step > 0:
            corrupted |= lens.tolist() != [t + 1 for t in _tokens(step - 1)]
    torch.cuda.synchronize()
    return corrupted


def _pause_then_update(core: object, pause: Callable[[], object]) -> bool:
    """One step, `pause` as the caller sees it complete, then the caller doubles the
    weights on its own stream: rows of 2.0 in the step's output are corrupted."""
    ids = torch.tensor(_tokens(1), dtype=torch.int64).pin_memory()
    update = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda._sleep(STEP_CYCLES)
    core.step(SimpleNamespace(token_ids=_tokens(1), ids_cpu=ids))
    pause()
    with torch.cuda.stream(update):
        core.table.mul_(2.0)  # the weight update: the caller was told the device is idle
    torch.cuda.synchronize()
    return core.hidden[:TOKENS].max().item() != 1.0


def pause_deferred(variant: str) -> bool:
    """SYNC002 (two completions): the fast path (the host already processed the step's
    outputs, pause returns None) and the slow path (pause returns a future, resolved
    by the idle callback once the host processes them). Corrupted if either is."""
    core_mod = load("pause_deferred_callback", variant, "core")
    config = SimpleNamespace(max_tokens=TOKENS, vocab_size=VOCAB)
    fast = core_mod.EngineCore(config)

    def fast_pause() -> None:
        fast.process_outputs(1)
        assert fast.pause() is None

    slow = core_mod.EngineCore(config)

    def slow_pause() -> None:
        future = slow.pause()
        slow.process_outputs(1)  # the host loop goes idle: on_idle resolves the future
        future.result(timeout=10)

    return _pause_then_update(fast, fast_pause) | _pause_then_update(slow, slow_pause)


def _gloo() -> None:
    """A one-rank default process group: pause's gloo group needs one to split from."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def cpu_barrier(variant: str) -> bool:
    """SYNC002 (host-side waits only): the step loop runs on a thread; once pause()
    flags it, the loop's next turn sets the idle event pause() waits on; then the
    gloo all_reduce and barrier, and the caller's weight update."""
    _gloo()
    core = load("cpu_barrier_lookalike", variant, "core").EngineCore(
        SimpleNamespace(max_tokens=TOKENS, vocab_size=VOCAB)
    )

    def loop() -> None:
        while not core.paused:
            time.sleep(0)
        core.step(None)  # paused: sets the idle event, launches nothing

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        return _pause_then_update(core, core.pause)
    finally:
        thread.join()


WAKE_BLOCKS, WAKE_BLOCK = 32768, 16384  # a 2 GB KV cache: its re-init takes about 1 ms


def wake_up(variant: str) -> bool:
    """SYNC002 (the control point's own launches): sleep, wake_up, then the caller's
    next step writes the last KV block on its own stream; the re-init still clearing
    the cache must not erase it."""
    worker = load("wake_up_without_trailing_barrier", variant, "worker").Worker(
        SimpleNamespace(
            block_size=WAKE_BLOCK, num_blocks=WAKE_BLOCKS, hidden_size=256, num_layers=2
        )
    )
    worker.kv_cache.fill_(3.0)  # the cache before sleep, to be cleared on wake-up
    caller = torch.cuda.Stream()
    worker.sleep()
    worker.wake_up()
    with torch.cuda.stream(caller):
        worker.kv_cache[-WAKE_BLOCK:].fill_(1.0)
    torch.cuda.synchronize()
    last = worker.kv_cache[-WAKE_BLOCK:]
    corrupted = not bool((last == 1.0).all()) or bool(worker.kv_cache[:-WAKE_BLOCK].any())
    del worker, last
    return corrupted


def _inputs_config(**modes: object) -> SimpleNamespace:
    return SimpleNamespace(max_tokens=TOKENS, vocab_size=VOCAB, max_len=VOCAB, **modes)


def wait_skipped(variant: str) -> bool:
    """SYNC003 (wait skipped on one path): a prefill step, then decode steps; each
    step's embedding must be of its own ids."""
    runner = load("wait_skipped_on_one_path", variant, "runner").Runner(_inputs_config())
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        if step == 0:
            batch = SimpleNamespace(is_prefill=True, prompt_token_ids=[_tokens(0)], req_ids=[0])
        else:
            batch = SimpleNamespace(is_prefill=False, last_token_ids=_tokens(step), req_ids=[])
        runner.execute_model(batch)
        kept.append(runner.hidden[:TOKENS].clone())
    torch.cuda.synchronize()
    return any(kept[step].tolist() != _tokens(step) for step in range(STEPS))


def _resolved(outputs: list) -> bool:
    """Whether any step's resolved output differs from the ids it was given."""
    return any(list(out.get_output().values()) != _tokens(s) for s, out in enumerate(outputs))


def second_entry(variant: str) -> bool:
    """SYNC003 (second entry point): after each step the loop runs a dummy batch, as an
    idle data-parallel rank does; each step's embedding must be of its own ids."""
    runner = load("second_entry_skips_guard", variant, "runner").Runner(_inputs_config())
    torch.cuda.synchronize()
    outputs = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        batch = SimpleNamespace(token_ids=_tokens(step), req_ids=list(range(TOKENS)))
        outputs.append(runner.execute_model(batch))
        runner.execute_dummy_batch()
    return _resolved(outputs)


def guard_none(variant: str) -> bool:
    """SYNC003 (guard None in an overlapping mode): a batch queue without async
    scheduling; every step's output is resolved after the last step."""
    config = _inputs_config(async_scheduling=False, pipeline_parallel_size=2)
    runner = load("guard_none_in_overlapping_mode", variant, "runner").Runner(config)
    torch.cuda.synchronize()
    outputs = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        batch = SimpleNamespace(token_ids=_tokens(step), req_ids=list(range(TOKENS)))
        outputs.append(runner.execute_model(batch))
    return _resolved(outputs)


def _positions(step: int) -> list[int]:
    return [(step * 37 + j) % VOCAB for j in range(TOKENS)]


def write_before_wait(variant: str) -> bool:
    """SYNC003 (write before the guard's wait): a real UVA view (PyTorch's pinned
    memory at its own address on the device); each step's embedding is
    id * max_len + position, with the positions the step was given."""
    runner = load("write_before_guard_wait", variant, "runner").Runner(_inputs_config())
    torch.cuda.synchronize()
    outputs = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        batch = SimpleNamespace(
            token_ids=_tokens(step), positions=_positions(step), req_ids=list(range(TOKENS))
        )
        outputs.append(runner.execute_model(batch))
    return any(
        list(out.get_output().values())
        != [t * VOCAB + p for t, p in zip(_tokens(s), _positions(s), strict=True)]
        for s, out in enumerate(outputs)
    )


REQS, BLOCKS, BLOCK = 256, 16, 16


def deep_write(variant: str) -> bool:
    """SYNC003 (deep write after the record): each step stages 4 blocks per request
    and, from the second step on (a request must be staged before it can grow),
    reserves a 5th; the device's table must be the pinned table as it was when
    the step queued its copy (a snapshot taken at copy_to_device)."""
    runner_mod = load("deep_write_outside_guard", variant, "runner")
    table_mod = sys.modules["engine.block_table"]
    config = SimpleNamespace(
        max_reqs=REQS, max_blocks_per_req=BLOCKS, block_size=BLOCK, vocab_size=16
    )
    runner = runner_mod.Runner(config)
    runner.positions.fill_(4 * BLOCK)  # every request's next token: the reserved block
    snapshots = []
    original = table_mod.BlockTable.copy_to_device

    def copy_to_device(self: object, n: int) -> None:
        snapshots.append(self.cpu[:n].clone())
        original(self, n)

    table_mod.BlockTable.copy_to_device = copy_to_device
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        base = 1 + step * REQS * 8
        batch = SimpleNamespace(
            req_ids=list(range(REQS)),
            block_ids=[[base + r * 8 + b for b in range(4)] for r in range(REQS)],
            new_blocks={r: base + r * 8 + 4 for r in range(REQS)} if step else {},
        )
        runner.execute_model(batch)
        kept.append(runner.requests.block_table.gpu.clone())
    torch.cuda.synchronize()
    return any(not torch.equal(kept[s].cpu(), snapshots[s]) for s in range(STEPS))


def deep_write_other_class(variant: str) -> bool:
    """SYNC001 (the pool write three calls deep): encoder-only steps back to back,
    depth 2, the table read in place through a real UVA view; each step's first
    blocks must be the ones it staged."""
    reqs = 32  # a small table: the host's flattening must not pace it behind the device
    config = SimpleNamespace(
        encoder_only=True, max_reqs=reqs, max_blocks_per_req=BLOCKS, async_depth=2, vocab_size=16
    )
    runner = load("deep_write_other_class", variant, "runner").Runner(config)
    blocks = [[[1 + step * 4096 + r * 8 + b for b in range(4)] for r in range(reqs)]
              for step in range(STEPS)]  # fmt: skip
    torch.cuda.synchronize()
    kept = []
    for step in range(STEPS):
        torch.cuda._sleep(STEP_CYCLES)
        runner.execute_model(SimpleNamespace(req_ids=list(range(reqs)), block_ids=blocks[step]))
        kept.append(runner.first_blocks.clone())
    torch.cuda.synchronize()
    return any(kept[s].tolist() != [row[0] for row in blocks[s]] for s in range(STEPS))


def sleep_release(variant: str, trials: int) -> int:
    """SYNC002 (a release point before the barrier): Worker.sleep() unmaps a pool of
    CUDA virtual memory that a queued step kernel still reads. A kernel that reads
    unmapped pages faults the device and leaves the process's CUDA context unusable,
    so the trials run in worker processes, a new one after each fault; a trial is
    corrupted when its kernel faulted or summed the wrong value."""
    root = PROGRAMS / "sleep_releases_before_barrier" / variant
    worker = Path(__file__).with_name("vmm_release_worker.py")
    outcomes: list[str] = []
    while len(outcomes) < trials:
        done = subprocess.run(
            [sys.executable, str(worker), str(root), str(trials - len(outcomes))],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        lines = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
        assert lines, done.stderr[-2000:]
        outcomes += lines
    print(f"sleep_releases_before_barrier/{variant}: {sorted(set(outcomes))}")
    return sum(outcome != "intact" for outcome in outcomes)


# Shapes whose driver runs the trials itself and returns the corrupted count, with
# their own trial count: each faulting trial costs a fresh process (about 5 s).
COUNTED: dict[str, tuple[str, Callable[[str, int], int], int]] = {
    "sleep_releases_before_barrier": ("SYNC002", sleep_release, 5),
}


SHAPES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "slot_pool_mode_without_wait": ("SYNC001", slot_pool),
    "deep_write_other_class": ("SYNC001", deep_write_other_class),
    "pause_returns_after_launch": ("SYNC002", pause),
    "d2h_read_before_wait": ("SYNC003", d2h_read),
    "write_after_record": ("SYNC003", write_after_record),
    "stream_one_way_wait": ("SYNC004", one_way_wait),
    "output_copy_without_edge": ("SYNC004", output_copy),
    "offload_wait_before_write": ("SYNC004", offload_wait),
    "stream_stale_event": ("SYNC004", stale_event),
    "stream_freed_in_use": ("SYNC004", freed_in_use),
    "stream_buffer_through_back_reference": ("SYNC004", back_reference),
    "stream_lazy_event_per_mode": ("SYNC004", lazy_event),
    "pause_deferred_callback": ("SYNC002", pause_deferred),
    "cpu_barrier_lookalike": ("SYNC002", cpu_barrier),
    "wake_up_without_trailing_barrier": ("SYNC002", wake_up),
    "wait_skipped_on_one_path": ("SYNC003", wait_skipped),
    "second_entry_skips_guard": ("SYNC003", second_entry),
    "guard_none_in_overlapping_mode": ("SYNC003", guard_none),
    "write_before_guard_wait": ("SYNC003", write_before_wait),
    "deep_write_outside_guard": ("SYNC003", deep_write),
}


@pytest.mark.parametrize(("variant", "expected"), [("buggy", SOME), ("fixed", NONE)])
@pytest.mark.parametrize("shape", sorted([*SHAPES, *COUNTED]))
def test_rule_program(shape: str, variant: str, expected: str) -> None:
    if shape in COUNTED:
        code, counted, trials = COUNTED[shape]
        corrupted = counted(variant, trials)
    else:
        code, trial = SHAPES[shape]
        trials = TRIALS
        corrupted = sum(trial(variant) for _ in range(trials))
    assert observe(f"{code} {shape}/{variant}: corrupted", corrupted, expected, trials)


def test_every_program_has_a_driver() -> None:
    """No program directory goes unrun on the device."""
    assert sorted(p.name for p in PROGRAMS.iterdir() if p.is_dir()) == sorted([*SHAPES, *COUNTED])
