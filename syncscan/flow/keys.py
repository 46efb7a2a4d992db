"""How per-step facts are named among a path's assumptions.

A path's assumptions are mostly instance modes (`self.spec`: the same for every
step). Two kinds are facts of one step instead: what the path set an attribute
to (`self.state is set`), and what it found a per-step flag to be when the step
began (`self.prev is set at entry`). The state, the merges, the pairing of steps
and the rules' mode labels all tell them apart by these names.
"""

from __future__ import annotations

from functools import cache

SET = " is set"  # the attribute's value as the path left it
ENTRY = SET + " at entry"  # a per-step flag's value as the step found it


def assigned_key(path: str) -> str:
    """The assumption a path records when it assigns `path` itself: it holds a value."""
    return f"{path}{SET}"


def entry_key(path: str) -> str:
    """What a path found a per-step flag to be when the step began."""
    return f"{path}{ENTRY}"


def entry_path(predicate: str) -> str | None:
    """The flag's path of an `entry_key`, None for any other predicate."""
    return predicate.removesuffix(ENTRY) if predicate.endswith(ENTRY) else None


def is_set_key(predicate: str) -> bool:
    """What a path set: a callee may change it, so it is never a contradiction."""
    return predicate.endswith(SET)


@cache  # asked millions of times of a few hundred predicates
def is_step_fact(predicate: str) -> bool:
    """A fact of one step (set, or found at entry), not an instance mode."""
    return predicate.endswith((SET, ENTRY))
