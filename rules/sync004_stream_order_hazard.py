"""SYNC004 stream-order-hazard: two streams touch the same memory, unordered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscan.findings import WitnessStep
from syncscan.flow.memory import local_of
from syncscan.flow.streams import (
    CURRENT,
    FREED_IN_USE,
    NO_EDGE,
    ONE_WAY,
    STALE_EVENT,
    WAIT_TOO_EARLY,
    Hazard,
)

from .base import (
    Example,
    Finding,
    Location,
    StepRule,
    fingerprint,
    mode_label,
    root_step,
    shared_mode,
)

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.step import RootAnalysis, StepPath, StepRoot

_PACK = """
[pack]
name = "example"
description = "rule example"
[[step_root]]
class = "example.Runner"
method = "execute_model"
"""

_COMMON = """
import torch


class Runner:
    def __init__(self, n):
        self.tables = torch.zeros(n, dtype=torch.int32, device="cuda")
        self.out = torch.zeros(n, device="cuda")
        self.schedule_stream = torch.cuda.Stream()
"""

_BUGGY = (
    _COMMON
    + """
    def execute_model(self, new_tables):
        with torch.cuda.stream(self.schedule_stream):
            self.tables.copy_(new_tables, non_blocking=True)  # next batch's tables
        torch.cuda.current_stream().wait_stream(self.schedule_stream)
        torch.ops.example.forward(self.tables, out=self.out)  # reads them
        return self.out
"""
)

_FIXED = (
    _COMMON
    + """
    def execute_model(self, new_tables):
        # The schedule stream waits for the forward that still reads the tables.
        self.schedule_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.schedule_stream):
            self.tables.copy_(new_tables, non_blocking=True)
        torch.cuda.current_stream().wait_stream(self.schedule_stream)
        torch.ops.example.forward(self.tables, out=self.out)
        return self.out
