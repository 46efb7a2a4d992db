"""SYNC002 on real vLLM releases: pause and wake-up in 0.28.0, none in 0.29.0."""

from __future__ import annotations

from helpers import SARIF_SCHEMA, source_text

from syncscan.flow.walk import RELEASES
from syncscan.runner import RunResult

CORE = "vllm/v1/engine/core.py"
PAUSE = "vllm.v1.engine.core.EngineCore.pause_scheduler"
WAKE_UP = "vllm.v1.worker.gpu_worker.Worker.wake_up"
SLEEP = "vllm.v1.worker.gpu_worker.Worker.sleep"


def by_function(result: RunResult, code: str) -> dict:
    return {f.location.function: f for f in result.findings if f.code == code}


def test_0_28_pause_names_its_three_completion_sites(result_0_28: RunResult) -> None:
    pause = by_function(result_0_28, "SYNC002")[PAUSE]
    assert pause.severity == "error"
    sites = [(r.path, source_text(result_0_28, r.path, r.line).strip()) for r in pause.related]
    assert all(path == CORE for path, _ in sites)
    texts = [text for _, text in sites]
    assert texts.count("return None") == 2  # in-process return and multiprocess fast path
    assert "future.set_result(None)" in texts  # the deferred idle callback
    functions = {r.function for r in pause.related}
    assert "vllm.v1.engine.core.EngineCore.pause_scheduler" in functions
    assert "vllm.v1.engine.core.EngineCoreProc.pause_scheduler" in functions
    assert any("<locals>.engine_idle_callback" in f for f in functions)


def test_0_28_wake_up_lacks_barrier_and_sleep_is_clean(result_0_28: RunResult) -> None:
    found = by_function(result_0_28, "SYNC002")
    assert WAKE_UP in found
    wake = found[WAKE_UP]
    assert any("launches device work" in w.note for w in wake.witness)
    assert SLEEP not in found
    sleep = next(q for q in result_0_28.analysis.quiescence_results if q.spec.function == SLEEP)
    assert sleep.sites and not any(s.lacking for s in sleep.sites)


def test_0_28_errors_are_exactly_the_three_known_defects(result_0_28: RunResult) -> None:
    """The seeds, exactly; SYNC003 findings are pinned by the triage corpus."""
    errors = sorted(
        (f.code, f.location.function)
        for f in result_0_28.findings
        if f.severity == "error" and f.code in ("SYNC001", "SYNC002")
    )
    assert errors == [
        ("SYNC001", "vllm.v1.worker.gpu.model_runner.GPUModelRunner.execute_model"),
        ("SYNC002", PAUSE),
        ("SYNC002", WAKE_UP),
    ]


def test_0_29_has_no_seed_family_errors(result_0_29: RunResult) -> None:
    """No SYNC001/SYNC002 at all; SYNC003 findings are pinned by the triage corpus."""
    seeds = [f for f in result_0_29.findings if f.code in ("SYNC001", "SYNC002")]
    assert [f.message for f in seeds] == []


def test_0_29_pause_barrier_resolves_through_the_worker_rpc(result_0_29: RunResult) -> None:
    """Three completions (in-process return, fast path, idle callback) and the
    cache reset (a release point, reference fix 003) all follow _finish_pause's
    barrier, which reaches the workers by name through collective_rpc."""
    pause = next(q for q in result_0_29.analysis.quiescence_results if q.spec.function == PAUSE)
    releases = [s for s in pause.sites if s.kind.startswith(RELEASES)]
    assert len(pause.sites) == 4 and len(releases) == 1, [s.kind for s in pause.sites]
    assert releases[0].function.endswith("._finish_pause")
    assert not any(s.lacking for s in pause.sites)
    for site in pause.sites:
        hops = [step.function for step in site.barrier]
        assert any(h.endswith("._finish_pause") for h in hops), hops
        assert hops[-1] == "vllm.v1.worker.worker_base.WorkerBase.synchronize_device"
        assert any("collective_rpc() by name" in step.note for step in site.barrier)
        assert "torch.accelerator.synchronize" in site.barrier[-1].note
    wake = next(q for q in result_0_29.analysis.quiescence_results if q.spec.function == WAKE_UP)
    assert wake.sites and not any(s.lacking for s in wake.sites)


def test_0_28_sarif_validates_and_carries_each_witness(result_0_28: RunResult) -> None:
    import json

    import jsonschema

    from syncscan.report import sarif

    document = json.loads(sarif.render(result_0_28, result_0_28.findings))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(
        document
    )
    results = document["runs"][0]["results"]
    assert len(results) == len(result_0_28.findings)
    for entry, finding in zip(results, result_0_28.findings, strict=True):
        flow = entry["codeFlows"][0]["threadFlows"][0]["locations"]
        steps = [s for s in finding.witness if s.path]
        assert len(flow) == len(steps)
        lines = [loc["location"]["physicalLocation"]["region"]["startLine"] for loc in flow]
        assert lines == [s.line for s in steps]
