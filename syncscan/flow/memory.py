"""How a fresh tensor's memory is named: `<function qualname>.<locals>.<name>`.

One naming, written by the fresh-tensor finder and read by the stream model and
SYNC004's messages. Light on purpose: the rules import it without the analysis.
"""

from __future__ import annotations

LOCALS = ".<locals>."


def fresh_memory(function: str, name: str) -> str:
    """The memory of the fresh tensor the local `name` of `function` holds."""
    return f"{function}{LOCALS}{name}"


def local_of(memory: str) -> tuple[str, str] | None:
    """(function, local name) of a fresh tensor's memory; None for any other memory."""
    if LOCALS not in memory:
        return None
    function, name = memory.rsplit(LOCALS, 1)
    return function, name
