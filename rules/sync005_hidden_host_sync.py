"""SYNC005 hidden-host-sync: a host sync on the step path while steps overlap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncscan.findings import WitnessStep
from syncscan.flow.host_syncs import ALWAYS, HostSync

from .base import Example, Finding, Location, StepRule, fingerprint, mode_label, root_step

if TYPE_CHECKING:
    from syncscan.flow.context import Analysis
    from syncscan.flow.step import RootAnalysis

_PACK = """
[pack]
name = "example"
description = "rule example"
[vocabulary]
overlapping_step_modes = ["self.async_scheduling"]
sanctioned_sync_contexts = ["example.sync_allowed"]
sanctioned_sync_markers = ["gpu-sync-ok"]
[[step_root]]
class = "example.Runner"
method = "execute_model"
"""

_COMMON = """
import contextlib

import torch


@contextlib.contextmanager
def sync_allowed():
    yield


class Sampler:
    def __init__(self):
        self.counts = torch.zeros(8, device="cuda")

    def finished(self):
        return self.count()

    def count(self):
        return self.counts.item(){marker}
"""

_RUNNER = """

class Runner:
    def __init__(self, config):
        self.async_scheduling = config.async_scheduling
        self.sampler = Sampler()

    def execute_model(self, batch):
        {call}
        return None
