"""SYNC003 write-outside-guard: a host write the buffer's event protocol does not order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscan.findings import WitnessStep
from syncscan.flow.verdicts import OUTSIDE_GUARD

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
    from syncscan.flow.state import Race
    from syncscan.flow.step import RootAnalysis, StepPath

_PACK = """
[pack]
name = "example"
description = "rule example"
[[step_root]]
class = "example.Runner"
method = "execute_model"
"""

_COMMON = """
from contextlib import contextmanager

import torch


class Runner:
    def __init__(self, n):
        self.ids = torch.zeros(n, dtype=torch.int64, pin_memory=True)
        self.ids_gpu = torch.zeros(n, dtype=torch.int64, device="cuda")
        self.prep_event = torch.cuda.Event()

    @contextmanager
    def guarded_inputs(self):
        self.prep_event.synchronize()  # the previous step's copy has read self.ids
        try:
            yield
        finally:
            self.prep_event.record()  # after the copy below is queued
"""

_BUGGY = (
    _COMMON
    + """
    def execute_model(self, batch):
        with self.guarded_inputs():
            self.ids[: len(batch)] = batch
            self.ids_gpu.copy_(self.ids, non_blocking=True)
        self.ids[0] = -1  # after the record: the copy may not have read it yet
        return None
"""
)

_FIXED = (
    _COMMON
    + """
    def execute_model(self, batch):
        with self.guarded_inputs():
            self.ids[: len(batch)] = batch
            self.ids[0] = -1  # inside the region, before the copy reads it
            self.ids_gpu.copy_(self.ids, non_blocking=True)
        return None
"""
)


class WriteOutsideGuard(StepRule):
    """## What it does
    Finds a host write into pinned memory that a device access still uses,
    with no host wait between them: the write comes after the guard's record
    (outside its `with` region), before the guard's wait in the next step,
    from an entry point or in a mode that skips the guard, or several calls
    deep in another class. The happens-before model unrolls the step loop: a
    non-blocking copy (or a kernel reading a UVA view) launched in step N
    still reads the buffer when step N+1 writes it, unless a host wait on an
    event recorded after the copy (or a full synchronize) comes in between.

    ## Why is this bad?
    The engine has an event protocol for its pinned inputs, and this write
    slips past it. The device copies whatever the buffer holds when the copy
    finally runs: the next step's values, or a half-written mix. The model
    computes on wrong inputs, or a kernel follows a stale index out of bounds
    ("illegal memory access"), far from the write that caused it.

    ## Example
    ```python
    with self.guarded_inputs():        # waits on entry, records on exit
        self.ids[:n] = batch
        self.ids_gpu.copy_(self.ids, non_blocking=True)
    self.ids[0] = -1                   # after the record: races the copy
    ```

    ## Use instead
    ```python
    with self.guarded_inputs():
        self.ids[:n] = batch
        self.ids[0] = -1               # every write inside the region
        self.ids_gpu.copy_(self.ids, non_blocking=True)
    ```
    """

    code = "SYNC003"
    name = "write-outside-guard"
    severity = "error"
    summary = "A host write into pinned memory the device still accesses, outside its guard"
    remedy = (
        "Order the write after the wait that covers the device's access: move it "
        "inside the guarded region (or widen the region to include it); take the "
        "guard on every entry point that writes these buffers; create the guard "
        "event in every mode in which steps overlap; or double-buffer the memory, "
        "or use a pageable source (its copy is staged synchronously). `syncscan "
        "check --fix` makes the first change only where the step statement that "
        "leads to the write sits right before the guarded region; elsewhere the "
        "placement is a design choice, left to you."
    )
    VALID = [Example({"example.py": _FIXED}, _PACK, 0, "every write inside the region")]
    INVALID = [Example({"example.py": _BUGGY}, _PACK, 1, "a write after the record")]

    def root_findings(self, result: RootAnalysis, analysis: Analysis) -> list[Finding]:
        groups: dict[tuple, list[tuple[StepPath, Race]]] = {}
        for path in result.paths:
            if path.verdict != OUTSIDE_GUARD or path.race is None:
                continue
            for race in (path.race, *path.also):
                buffer, write, _ = race
                site = write[-1]
                key = (buffer, site.path, site.line, path.across_steps)
                groups.setdefault(key, []).append((path, race))
        return [
            self._finding(result, sorted(group, key=lambda g: _path_order(g[0])), analysis)
            for group in groups.values()
        ]

    def _finding(
        self, result: RootAnalysis, group: list[tuple[StepPath, Race]], analysis: Analysis
    ) -> Finding:
        path, race = group[0]
        buffer, write, access = race
        root = result.root
        mode = shared_mode([p for p, _ in group], analysis.packs)
        label = mode_label(mode, analysis.packs)
        site, launch = write[-1], access[-1]
        when = "the next step" if path.across_steps else "the same step"
        witness: list[WitnessStep] = [
            root_step(root, analysis, f"step root {root.name} in mode {label}"),
            *access[:-1],
            WitnessStep(
                launch.path,
                launch.line,
                launch.function,
                f"the device accesses the buffer later: {launch.note}",
            ),
        ]
        if path.across_steps:
            final = path.returns[-1]
            witness.append(
                WitnessStep(
                    final.path,
                    final.line,
                    final.function,
                    f"returns {final.text}: no host wait covers that access",
                )
            )
        witness.extend(write[:-1])
        witness.append(
            WitnessStep(
                site.path,
                site.line,
                site.function,
                f"in {when}, {site.note}: no host wait orders it after the access",
                site.written,
                site.pool,
                site.column,
            )
        )
        written = site.written or "writes a pinned buffer"
        message = (
            f"In mode '{label}', {site.function.rsplit('.', 1)[-1]} {written} "
            f"in {when} while the device may still access it "
            f"({launch.path}:{launch.line}): no host wait between the device's access and "
            f"this host access covers it (missing edge: a wait on an event recorded after "
            f"the device's access)."
        )
        return self.finding(
            analysis,
            confidence="medium",
            message=message,
            location=Location(site.path, site.line, site.column, site.function),
            step_root=root.name,
            mode=mode,
            mode_label=label,
            witness=tuple(witness),
            fingerprint=fingerprint(
                self.code,
                root.name,
                site.function,
                written,
                launch.function,
                when,
            ),
        )


def _path_order(path: StepPath) -> tuple:
    return (
        tuple((r.path, r.line) for r in path.returns),
        path.state.assumptions,
    )