"""
)

_REMEDIES = {
    NO_EDGE: (
        "Order the two streams: before the later access, make its stream wait for "
        "the earlier one (`later.wait_stream(earlier)`, or `later.wait_event(ev)` on "
        "an event recorded on the earlier stream after its access)."
    ),
    ONE_WAY: (
        "The streams are ordered in one direction only. Add the reverse edge too: "
        "before the writer's next access, `writer.wait_stream(reader)` (or wait on an "
        "event the reader records after its last access)."
    ),
    WAIT_TOO_EARLY: (
        "The stream waits, but before the access it must follow was launched. Move "
        "the `wait_stream` after that access, right before the conflicting work "
        "(or record an event after it and wait on that)."
    ),
    STALE_EVENT: (
        "The event waited on was recorded before the conflicting access (or not on "
        "this path): record it after the access, on every path, before it is waited on."
    ),
    FREED_IN_USE: (
        "The tensor is freed while another stream may still use it, and the caching "
        "allocator hands its block to the next allocation on the stream that allocated "
        "it. Call `x.record_stream(s)` for each other stream s that uses it (after that "
        "use), or make the allocating stream wait for s (`wait_stream` / `wait_event`) "
        "before the tensor goes out of scope."
    ),
}
# Every shape's fix chooses which stream waits for which: no automatic fix.
_REMEDIES = {
    shape: text + " No automatic fix: which edge to add is a design choice."
    for shape, text in _REMEDIES.items()
}


class StreamOrderHazard(StepRule):
    """## What it does
    Finds two accesses of the same device (or pinned) memory by work on two
    different streams, at least one a write, with no happens-before edge
    between them: no `wait_stream`, no `wait_event` / `event.wait(stream)` on
    an event recorded after the first access, no host wait in between. It
    follows the current stream through `with torch.cuda.stream(s):` regions,
    side streams held as attributes, and the step loop unrolled once, so a
    side stream's work in one step meets the main stream's in the next. It
    names the shape: no edge at all, an edge in one direction only, a wait
    placed before the access it should follow, or a stale event.

    It also applies the caching allocator's reuse rule to fresh device
    tensors a function allocates and drops: when such a tensor is freed, its
    block goes back to the stream that allocated it, so every other stream's
    access that this stream has not waited for, and that `x.record_stream(s)`
    did not declare, races the next allocation (shape: freed in use).

    ## Why is this bad?
    Streams run concurrently. Without an edge, the writer may overwrite memory
    the reader has not read yet (write-after-read), the reader may see memory
    before the writer's data lands (read-after-write), or two writers leave
    either result. The model reads the wrong tables or KV blocks; the failure
    shows up as garbled output or an illegal memory access far from the cause.

    ## Example
    ```python
    with torch.cuda.stream(self.schedule_stream):
        self.tables.copy_(new_tables, non_blocking=True)   # the last forward may still read them
    torch.cuda.current_stream().wait_stream(self.schedule_stream)
    forward(self.tables)
    ```

    ## Use instead
    ```python
    self.schedule_stream.wait_stream(torch.cuda.current_stream())  # the reverse edge
    with torch.cuda.stream(self.schedule_stream):
        self.tables.copy_(new_tables, non_blocking=True)
    torch.cuda.current_stream().wait_stream(self.schedule_stream)
    forward(self.tables)
    ```
    """

    code = "SYNC004"
    name = "stream-order-hazard"
    severity = "error"
    summary = "Two streams access the same memory, one writing, with no order between them"
    remedy = _REMEDIES[NO_EDGE]
    VALID = [Example({"example.py": _FIXED}, _PACK, 0, "both directions ordered")]
    INVALID = [Example({"example.py": _BUGGY}, _PACK, 1, "the reverse edge is missing")]

    def root_findings(self, result: RootAnalysis, analysis: Analysis) -> list[Finding]:
        # One finding per pair of sites: the same memory reached through several
        # holders (`self.tp_worker.model_runner` and `self.model_worker.model_runner`
        # are one object) is one hazard, shown by its shortest path.
        groups: dict[tuple, list[tuple[StepPath, Hazard]]] = {}
        for path in result.paths:
            for hazard in path.hazards:
                _, *sites = hazard.key
                key = (*sites, hazard.conflict, hazard.across_steps)
                groups.setdefault(key, []).append((path, hazard))
        return [
            self._finding(result, group, analysis)
            for _, group in sorted(groups.items(), key=lambda item: item[0])
        ]

    def _finding(
        self, result: RootAnalysis, group: list[tuple[StepPath, Hazard]], analysis: Analysis
    ) -> Finding:
        hazard = min((h for _, h in group), key=lambda h: (len(h.memory), h.memory))
        root = result.root
        paths = [p for p, _ in group]
        mode = shared_mode(paths, analysis.packs)
        label = mode_label(mode, analysis.packs)
        first, second = hazard.first[-1], hazard.second[-1]
        a, b = _stream_name(hazard.first_stream), _stream_name(hazard.second_stream)
        when = "in the next step" if hazard.across_steps else "in the same step"
        edge = _missing_edge(hazard, a, b)
        memory = _memory_name(hazard.memory)
        witness: list[WitnessStep] = [
            root_step(root, analysis, f"step root {root.name} in mode {label}"),
            *hazard.first[:-1],
            WitnessStep(
                first.path,
                first.line,
                first.function,
                f"{hazard.first_kind}s {memory} on stream {a}: {first.note}",
                column=first.column,
            ),
            *_next_step(hazard, root, analysis),
            *hazard.second[:-1],
            WitnessStep(
                second.path,
                second.line,
                second.function,
                f"{second.note}: {edge}"
                if hazard.shape == FREED_IN_USE
                else f"{when}, {hazard.second_kind}s {memory} on stream {b}: {edge}",
                column=second.column,
            ),
        ]
        if hazard.shape == FREED_IN_USE:
            message = (
                f"In mode '{label}', {memory} is freed ({second.path}:{second.line}) while "
                f"stream {a} may still {hazard.first_kind} it ({first.path}:{first.line}): "
                f"the caching allocator may give its block to the next allocation on stream "
                f"{b}; {edge}."
            )
        else:
            message = (
                f"In mode '{label}', {hazard.conflict} hazard on {memory}: stream "
                f"{b} {hazard.second_kind}s it ({second.path}:{second.line}) {when} while "
                f"stream {a} may still {hazard.first_kind} it ({first.path}:{first.line}); "
                f"{edge}."
            )
        return self.finding(
            analysis,
            confidence="medium",
            message=message,
            location=Location(second.path, second.line, second.column, second.function),
            step_root=root.name,
            mode=mode,
            mode_label=label,
            witness=tuple(witness),
            remedy=_REMEDIES[hazard.shape],
            fingerprint=fingerprint(
                self.code,
                root.name,
                hazard.memory.rsplit(".", 1)[-1],  # the attribute, whoever holds it
                first.function,
                second.function,
                hazard.conflict,
                when,
            ),
        )


def _next_step(hazard: Hazard, root: StepRoot, analysis: Analysis) -> list[WitnessStep]:
    """Where the loop runs the step again, for a hazard with the next step."""
    if not hazard.across_steps:
        return []
    return [root_step(root, analysis, f"the loop runs the next step: {root.name} again")]


def _memory_name(memory: str) -> str:
    """An attribute path as it is; a fresh tensor as the local that holds it."""
    local = local_of(memory)
    if local is None:
        return memory
    function, name = local
    return f"the fresh tensor {name} of {'.'.join(function.split('.')[-2:])}"


def _stream_name(stream: str) -> str:
    return "current (the step's stream)" if stream == CURRENT else stream


def _missing_edge(hazard: Hazard, first: str, second: str) -> str:
    if hazard.shape == FREED_IN_USE:
        return f"no record_stream({first}) and no wait of {second} on {first} before the free"
    if hazard.shape == ONE_WAY:
        return (
            f"{first} waits for {second} but {second} never waits for {first} (one direction only)"
        )
    if hazard.shape == WAIT_TOO_EARLY:
        return f"{second} waited for {first} before this access was launched, not after it"
    if hazard.shape == STALE_EVENT:
        return f"the event {second} waited on was not recorded on {first} after its access"
    return f"missing edge: no wait of {second} on {first} after that access"
