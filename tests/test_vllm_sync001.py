"""SYNC001 on real vLLM releases: the encoder-only slot-reuse race of 0.28.0,
its absence in 0.29.0, and the reference remedy applied to 0.28.0."""

from __future__ import annotations

from pathlib import Path

from engine_trees import apply_edit
from helpers import analyse, copy_project, source_text

from syncscan.runner import RunResult

V2 = "vllm.v1.worker.gpu.model_runner.GPUModelRunner.execute_model"
V2_FILE = "vllm/v1/worker/gpu/model_runner.py"


def replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"anchor not unique in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def errors(result: RunResult, code: str) -> list:
    return [f for f in result.findings if f.code == code and f.severity == "error"]


def test_0_28_reports_exactly_the_encoder_only_step(result_0_28: RunResult) -> None:
    found = errors(result_0_28, "SYNC001")
    assert len(found) == 1, [f.message for f in found]
    finding = found[0]
    assert finding.location.function == V2
    assert finding.location.path == V2_FILE
    assert "encoder-only" in finding.mode_label
    assert dict(finding.mode)["self.is_encoder_only"] is True
    writes = [w for w in finding.witness if w.function.endswith("UvaBufferPool.copy_to_uva")]
    assert writes and writes[0].path == "vllm/v1/worker/gpu/buffer_utils.py"
    assert "round-robin pool" in writes[-1].note
    returned = source_text(result_0_28, finding.location.path, finding.location.line, 3)
    assert "make_empty_encoder_model_runner_output" in returned
    # The witness names the kernel that reads the slot in place (not merely the
    # first launch after the write), the unwaited return, then the next step's
    # rewrite of the pool that races it.
    reader = next(w for w in finding.witness if w.note.startswith("the device reads it"))
    assert "_apply_write_kernel" in reader.note
    assert finding.witness[-2].line == finding.location.line
    assert finding.witness[-1].function.endswith("UvaBufferPool.copy_to_uva")
    assert "a later step of this mode" in finding.witness[-1].note


def test_0_28_modes_that_must_stay_quiet(result_0_28: RunResult) -> None:
    """Sampling, pooling, spec decode, PP/TP ranks, zero-token and dummy runs."""
    v2 = next(r for r in result_0_28.analysis.step_results if r.root.name == V2)
    assert v2.incomplete is None
    verdicts = {}
    for path in v2.paths:
        verdicts.setdefault(path.verdict, []).append(dict(path.state.assumptions))
    unbounded = verdicts.get("unbounded", [])
    assert unbounded and all(m.get("self.is_encoder_only") is True for m in unbounded)
    assert any(m.get("self.is_last_pp_rank") is False for m in verdicts["bounded by peer"])
    deferred = [p for p in v2.paths if p.verdict == "deferred"]
    reasons = {p.reason for p in deferred}
    assert any("AsyncOutput" in r for r in reasons)
    assert any("AsyncPoolingOutput" in r for r in reasons)
    # A dummy run writes no pool slots: every path that writes a slot assumed it was
    # not a dummy run.
    writing = [p for p in v2.paths if any(b.endswith("[slot]") for b in p.state.written)]
    assert writing and all(dict(p.state.assumptions).get("dummy_run") is False for p in writing)


def test_0_28_v1_runner_is_analysed_and_quiet(result_0_28: RunResult) -> None:
    v1 = next(r for r in result_0_28.analysis.step_results if "gpu_model_runner" in r.root.name)
    assert v1.incomplete is None
    assert v1.paths
    assert not [p for p in v1.paths if p.verdict == "unbounded"]


def test_0_29_has_no_sync001(result_0_29: RunResult) -> None:
    assert errors(result_0_29, "SYNC001") == []
    names = {r.root.name for r in result_0_29.analysis.step_results}
    mm = "vllm.v1.worker.mm_encoder_model_runner.MMEncoderModelRunner.execute_model"
    assert mm in names
    encoder = next(r for r in result_0_29.analysis.step_results if r.root.name == mm)
    assert encoder.incomplete is None
    verdicts = {p.verdict for p in encoder.paths if p.state.write}
    assert "semaphore" in verdicts and "unbounded" not in verdicts


def test_0_28_with_reference_remedy_is_clean(
    vllm_0_28: Path, result_0_28: RunResult, tmp_path: Path
) -> None:
    tree = copy_project(vllm_0_28, tmp_path / "src")
    runner = tree / V2_FILE
    apply_edit(
        runner,
        "self.is_encoder_only = vllm_config.is_encoder_only",
        "        self.encoder_input_reuse_event = (\n"
        "            torch.cuda.Event() if self.is_encoder_only else None\n"
        "        )",
    )
    apply_edit(
        runner,
        "            self.update_pp_decode_requests()",
        "            if self.encoder_input_reuse_event is not None:\n"
        "                self.encoder_input_reuse_event.synchronize()",
        after=False,
        count=1,
    )
    replace_once(
        runner,
        "        if self.is_encoder_only:\n"
        "            return ModelRunnerOutput.with_ec_conn_output(\n"
        "                make_empty_encoder_model_runner_output(scheduler_output),",
        "        if self.is_encoder_only:\n"
        "            self.encoder_input_reuse_event.record()\n"
        "            return ModelRunnerOutput.with_ec_conn_output(\n"
        "                make_empty_encoder_model_runner_output(scheduler_output),",
    )
    fixed = analyse(tree)
    assert errors(fixed, "SYNC001") == []
    before = {(f.code, f.fingerprint) for f in result_0_28.findings if f.code != "SYNC001"}
    after = {(f.code, f.fingerprint) for f in fixed.findings if f.code != "SYNC001"}
    # The remedy's own wait is a host sync in the step: SYNC005 reports it (the
    # upstream fix carries no marker), and nothing else changes.
    assert before <= after
    added = [f for f in fixed.findings if (f.code, f.fingerprint) in after - before]
    lines = (tree / added[0].location.path).read_text().splitlines() if added else []
    assert [f.code for f in added] == ["SYNC005"], added
    assert "encoder_input_reuse_event.synchronize()" in lines[added[0].location.line - 1]