"""


def _example(call: str, marker: str = "") -> dict[str, str]:
    return {"example.py": _COMMON.format(marker=marker) + _RUNNER.format(call=call)}


class HiddenHostSync(StepRule):
    """## What it does
    Finds a host sync on an engine step's path — an event, stream or device
    `synchronize()`, `.item()` / `.tolist()` / `.cpu()` of a device tensor, a
    blocking copy or a `non_blocking=True` copy staged synchronously because
    its host side is pageable, a data-dependent-shape op (`torch.nonzero`) or
    `bool()` / `int()` / `float()` of a device tensor — reached in a mode where
    the pack says steps overlap (`overlapping_step_modes`: vLLM's async
    scheduling), outside the engine's sanctioned regions
    (`sanctioned_sync_contexts`, e.g. `with gpu_sync_allowed():`), not on a
    line marked with the pack's comment marker (`sanctioned_sync_markers`,
    e.g. `# gpu-sync-ok: <reason>`), and not reached through a setup-only
    function (`setup_only_functions`: warm-up, profiling, capture). The
    witness is the call chain from the step root to the sync.

    Only syncs the walk is certain of are reported. A `.tolist()` of a tensor
    of unknown origin, `x[mask]`, a blocking copy between tensors it cannot
    place, a call into a `torch.compile`d function sync only if a tensor is on
    the device: they count towards a sanctioned region (`syncscan audit` lists
    the regions where nothing was found) and are never reported.

    On by default where a pack names the engine's sanctioned syncs (a region
    or a comment marker); where none does, the engine cannot say which of its
    syncs it means, and the rule reports only when selected by name
    (`--select SYNC005`).

    ## Why is this bad?
    Async scheduling pays only while the host never waits for the device in
    the step: the host prepares step N+1 while step N runs. A sync in the step
    drains the device queue, so the next step's launches start on an idle GPU
    and the overlap is lost for every step that reaches it. The sync is
    invisible in the code (an `.item()` three calls below the step) and in
    profiles it looks like a slow kernel.

    ## Example
    ```python
    def execute_model(self, batch):
        if self.sampler.finished():       # -> count() -> counts.sum().item()
            ...
    ```

    ## Use instead
    ```python
    def execute_model(self, batch):
        done = self.sampler.counts.sum()   # stays on the device; read it
        ...                                # in the deferred output instead
        # or, where the sync is intended:
        with gpu_sync_allowed():
            if self.sampler.finished():
                ...
    ```
    """

    code = "SYNC005"
    name = "hidden-host-sync"
    severity = "warning"
    summary = "A host sync on the step path stalls overlapping (async) steps"
    remedy = (
        "Keep the value on the device (read it where the step's output is resolved, "
        "after the deferred wait), copy it with non_blocking=True into pinned memory "
        "and read it after an event, or, where the sync is intended, wrap it in the "
        "engine's sanctioned region (`with gpu_sync_allowed():`) or mark the line "
        "with its marker (`# gpu-sync-ok: <reason>`)."
    )
    VALID = [
        Example(
            _example("with sync_allowed():\n            self.sampler.finished()"),
            _PACK,
            0,
            "the sync inside a sanctioned region",
        ),
        Example(
            _example(
                "with contextlib.nullcontext() if batch else sync_allowed():\n"
                "            self.sampler.finished()"
            ),
            _PACK,
            0,
            "the sync inside a region sanctioned in one branch of a conditional",
        ),
        Example(
            _example("self.sampler.finished()", "  # gpu-sync-ok: counted once per step"),
            _PACK,
            0,
            "the sync marked gpu-sync-ok",
        ),
        Example(
            _example("if not self.async_scheduling:\n            self.sampler.finished()"),
            _PACK,
            0,
            "the sync only where steps do not overlap",
        ),
    ]
    INVALID = [
        Example(_example("self.sampler.finished()"), _PACK, 1, ".item() two calls deep"),
        Example(
            _example("self.sampler.finished()", "  # sync-ok: not the pack's marker"),
            _PACK,
            1,
            "a marker comment the pack does not name sanctions nothing",
        ),
    ]

    def check(self, analysis: Analysis) -> list[Finding]:
        vocab = analysis.packs.vocabulary
        overlap = vocab.names("overlapping_step_modes")
        if not overlap:
            return []  # no pack says the steps overlap: a sync stalls nothing
        annotated = vocab.names("sanctioned_sync_contexts") or vocab.names(
            "sanctioned_sync_markers"
        )
        if not annotated and self.code not in analysis.selected:
            # An engine that never says which syncs it means: every deliberate
            # one would be a warning (SGLang 0.5.23: 92). Opt-in there.
            return []
        self._overlap = overlap - {ALWAYS}
        self._seen: set[tuple[str, int, int]] = set()
        return super().check(analysis)

    def root_findings(self, result: RootAnalysis, analysis: Analysis) -> list[Finding]:
        if result.root.spec.discards_output:
            return []  # a dummy batch's output is dropped: the engine does not wait on it
        findings = []
        counts: dict[tuple[str, str], int] = {}
        for sync in result.host_syncs:
            site = sync.site
            where = (site.path, site.line, site.column)
            if where in self._seen or not self._reported(sync):
                continue
            self._seen.add(where)
            n = counts[(site.function, site.note)] = counts.get((site.function, site.note), 0) + 1
            findings.append(self._finding(result, sync, analysis, n))
        return findings

    def _reported(self, sync: HostSync) -> bool:
        """Certain, outside every sanctioned region and setup path, in a mode where
        steps overlap."""
        if sync.sanctioned or sync.setup or not sync.certain:
            return False
        return not any(k in self._overlap and not v for k, v in sync.mode)

    def _finding(self, result: RootAnalysis, sync: HostSync, analysis: Analysis, n: int) -> Finding:
        root = result.root
        site = sync.site
        label = mode_label(sync.mode, analysis.packs)
        if label == "every mode":
            label = "steps overlap"
        witness: list[WitnessStep] = [root_step(root, analysis, f"step root {root.name}")]
        witness.extend(sync.chain)
        depth = len(sync.chain) - 1
        where = "in the step itself" if depth == 0 else f"{depth} call(s) below the step"
        message = (
            f"Step {root.name} reaches a host sync {where} "
            f"({site.note.removeprefix('host waits: ')}) "
            f"outside any sanctioned region: with overlapping steps the host stalls until the "
            f"device drains, and the next step's launches start on an idle device."
        )
        return self.finding(
            analysis,
            confidence="high" if sync.wait else "medium",
            message=message,
            location=Location(site.path, site.line, site.column, site.function),
            step_root=root.name,
            mode=sync.mode,
            mode_label=label,
            witness=tuple(witness),
            fingerprint=fingerprint(
                self.code,
                root.name,
                *(s.function for s in sync.chain),
                site.note,
                str(n),
            ),
        )
