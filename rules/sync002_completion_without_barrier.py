"""SYNC002 completion-without-barrier: a transition completes while the device is busy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscan.findings import WitnessStep

from .base import Example, Finding, Location, Rule, fingerprint

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.quiescence import CompletionSite, QuiescenceResult

_PACK = """
[pack]
name = "example"
description = "rule example"
[[quiescence]]
function = "example.Engine.pause"
busy_on_entry = true
why = "callers use the device once pause returns"
[[rpc]]
method = "collective_rpc"
receivers = ["example.Worker"]
"""

_COMMON = """
import torch
import torch.distributed as dist


class Worker:
    def synchronize_device(self):
        if torch.accelerator.is_available():
            torch.accelerator.synchronize()


class Executor:
    def __init__(self):
        self.worker = Worker()

    def collective_rpc(self, method, *args):
        return getattr(self.worker, method)(*args)
"""

_BUGGY = (
    _COMMON
    + """

class Engine:
    def __init__(self, cpu_group):
        self.executor = Executor()
        self.cpu_group = cpu_group
        self.paused = False

    def pause(self):
        self.paused = True
        dist.barrier(group=self.cpu_group)  # orders ranks, not the device
        return None
"""
)

_FIXED = (
    _COMMON
    + """

class Engine:
    def __init__(self, cpu_group):
        self.executor = Executor()
        self.paused = False

    def pause(self):
        self.paused = True
        self.executor.collective_rpc("synchronize_device")
        return None
"""
)


class CompletionWithoutBarrier(Rule):
    """## What it does
    Finds a control-plane transition named as a quiescence point (pause, sleep,
    wake-up, weight sync, memory release) that reports completion — returns,
    resolves a future, or resolves it later from a callback — on a path where
    no full-device barrier follows the last device work: the step loop's last
    launches (and, in data-parallel mode, its dummy batches) or the
    transition's own tail work.

    ## Why is this bad?
    The caller takes completion as a promise that the device is idle, then
    runs its own kernels or NCCL on it (an RL trainer syncing weights, say).
    Work launched before the completion races them. A CPU barrier (a gloo
    all-reduce, `torch.distributed.barrier` on a CPU group, a threading event)
    orders processes, not the device.

    ## Example
    ```python
    def pause_scheduler(self):
        self.scheduler.set_pause_state(PAUSED)
        if not self.has_work():
            return None          # the last step may still run on the device
    ```

    ## Use instead
    ```python
    def _finish_pause(self):
        self.model_executor.collective_rpc("synchronize_device")  # every worker

    def pause_scheduler(self):
        self.scheduler.set_pause_state(PAUSED)
        if not self.has_work():
            self._finish_pause()
            return None
    ```
    """

    code = "SYNC002"
    name = "completion-without-barrier"
    severity = "error"
    summary = "A transition reports completion while device work may still run"
    root_kind = "quiescence point"
    remedy = (
        "Put a full-device barrier before each completion point: "
        "torch.accelerator.synchronize() in-process, or, where the engine and the "
        "device live in different processes, a worker method that synchronizes "
        "reached through the executor's RPC (collective_rpc('synchronize_device')). "
        "Call it from every completion path (the immediate return, the fast path, "
        "and the deferred callback that resolves the future), and end wake-up with it."
    )
    VALID = [Example({"example.py": _FIXED}, _PACK, 0, "barrier through RPC by name")]
    INVALID = [Example({"example.py": _BUGGY}, _PACK, 1, "only a CPU barrier before return")]

    def check(self, analysis: Analysis) -> list[Finding]:
        findings = []
        for result in analysis.quiescence_results:
            lacking = [s for s in result.sites if s.lacking]
            if lacking:
                findings.append(self._finding(result, lacking, analysis))
        return findings

    def _finding(
        self, result: QuiescenceResult, lacking: list[CompletionSite], analysis: Analysis
    ) -> Finding:
        spec = result.spec
        first = lacking[0]
        symbol = analysis.program.lookup(spec.function)
        module = analysis.program.module_of(spec.function)
        def_path = analysis.project.relpath(module.path) if module else first.path
        def_line = symbol.function.line if symbol.function else first.line
        witness: list[WitnessStep] = [
            WitnessStep(def_path, def_line, spec.function, f"quiescence point: {spec.why}")
        ]
        for step in first.launch or ():
            if step.path:
                witness.append(step)
            else:
                witness.append(WitnessStep(def_path, def_line, spec.function, step.note))
        for barrier in result.cpu_barriers[:1]:
            witness.append(barrier)
        witness.append(
            WitnessStep(
                first.path,
                first.line,
                first.function,
                f"{first.kind} with no device barrier after that work",
            )  # fmt: skip
        )
        sites = ", ".join(f"{s.path}:{s.line} ({s.kind})" for s in lacking)
        message = (
            f"{spec.function} reports completion while device work may still run: "
            f"{len(lacking)} completion site(s) lack a device barrier: {sites}."
        )
        if result.cpu_barriers:
            message += " The only barrier on the path is a CPU barrier."
        related = tuple(
            Location(s.path, s.line, s.column, s.function, f"completion: {s.kind}") for s in lacking
        )
        return self.finding(
            analysis,
            confidence="high",
            message=message,
            location=Location(first.path, first.line, first.column, spec.function),
            step_root=spec.function,
            mode=(),
            mode_label="",
            witness=tuple(witness),
            related=related,
            fingerprint=fingerprint(
                self.code, spec.function, *sorted(f"{s.function}:{s.kind}" for s in lacking)
            ),
        )
