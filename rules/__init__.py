"""syncscan.rules: one module per rule code, plus the data packs (`packs/`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Rule


# Every rule's code, in code order: what selection, suppressions and the run
# record need, known without importing the analysis the rules run on (a fully
# reused check never loads it; a test holds this equal to the rule classes).
CODES = ("SYNC001", "SYNC002", "SYNC003", "SYNC004", "SYNC005")
# What a finding's root is, for the rules whose root is not a step root: what
# a report prints beside it (also without importing the rules).
ROOT_KINDS = {"SYNC002": "quiescence point"}


def all_rules() -> list[type[Rule]]:
    """Every rule, in code order. Imported lazily: packs load from this package."""
    from .sync001_unbounded_step import UnboundedStep
    from .sync002_completion_without_barrier import CompletionWithoutBarrier
    from .sync003_write_outside_guard import WriteOutsideGuard
    from .sync004_stream_order_hazard import StreamOrderHazard
    from .sync005_hidden_host_sync import HiddenHostSync

    return sorted(
        [
            UnboundedStep,
            CompletionWithoutBarrier,
            WriteOutsideGuard,
            StreamOrderHazard,
            HiddenHostSync,
        ],
        key=lambda r: r.code,
    )


def rule_by_code(code: str) -> type[Rule] | None:
    for rule in all_rules():
        if rule.code == code.upper() or rule.name == code.lower():
            return rule
    return None
