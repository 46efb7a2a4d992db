"""A per-example time limit for long property runs, one that says where a stall is.

Hypothesis calls a test body once per example, so a run of 10,000 examples that
stops making progress says nothing by itself. faulthandler's timer runs on its own
C thread: it writes every thread's stack even while the main thread is stuck in C
code (a regex, the parser) and never returns to the interpreter.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TextIO


class StallWatch:
    """One timer across a run, re-armed at each example's start and end.

    Between examples it times Hypothesis generating the next one; inside one, the
    code under test. Past `limit` seconds it writes the stacks to stalls.txt and
    again every `limit` after; current.py is the module being worked on and
    progress.txt says which example of which test that is.
    """

    def __init__(self, directory: Path, limit: float) -> None:
        self.directory = directory
        self.limit = limit
        self.examples = 0
        self._stalls: TextIO | None = None

    def __enter__(self) -> StallWatch:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._stalls = (self.directory / "stalls.txt").open("w", encoding="utf-8")
        self._arm()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        faulthandler.cancel_dump_traceback_later()
        if self._stalls is not None:
            self._stalls.close()

    def _arm(self) -> None:
        """Restart the timer (faulthandler keeps one; arming again cancels the last)."""
        faulthandler.dump_traceback_later(self.limit, repeat=True, file=self._stalls)

    @contextmanager
    def example(self, source: str) -> Iterator[None]:
        """Time one example's body; slower than the limit fails, naming a copy of the module."""
        self.examples += 1
        current = self.directory / "current.py"
        current.write_bytes(source.encode("utf-8", "surrogatepass"))
        test = os.environ.get("PYTEST_CURRENT_TEST", "?")
        (self.directory / "progress.txt").write_text(f"example {self.examples}: {test}\n")
        self._arm()
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self._arm()
        if elapsed > self.limit:
            kept = self.directory / f"slow-{self.examples}.py"
            shutil.copyfile(current, kept)
            raise AssertionError(
                f"example {self.examples} took {elapsed:.1f} s, over the {self.limit:g} s"
                f" limit; the module is {kept}"
            )
