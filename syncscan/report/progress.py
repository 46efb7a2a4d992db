"""Progress that counts, for runs long enough to wonder about.

The runner reports `(phase, done, total)`: "files" with the files summarised so
far of all the project's files, and each phase as it begins ("resolve",
"walk root 2 of 3", "quiescence point 1 of 3"). On a terminal that drives a
rich progress bar; off one (CI logs, pipes) a line per phase goes to stderr,
once the run has taken more than `LINES_AFTER` seconds (a quick run stays
silent); under `-q`, nothing. rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

Progress = Callable[[str, int, int], None]
LINES_AFTER = 2.0  # seconds before a run off a terminal starts printing its phases
FILES = "files"


class PhaseLines:
    """A line per phase on stderr, from the first phase that is still running
    `after` seconds into the run (a timer says so even when no event comes)."""

    def __init__(self, err: Console, after: float = LINES_AFTER) -> None:
        self.err = err
        self.started = time.perf_counter()
        self.phase = "index"
        self.files = (0, 0)
        self.printing = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._late)
        self._timer.daemon = True
        if after <= 0:
            self.printing = True
        else:
            self._timer.start()

    def __call__(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            if phase == FILES:
                self.files = (done, total)
                return
            self.phase = phase
            if self.printing:
                self._print()

    def _late(self) -> None:
        with self._lock:
            if not self.printing:
                self.printing = True
                self._print()

    def _print(self) -> None:
        done, total = self.files
        elapsed = time.perf_counter() - self.started
        files = f" ({done:,} of {total:,} files summarised)" if total else ""
        self.err.print(f"syncscan: {elapsed:5.1f}s {self.phase}{files}", highlight=False)

    def close(self) -> None:
        self._timer.cancel()


class PhaseBar:
    """A rich progress bar: the phase, its count (roots walked, or files while
    the call graph is resolved) and the files summarised of all."""

    def __init__(self, err: Console, transient: bool = True) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as Bar

        self.bar = Bar(
            SpinnerColumn(),
            TextColumn("syncscan: {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[files]}"),
            TimeElapsedColumn(),
            console=err,
            transient=transient,
        )
        self.task = self.bar.add_task("index", total=None, files="")
        self.phase_total = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase == FILES:
            self.bar.update(self.task, files=f"{done:,}/{total:,} files summarised")
            if not self.phase_total:  # indexing and resolving: the files are the count
                self.bar.update(self.task, completed=done, total=total)
            return
        self.phase_total = total
        if total:
            self.bar.update(self.task, description=phase, completed=done, total=total)
        else:
            self.bar.update(self.task, description=phase)

    def start(self) -> None:
        self.bar.start()

    def close(self) -> None:
        self.bar.stop()


@contextmanager
def reporting(err: Console, quiet: bool) -> Iterator[Progress | None]:
    """The progress callback for one run (None under -q), closed after it."""
    if quiet:
        yield None
        return
    display: PhaseBar | PhaseLines
    if err.is_terminal:
        display = PhaseBar(err)
        display.start()
    else:
        display = PhaseLines(err)
    try:
        yield display
    finally:
        display.close()
