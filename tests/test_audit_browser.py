"""The HTML audit of vLLM 0.28.0 in a real browser (headless Chromium, Debian's).

It must load from disk with no console error and no request beyond itself,
and show the matrix (with the encoder-only cell marked) and the call graph.
The browser is part of the test environment (`.ci/run` installs it): a
missing browser fails the test, it is not skipped.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from syncscan.cli import main

SCRIPT = Path(__file__).parent.parent / "scripts" / "render_html.py"
_spec = importlib.util.spec_from_file_location("render_html", SCRIPT)
assert _spec is not None and _spec.loader is not None
render_html = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_html)

CHECKS = {
    "svg": "svg#call-graph",
    "graph_nodes": "svg#call-graph rect",
    "matrix": "table#matrix-table",
    "marked": "table#matrix-table td.v0",
    "encoder_only": "table#matrix-table td.v0[title$='× encoder-only']",
}


def test_the_vllm_0_28_audit_renders_without_errors(
    vllm_0_28: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = tmp_path / "audit.html"
    assert main(["audit", "-q", "--format", "html", "-o", str(html), str(vllm_0_28)]) == 0
    png = tmp_path / "audit.png"
    report = render_html.render(html, png, CHECKS)
    print(json.dumps(report, indent=2))  # the size and timings, for the log
    assert report["errors"] == []
    assert report["requests"] == []
    counts = report["counts"]
    assert counts["svg"] == 1 and counts["matrix"] == 1
    assert counts["graph_nodes"] > 20
    assert counts["encoder_only"] == 1 and counts["marked"] >= 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_the_checker_sees_a_broken_page(tmp_path: Path) -> None:
    """The test above can fail: an uncaught exception and a missing file are seen."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="missing.png">'
        "<script>throw new Error('boom')</script></body></html>",
        encoding="utf-8",
    )
    report = render_html.render(page, None, {"svg": "svg"})
    assert any("boom" in e for e in report["errors"]), report
    assert report["requests"] and report["counts"] == {"svg": 0}
