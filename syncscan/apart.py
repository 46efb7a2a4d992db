"""Work in a forked process while the run goes on, on a core it leaves idle.

A cold run reads and scans every file before its first subclass query (facts.py),
walks the quiescence points after the step's roots (context.py), and ends writing
its record and the summaries it parsed (reuse.py, load.py), each on one core of
two while the other waits. Each of these reads nothing the run does meanwhile,
so it can run beside it in a forked process. A process that dies leaves its
work to this one (`result` makes it here): the result never differs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:  # multiprocessing loads where a process is made: a reused check makes none
    from multiprocessing.connection import Connection

T = TypeVar("T")


def can_fork() -> bool:
    """Whether a forked process can inherit this one's state (POSIX fork)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


class Forked(Generic[T]):
    """`make()` in a forked process from now on; `result()` takes its value.
    Where the OS cannot fork, or the process died, the value is `here()`'s,
    made in this process (`here` defaults to `make`)."""

    def __init__(self, make: Callable[[], T], here: Callable[[], T] | None = None) -> None:
        self._here = here or make
        self._value: tuple[T] | None = None
        if not can_fork():
            self._value = (self._here(),)
            return
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_send, args=(make, send), daemon=True)
        self._process.start()
        send.close()

    def result(self) -> T:
        """The value: the forked process's, or made here where it died."""
        if self._value is None:
            try:
                self._value = (self._receive.recv(),)
            except (EOFError, OSError):
                self._value = (self._here(),)
            self._receive.close()
            self._process.join()
        return self._value[0]


def _send(make: Callable[[], object], send: Connection) -> None:
    """In the forked process: `make()`'s value, sent back."""
    with ends_the_process(send):
        send.send(make())


@contextmanager
def ends_the_process(send: Connection) -> Iterator[None]:
    """In a forked process, around its work: a failure is said (the parent
    makes what is missing), and the process ends there, without the parent's
    exit handlers or a second flush of the buffers it inherited."""
    try:
        yield
    except KeyboardInterrupt:
        pass  # the parent was interrupted too, and says so
    except BaseException as exc:  # noqa: BLE001 - the parent makes what is missing
        print(f"syncscan: a worker stopped ({exc!r}); the main process goes on", file=sys.stderr)
    finally:
        send.close()
        os._exit(0)
