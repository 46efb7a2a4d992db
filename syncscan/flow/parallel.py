"""Analysing step roots in forked worker processes.

The unit of work is the roots of one class (step.py `analyse_class`: their
walks, then each path's verdict against the class's next steps). Each root is
walked from a fresh callee memo, so a unit's result is a function of the
program and its roots alone: which process runs it, and after which other
unit, cannot change it. The units of a large step path (vLLM 0.33.0: three
classes, 1 to 4 s each) then split across the idle cores.

Workers are forked after the call graph is built, so they inherit the loaded
summaries and the oracles' caches instead of rebuilding them. Each sends back,
per unit, its result and what it asked of the program that the parent has not:
the modules it loaded, in order, whether it read every file's class headers,
and the summary items it read (reads.py). The parent replays those
demands unit by unit (`Program.adopt`), so the modules, diagnostics, file
inputs and items the run records are the ones a serial run records. A worker
that dies (killed for memory, say) leaves its units to the parent, which runs
them itself: the result is never short of a root.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Generic, TypeVar

from syncscan.apart import Forked, ends_the_process
from syncscan.index import reads

if TYPE_CHECKING:
    from syncscan.resolve.program import Program

Unit = TypeVar("Unit")
Result = TypeVar("Result")
# What a worker returns for one unit: its index, its result, the modules it
# loaded for it (in order), those of them it parsed, whether it read every
# file's class headers, and the summary items it read (reads.py).
Outcome = tuple[int, Result, list[str], list[str], bool, set[str]]


# Processes per core the walks may fork. A unit's cost (its reach in the call
# graph) is a rough guess: vLLM 0.33.0's encoder runner was guessed at half of
# the V1 runner's and took as long, so a partition of its three classes over two
# cores left one core idle for 2.5 s. A process per unit lets the OS share the
# cores as the units really run: 12.65-12.90 s cold against 12.99-13.43 s (three
# alternating pairs). The cap bounds the processes' memory on a large step path.
PROCESSES_PER_CORE = 2


def partition(costs: Sequence[int], workers: int) -> list[list[int]]:
    """Unit indices per process, for `workers` cores: a unit each where there
    are at most `PROCESSES_PER_CORE` per core, else that many processes, the
    costliest unit first, each to the least loaded (ties to the lowest).
    Deterministic, and empty shares are dropped."""
    processes = min(len(costs), workers * PROCESSES_PER_CORE)
    loads = [0] * processes
    shares: list[list[int]] = [[] for _ in range(processes)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        process = min(range(processes), key=lambda w: (loads[w], w))
        shares[process].append(index)
        loads[process] += max(1, costs[index])
    return [sorted(share) for share in shares if share]


def run_in_workers(
    units: Sequence[Unit],
    shares: list[list[int]],
    run: Callable[[Unit], Result],
    program: Program,
    on_done: Callable[[int], None] | None = None,
) -> list[Result]:
    """`[run(unit) for unit in units]`, a forked process for each share of
    unit indices (`partition`; `on_done(i)` as the i-th is known); the
    program adopts each unit's demands in unit order."""
    context = multiprocessing.get_context("fork")
    running: list[tuple[multiprocessing.process.BaseProcess, Connection, list[int]]] = []
    for share in shares:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(
            target=_worker, args=(share, units, run, program, send), daemon=True
        )
        process.start()
        send.close()
        running.append((process, receive, share))
    program.walkers_started()
    outcomes: dict[int, Outcome[Result]] = {}
    waiting = {receive: (process, len(share)) for process, receive, share in running}
    while waiting:
        # Read whichever worker has sent: one left unread would block in its
        # send once the pipe is full (a root's paths are megabytes).
        for receive in wait(list(waiting)):
            process, expected = waiting[receive]
            try:
                outcome: Outcome[Result] = receive.recv()  # type: ignore[union-attr]
            except (EOFError, OSError):  # it finished, or died
                expected = 0
            else:
                outcomes[outcome[0]] = outcome
                expected -= 1
                if on_done is not None:
                    on_done(outcome[0])
            if expected:
                waiting[receive] = (process, expected)
                continue
            del waiting[receive]
            receive.close()  # type: ignore[union-attr]
            process.join()
    # A module one worker parsed, another may have read from the cache.
    parsed = sorted({module for outcome in outcomes.values() for module in outcome[3]})
    results: list[Result] = []
    for index, unit in enumerate(units):
        if index not in outcomes:  # its worker died: run it here
            results.append(run(unit))
            continue
        _, result, loaded, _, headers_used, read = outcomes[index]
        program.adopt(loaded, parsed, headers_used)
        reads.add(read)
        results.append(result)
    return results


class Apart(Generic[Result]):
    """`run()` in a forked process from now on (apart.py), its result taken
    where it is needed (`result`), with what it asked of the program adopted
    then: a piece of work independent of what this process does meanwhile
    (the quiescence points beside the step walks: context.py)."""

    def __init__(self, run: Callable[[], Result], program: Program) -> None:
        self._run, self._program = run, program
        # None where no process made it: `result` runs it here, as the program's own work.
        self._forked: Forked[Outcome[Result] | None] = Forked(self._outcome, lambda: None)

    def _outcome(self) -> Outcome[Result]:
        """In the forked process."""
        self._program.in_worker()
        reads.take()  # the parent's reads are the parent's to record
        return _demands(0, self._run, self._program)

    def result(self) -> Result:
        """The result (made here where the process died), its demands adopted."""
        outcome = self._forked.result()
        if outcome is None:
            return self._run()
        _, result, loaded, parsed, headers_used, read = outcome
        self._program.adopt(loaded, parsed, headers_used)
        reads.add(read)
        return result


def _demands(index: int, run: Callable[[], Result], program: Program) -> Outcome[Result]:
    """In a forked process: `run()`'s result as unit `index`'s outcome, with
    what it asked of the program and the items it read."""
    requested, parsed = program.requested_in_order(), program.parsed_in_worker()
    headers_before = program.headers_used
    result = run()
    loaded = program.requested_in_order()[len(requested) :]
    parsed = program.parsed_in_worker()[len(parsed) :]
    headers = program.headers_used and not headers_before
    return (index, result, loaded, parsed, headers, reads.take())


def _worker(
    share: list[int],
    units: Sequence[Unit],
    run: Callable[[Unit], Result],
    program: Program,
    send: Connection,
) -> None:
    """In a forked worker: run the share's units, sending each outcome as it is known."""
    with ends_the_process(send):
        program.in_worker()
        reads.take()  # the parent's reads are the parent's to record
        for index in share:
            send.send(_demands(index, partial(run, units[index]), program))
