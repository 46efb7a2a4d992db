"""Walking step roots in forked worker processes.

Each root is walked from a fresh callee memo (step.py `_walk`), so its final
paths are a function of the program and the root alone: which process walks
it, and after which other root, cannot change them. The roots of a large step
path (vLLM 0.33.0: four, 1 to 4 s each) then split across the idle cores.

Workers are forked after the call graph is built, so they inherit the loaded
summaries and the oracles' caches instead of rebuilding them. Each sends back,
per root, its final paths (or why it could not be walked) and what it asked of
the program that the parent has not: the modules it loaded, in order, and
whether it read every file's class headers. The parent replays those demands
root by root (`Program.adopt`), so the modules, diagnostics and file inputs
the run records are the ones a serial run records. A worker that dies (killed
for memory, say) leaves its roots to the parent, which walks them itself: the
result is never short of a root.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from syncscan.resolve.program import Program

Root = TypeVar("Root")
Walked = object  # a root's final paths, or why it could not be walked (step.py)
# What a worker returns for one root: its index, its result, the modules it
# loaded walking it (in order), those of them it parsed, and whether it read
# every file's class headers.
Outcome = tuple[int, Walked, list[str], list[str], bool]


def can_fork() -> bool:
    """Whether worker processes can inherit this one's state (POSIX fork)."""
    return "fork" in multiprocessing.get_all_start_methods()


def partition(costs: Sequence[int], workers: int) -> list[list[int]]:
    """Root indices per worker: the costliest first, each to the least loaded
    worker (ties to the lowest). Deterministic, and empty workers are dropped."""
    loads = [0] * workers
    shares: list[list[int]] = [[] for _ in range(workers)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        worker = min(range(workers), key=lambda w: (loads[w], w))
        shares[worker].append(index)
        loads[worker] += max(1, costs[index])
    return [sorted(share) for share in shares if share]


def walk_in_workers(
    roots: Sequence[Root],
    costs: Sequence[int],
    workers: int,
    walk: Callable[[Root], Walked],
    program: Program,
    on_root: Callable[[int, int], None] | None = None,
) -> list[Walked]:
    """`[walk(root) for root in roots]`, the roots split over `workers` forked
    processes; the program adopts each root's demands in root order."""
    context = multiprocessing.get_context("fork")
    shares = partition(costs, workers)
    running: list[tuple[multiprocessing.process.BaseProcess, Connection, list[int]]] = []
    for share in shares:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(
            target=_worker, args=(share, roots, walk, program, send), daemon=True
        )
        process.start()
        send.close()
        running.append((process, receive, share))
    outcomes: dict[int, Outcome] = {}
    waiting = {receive: (process, len(share)) for process, receive, share in running}
    while waiting:
        # Read whichever worker has sent: one left unread would block in its
        # send once the pipe is full (a root's paths are megabytes).
        for receive in wait(list(waiting)):
            process, expected = waiting[receive]
            try:
                outcome: Outcome = receive.recv()  # type: ignore[union-attr]
            except (EOFError, OSError):  # it finished, or died
                expected = 0
            else:
                outcomes[outcome[0]] = outcome
                expected -= 1
                if on_root is not None:
                    on_root(len(outcomes), len(roots))
            if expected:
                waiting[receive] = (process, expected)
                continue
            del waiting[receive]
            receive.close()  # type: ignore[union-attr]
            process.join()
    # A module one worker parsed, another may have read from the cache.
    parsed = sorted({module for outcome in outcomes.values() for module in outcome[3]})
    results: list[Walked] = []
    for index, root in enumerate(roots):
        if index not in outcomes:  # its worker died: walk it here
            results.append(walk(root))
            continue
        _, walked, loaded, _, headers_used = outcomes[index]
        program.adopt(loaded, parsed, headers_used)
        results.append(walked)
    return results


def _worker(
    share: list[int],
    roots: Sequence[Root],
    walk: Callable[[Root], Walked],
    program: Program,
    send: Connection,
) -> None:
    """In a forked worker: walk the share's roots, sending each outcome as it is known."""
    program.in_worker()
    try:
        for index in share:
            requested, parsed = program.requested_in_order(), program.parsed_in_worker()
            headers_before = program.headers_used
            walked = walk(roots[index])
            loaded = program.requested_in_order()[len(requested) :]
            parsed = program.parsed_in_worker()[len(parsed) :]
            headers = program.headers_used and not headers_before
            send.send((index, walked, loaded, parsed, headers))
    except BaseException as exc:  # noqa: BLE001 - the parent walks what is missing
        print(f"syncscan: a root walker stopped: {exc!r}", file=sys.stderr)
    finally:
        send.close()
        os._exit(0)  # no atexit handlers, no flush of the parent's inherited buffers
