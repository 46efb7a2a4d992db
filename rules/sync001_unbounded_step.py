"""SYNC001 unbounded-step: a mode whose step never waits on the device."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscan.findings import WitnessStep
from syncscan.flow.verdicts import UNBOUNDED

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
    from syncscan.flow.step import RootAnalysis, StepPath

_PACK = """
[pack]
name = "example"
description = "rule example"
[[step_root]]
class = "example.Runner"
method = "execute_model"
continuation = ["sample_tokens"]
[[resolution]]
method = "get_output"
[[mode]]
predicate = "self.encoder_only"
value = true
label = "encoder-only"
"""

_POOL = '''
import torch
import triton


@triton.jit
def gather_kernel(src, n):
    pass


class Slots:
    """A round-robin pool of pinned buffers the device reads in place."""

    def __init__(self, n, depth):
        self.bufs = [torch.zeros(n, pin_memory=True) for _ in range(depth)]
        self.depth = depth
        self.idx = 0

    def write(self, values):
        self.idx = (self.idx + 1) % self.depth
        buf = self.bufs[self.idx]
        buf[: len(values)] = values
        gather_kernel[(1,)](buf, len(values))


class Output:
    def __init__(self):
        self.event = torch.cuda.Event()
        self.event.record()

    def get_output(self):
        self.event.synchronize()
        return {}
'''

_BUGGY = (
    _POOL
    + """

class Runner:
    def __init__(self, config):
        self.encoder_only = config.encoder_only
        self.slots = Slots(1024, 2)

    def execute_model(self, batch):
        self.slots.write(batch.token_ids)
        if self.encoder_only:
            return {"empty": True}  # host-built: the step never waits
        return None

    def sample_tokens(self):
        return Output()
"""
)

_FIXED = (
    _POOL
    + """

class Runner:
    def __init__(self, config):
        self.encoder_only = config.encoder_only
        self.slots = Slots(1024, 2)
        self.reuse_event = torch.cuda.Event() if self.encoder_only else None

    def execute_model(self, batch):
        if self.reuse_event is not None:
            self.reuse_event.synchronize()
        self.slots.write(batch.token_ids)
        if self.encoder_only:
            self.reuse_event.record()
            return {"empty": True}
        return None

    def sample_tokens(self):
        return Output()
