"""`syncscan audit`: one model, rendered as console, JSON, Markdown, HTML and graph exports.

The console must read at 80 columns without an identifier cut across lines, the
JSON must be the same bytes from two runs (and from two checkouts), the HTML must
stand alone, and the progress must count on a terminal and name phases on a pipe.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, analyse, combined_project
from rich.console import Console

from syncscan.cli import main
from syncscan.report import audit, audit_html, audit_json, graph_export, graph_layout, progress
from syncscan.report.audit_model import Audit, build, rows
from syncscan.report.source_view import SourceView
from syncscan.runner import RunResult

SLOT_POOL = FIXTURES / "slot_pool_mode_without_wait" / "buggy"


@pytest.fixture(scope="module")
def audit_0_28(result_0_28: RunResult) -> Audit:
    return build(result_0_28)


def _render(model: Audit, width: int, verbose: bool) -> str:
    buffer = io.StringIO()
    audit.render(Console(file=buffer, width=width, color_system=None), model, verbose=verbose)
    return buffer.getvalue()


def _tokens(text: str) -> set[str]:
    return set(text.split())


# --------------------------------------------------------------------------- model


def test_the_encoder_only_cell_of_vllm_0_28_is_unbounded_and_its_finding_points_there(
    audit_0_28: Audit,
) -> None:
    v2 = next(
        r
        for r in audit_0_28.roots
        if r.name.endswith("gpu.model_runner.GPUModelRunner.execute_model")
    )
    cell = next(c for c in v2.cells if c.mode_label == "encoder-only")
    assert cell.verdict == "unbounded"
    sync001 = [f for f in audit_0_28.findings if f.finding.code == "SYNC001"]
    assert [f.cell for f in sync001] == [cell.id]
    assert all(audit_0_28.path(p).verdict == "unbounded" for p in sync001[0].paths)
    # Every path is in exactly one cell, and the rows of a root cover its paths.
    in_cells = [p for r in audit_0_28.roots for c in r.cells for p in c.paths]
    assert sorted(in_cells) == sorted(p.id for p in audit_0_28.paths)
    for root in audit_0_28.roots:
        counted = sum(len(paths) for *_, paths in rows(audit_0_28, root))
        assert counted == sum(len(c.paths) for c in root.cells)


def test_the_model_names_no_absolute_path(audit_0_28: Audit, vllm_0_28: Path) -> None:
    text = audit_json.render(audit_0_28)
    assert str(vllm_0_28) not in text and str(vllm_0_28.resolve()) not in text
    data = json.loads(text)
    buffers = [b["buffer"] for p in data["paths"] for b in p["buffers"]]
    assert buffers and all(b.startswith("vllm/") for b in buffers)


def test_quiescence_points_list_every_completion_site_with_its_barrier(audit_0_28: Audit) -> None:
    by_name = {q.function.rsplit(".", 2)[-2] + "." + q.function.rsplit(".", 1)[-1]: q
               for q in audit_0_28.quiescence}  # fmt: skip
    assert by_name["Worker.sleep"].verdict == "barrier"
    assert all(s.barrier and s.evidence for s in by_name["Worker.sleep"].sites)
    assert by_name["Worker.wake_up"].verdict == "no device barrier"


# --------------------------------------------------------------------------- console


def test_console_at_80_columns_never_cuts_a_word(audit_0_28: Audit) -> None:
    """Every word the model gives a table (modes, exits, verdicts, reasons) and
    every site and function the details name comes out whole, and no line is
    wider than 80 unless it is one word too long to wrap."""
    for verbose in (False, True):
        text = _render(audit_0_28, 80, verbose)
        lines = text.splitlines()
        for line in lines:
            assert len(line.rstrip()) <= 80 or len(line.split()) == 1, line
        found = _tokens(text)
        expected: set[str] = set()
        for root in audit_0_28.roots:
            expected |= _tokens(root.name)
            for mode, exit_, verdict, reason, _ in rows(audit_0_28, root):
                expected |= _tokens(f"{mode} {exit_} {verdict} {reason}")
        for item in audit_0_28.findings:
            loc = item.finding.location
            expected.add(f"{loc.path}:{loc.line}")
        if verbose:  # each row's first path is shown with its witness
            for root in audit_0_28.roots:
                for *_, paths in rows(audit_0_28, root):
                    expected |= {f"{s.path}:{s.line}" for s in paths[0].witness() if s.path}
        assert expected - found == set()
    assert len(_render(audit_0_28, 80, False).splitlines()) < 200


def test_console_rows_tell_apart_the_paths_of_one_mode(audit_0_28: Audit) -> None:
    root = audit_0_28.roots[0]
    keys = [
        (mode, exit_, verdict, reason) for mode, exit_, verdict, reason, _ in rows(audit_0_28, root)
    ]
    assert len(keys) == len(set(keys))
    defaults = [k for k in keys if k[0] == "default"]
    assert len(defaults) > 1 and len({k[1] for k in defaults}) > 1


def test_piped_audit_honours_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project = combined_project(tmp_path / "both")
    for width in (60, 120):
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["audit", "--no-cache", "-q", str(project)]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""  # -q: no progress
        lines = [line.rstrip() for line in captured.out.splitlines()]
        assert max(len(line) for line in lines if len(line.split()) > 1) <= width
        if width == 120:
            assert max(len(line) for line in lines) > 60  # the width is used, not fixed


def test_verbose_console_lists_each_paths_mode_and_witness(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "--no-cache", "-q", "-v", str(SLOT_POOL)]) == 0
    out = capsys.readouterr().out
    assert "self.encoder_only=true" in out
    assert "witness:" in out and "unbounded" in out


# --------------------------------------------------------------------------- json


def test_json_audit_is_the_same_bytes_from_two_runs_and_two_checkouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for name in ("one", "two"):
        copy = shutil.copytree(SLOT_POOL, tmp_path / name)
        for _ in range(2):  # cold, then warm cache
            target = tmp_path / f"{name}.json"
            assert main(["audit", "-q", "--format", "json", "-o", str(target), str(copy)]) == 0
            outputs.append(target.read_bytes())
    assert len(set(outputs)) == 1
    data = json.loads(outputs[0])
    assert set(data) == {
        "version", "schema", "findings", "roots", "mode_labels", "paths", "quiescence",
        "graph", "unresolved", "sanctioned_regions_without_sync", "stats", "diagnostics",
    }  # fmt: skip
    assert "seconds" not in data["stats"]
    unbounded = [p for p in data["paths"] if p["verdict"] == "unbounded"]
    assert unbounded and unbounded[0]["mode"]["self.encoder_only"] is True
    assert (
        data["findings"][0]["paths"] == [p["id"] for p in unbounded][:1]
        or data["findings"][0]["paths"]
    )


def test_json_schema_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The audit", 1)[1].split("\n## ", 1)[0]
    data = json.loads(audit_json.render(build(analyse(SLOT_POOL))))
    for key in data:
        assert f'"{key}"' in section, key
    for key in data["paths"][0]:
        assert f'"{key}"' in section, key


# --------------------------------------------------------------------------- html


def test_html_is_self_contained_and_its_anchors_resolve(tmp_path: Path) -> None:
    model = build(analyse(SLOT_POOL))
    page = audit_html.render(model, SourceView(SLOT_POOL), "<fixture & co>")
    assert "&lt;fixture &amp; co&gt;" in page
    for attribute, value in re.findall(r'\b(src|href)="([^"]*)"', page):
        assert value.startswith("#"), (attribute, value)
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    for target in re.findall(r'href="#([^"]+)"', page):
        assert target in ids, target
    assert "<svg" in page and 'class="matrix"' in page and "<script" not in page
    linked = audit_html.render(
        model, SourceView(SLOT_POOL, "https://example.invalid/blob/v1/{path}#L{line}"), "x"
    )
    assert re.search(r'href="https://example\.invalid/blob/v1/engine/[a-z_]+\.py#L\d+"', linked)


def test_html_shows_source_lines_with_numbers() -> None:
    model = build(analyse(SLOT_POOL))
    page = audit_html.render(model, SourceView(SLOT_POOL), "x")
    path = next(p for p in model.paths if p.verdict == "unbounded")
    exit_ = path.exit
    source = (SLOT_POOL / exit_.path).read_text().splitlines()[exit_.line - 1]
    assert f'<span class=hit><i class="ln">{exit_.line}</i>' in page
    assert source.strip().split("(")[0] in page


# --------------------------------------------------------------------------- graph


def test_the_graph_layout_places_every_node_without_overlap(audit_0_28: Audit) -> None:
    graph = audit_0_28.graph
    assert graph.nodes and graph.edges
    lay = graph_layout.layout(graph)
    assert set(lay.boxes) == {n.id for n in graph.nodes}
    boxes = sorted(lay.boxes.values(), key=lambda b: (b.x, b.y))
    for a, b in zip(boxes, boxes[1:], strict=False):
        if a.x == b.x:
            assert b.y >= a.y + a.height
    assert all(b.x >= 0 and b.x + b.width <= lay.width for b in boxes)
    assert graph_layout.layout(graph) == lay
    roles = {r for n in graph.nodes for r in n.roles}
    assert {"writes", "launches", "waits", "root"} <= roles
    # The root that writes the encoder-only mode's buffers leads to a node that writes.
    assert any("writes" in n.roles for n in graph.nodes)


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "json"])
def test_graph_export_names_every_node_and_edge(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--no-cache", "-q", "--graph", fmt, str(SLOT_POOL)]) == 0
    out = capsys.readouterr().out
    graph = build(analyse(SLOT_POOL)).graph
    assert out == graph_export.render(graph, fmt)
    if fmt == "json":
        data = json.loads(out)
        ids = {n["id"] for n in data["nodes"]}
        assert all(e["from"] in ids and e["to"] in ids for e in data["edges"])
        assert len(data["nodes"]) == len(graph.nodes)
    elif fmt == "dot":
        assert out.startswith("digraph") and out.rstrip().endswith("}")
        for edge in graph.edges:
            assert f"{edge.source} -> {edge.target}" in out
    else:
        assert out.startswith("flowchart LR")
        assert all(f"{e.source} --> {e.target}" in out for e in graph.edges)


def test_graph_and_format_together_are_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["audit", "--no-cache", "--graph", "dot", "--format", "json", str(SLOT_POOL)]) == 2
    assert "--graph" in capsys.readouterr().err


def test_audit_into_a_missing_directory_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no" / "audit.html"
    assert (
        main(["audit", "--no-cache", "-q", "--format", "html", "-o", str(target), str(SLOT_POOL)])
        == 2
    )
    err = capsys.readouterr().err
    assert "syncscan: error:" in err and "Traceback" not in err


# --------------------------------------------------------------------------- progress


def test_phase_lines_name_each_phase_once_not_each_file() -> None:
    buffer = io.StringIO()
    lines = progress.PhaseLines(Console(file=buffer, width=200), after=0)
    for n in range(1, 50):
        lines("files", n, 100)
    lines("resolve", 0, 0)
    lines("walk root 1 of 2", 0, 2)
    lines("walk root 2 of 2", 1, 2)
    lines.close()
    out = buffer.getvalue().splitlines()
    assert len(out) == 3
    assert out[1].endswith("walk root 1 of 2 (49 of 100 files summarised)")


def test_phase_lines_stay_silent_for_a_quick_run() -> None:
    buffer = io.StringIO()
    lines = progress.PhaseLines(Console(file=buffer), after=60)
    lines("resolve", 0, 0)
    lines("walk root 1 of 1", 0, 1)
    lines.close()
    assert buffer.getvalue() == ""


def test_progress_bar_counts_files_and_roots() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=160, color_system=None)
    bar = progress.PhaseBar(console, transient=False)
    bar.start()
    bar("files", 7, 40)
    bar("walk root 2 of 3", 1, 3)
    bar.close()
    text = buffer.getvalue()
    assert "7/40 files summarised" in text and "walk root 2 of 3" in text and "1/3" in text


def test_the_cli_prints_phases_on_a_pipe_and_nothing_under_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "LINES_AFTER", 0)
    monkeypatch.setattr(progress.PhaseLines.__init__, "__defaults__", (0,))
    assert main(["audit", "--no-cache", str(SLOT_POOL)]) == 0
    err = capsys.readouterr().err
    assert "syncscan:" in err and "walk root 1 of 1" in err and "files summarised" in err
    assert main(["audit", "--no-cache", "-q", str(SLOT_POOL)]) == 0
    assert capsys.readouterr().err == ""