"""
)


class UnboundedStep(StepRule):
    """## What it does
    Finds an instance mode of an engine step (encoder-only, pooling, a dummy
    run, ...) that writes pinned host buffers the device reads — slots of a
    round-robin pool read in place through UVA, or sources of `non_blocking`
    copies — and then completes the step with no host wait: none inline, none
    deferred through the returned object's resolution method (`get_output`),
    and no event waited at the start of the next step.

    ## Why is this bad?
    With async scheduling the host starts step N+1 before step N has finished
    on the device. A pool of `depth` slots is only safe while the host is at
    most `depth - 1` steps ahead, and only a host wait enforces that. A mode
    whose step never waits lets the host run arbitrarily far ahead: a slot is
    rewritten while a kernel of an earlier step still reads it, and the kernel
    loads garbage. It surfaces as "illegal memory access" far from the cause.

    ## Example
    ```python
    def execute_model(self, batch):
        self.slots.write(batch.token_ids)   # pinned slot, read by a kernel
        if self.encoder_only:
            return make_empty_output(batch)  # built on the host: no wait
        return None                          # sample_tokens() -> get_output() waits
    ```

    ## Use instead
    ```python
    # __init__: arm one event for the affected mode only
    self.reuse_event = torch.cuda.Event() if self.encoder_only else None

    def execute_model(self, batch):
        if self.reuse_event is not None:
            self.reuse_event.synchronize()   # the previous step is done with the slots
        self.slots.write(batch.token_ids)
        if self.encoder_only:
            self.reuse_event.record()        # after the last launch that reads them
            return make_empty_output(batch)
        return None
    ```
    """

    code = "SYNC001"
    name = "unbounded-step"
    severity = "error"
    summary = "A step mode writes pinned buffers the device reads and never waits on the device"
    remedy = (
        "Arm one event for the affected mode (None in every other mode), "
        "synchronize() it before the step's first host write into the reused "
        "buffers, and record() it after the last launch that reads them, before "
        "the mode's return. Other modes keep their wait-free path. A ring of "
        "events as deep as the slot pool, waited on entry and recorded on exit "
        "of a guarded region, is the same remedy."
    )
    VALID = [
        Example({"example.py": _FIXED}, _PACK, 0, "reference remedy: event armed for the mode"),
    ]
    INVALID = [
        Example({"example.py": _BUGGY}, _PACK, 1, "encoder-only returns a host-built output"),
    ]

    def root_findings(self, result: RootAnalysis, analysis: Analysis) -> list[Finding]:
        groups: dict[tuple, list[StepPath]] = {}
        for path in result.paths:
            if path.verdict != UNBOUNDED:
                continue
            # One finding per labelled mode; where no pack label applies, one per
            # unwaited return (its mode is what the paths reaching it share), not
            # one per combination of unlabelled predicates.
            labelled = tuple(
                (k, v) for k, v in path.state.assumptions if analysis.packs.label_for(k, v)
            )
            final = path.returns[-1]
            groups.setdefault(labelled or (final.path, final.line), []).append(path)
        findings = []
        for group in groups.values():
            group.sort(key=_path_order)
            findings.append(self._finding(result, group, analysis))
        return findings

    def _finding(self, result: RootAnalysis, group: list[StepPath], analysis: Analysis) -> Finding:
        path = group[0]
        root = result.root
        mode = shared_mode(group, analysis.packs)
        label = mode_label(mode, analysis.packs)
        final = path.returns[-1]
        write = path.state.write or ()
        # The device access that reads what this step wrote (the race's access).
        reader = path.race[2] if path.race is not None else (path.state.reader or ())
        witness: list[WitnessStep] = [
            root_step(root, analysis, f"step root {root.name} in mode {label}"),
            *write,
        ]
        if reader:
            launch = reader[-1]
            witness.append(WitnessStep(launch.path, launch.line, launch.function,
                                       f"the device reads it: {launch.note}"))  # fmt: skip
        for ret in path.returns:
            note = (
                f"returns {ret.text}: the step resolves with no host wait, inline or deferred"
                if ret is final
                else f"returns {ret.text}; the engine continues the step"
            )
            witness.append(WitnessStep(ret.path, ret.line, ret.function, note))
        if path.race is not None:
            rewrite = path.race[1][-1]
            witness.append(
                WitnessStep(
                    rewrite.path,
                    rewrite.line,
                    rewrite.function,
                    f"{'a later step of this mode' if path.across_steps else 'then it'} "
                    f"{rewrite.note}: no host wait orders it after the device's access",
                    rewrite.written,
                    rewrite.pool,
                    rewrite.column,
                )
            )
        origin = write[-1].written.removeprefix("writes ") if write else "a pinned buffer"
        message = (
            f"In mode '{label}', step {root.name} {write[-1].note if write else 'writes'} "
            f"and returns {final.text} without a host wait, inline or deferred: the host "
            f"can run ahead and rewrite the buffer while the device still reads it."
        )
        related = tuple(
            Location(
                p.returns[-1].path,
                p.returns[-1].line,
                p.returns[-1].column,
                p.returns[-1].function,
                "another unwaited return of this mode",
            )  # fmt: skip
            for p in group[1:]
            if (p.returns[-1].path, p.returns[-1].line) != (final.path, final.line)
        )
        return self.finding(
            analysis,
            confidence="high" if any(w.pool for w in write) else "medium",
            message=message,
            location=Location(final.path, final.line, final.column, root.function.qualname),
            step_root=root.name,
            mode=mode,
            mode_label=label,
            witness=tuple(witness),
            related=tuple(dict.fromkeys(related)),
            fingerprint=fingerprint(
                self.code,
                root.name,
                repr(mode),
                origin,
                write[-1].function if write else "",
                final.function,
                final.text,
            ),  # fmt: skip
        )


def _path_order(path: StepPath) -> tuple:
    return (
        tuple((r.path, r.line) for r in path.returns),
        tuple((w.path, w.line) for w in path.state.write or ()),
        path.state.assumptions,
    )
