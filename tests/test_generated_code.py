"""Property tests: any module hypothesmith generates indexes, round-trips through
the cache, and checks to a result (exit 0 or 1), never a crash.

CI runs a small, derandomised number of examples (deterministic). The large
run is behind the `large` marker, with the count from the environment:

    SYNCSCAN_GENERATED_EXAMPLES=10000 python -m pytest -m large tests/test_generated_code.py

A large run has a per-example time limit (SYNCSCAN_EXAMPLE_LIMIT seconds, 60 by
default), watched by faulthandler's own thread so that even a loop inside C code
is caught: past the limit, every thread's stack is written to stalls.txt in
SYNCSCAN_GENERATED_WATCH/syncscan-generated (under the temporary directory by
default), again each limit after, and the module syncscan is working on is in
current.py there. The same timer runs while Hypothesis generates the next
module, so the stack says whether a stall is syncscan's (a frame in syncscan/)
or the generator's. An example on which syncscan took longer than the limit
fails the test. pytest prints nothing until a test ends, so progress.txt there
counts the examples; `--hypothesis-seed=N` makes a run repeatable.

Expect the 10,000-module test to take 40 to 60 minutes, nearly all of it
generating modules: hypothesmith targets larger modules (hypothesis.target), and
the hill-climbing passes that follow slow generation from ~300 modules a minute
to ~70 for stretches of several minutes (seed 10: about 7,000 to 8,800; seed 11:
4,000 to 6,700). py-spy there sampled only Hypothesis, lark and hypothesmith
frames (syncscan under 0.1%), and no example came near the limit. The passes are
kept: they make the largest modules of the run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import hypothesmith
import pytest
from helpers import BUGGY, copy_project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stall_watch import StallWatch

from syncscan.cli import main
from syncscan.index.facts import scan
from syncscan.index.load import summarise_bytes
from syncscan.index.summary import SummaryError, summary_from_data, summary_to_data

# hypothesmith compiles what it generates; CPython's warnings about it are noise here
# (an invalid escape such as "\K" in a generated string: a DeprecationWarning before
# Python 3.12, a SyntaxWarning from it on).
pytestmark = [
    pytest.mark.filterwarnings("ignore::SyntaxWarning"),
    pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning"),
]
LARGE = int(os.environ.get("SYNCSCAN_GENERATED_EXAMPLES", "10000"))
_COMMON = {
    "database": None,  # nothing written into the checkout
    "deadline": None,  # generation time varies on a shared machine
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
CI = settings(max_examples=60, derandomize=True, **_COMMON)
CI_CHECK = settings(max_examples=12, derandomize=True, **_COMMON)
BIG = settings(max_examples=LARGE, **_COMMON)
BIG_CHECK = settings(max_examples=max(1, LARGE // 10), **_COMMON)

MODULES = hypothesmith.from_grammar()
EXAMPLE_LIMIT = float(os.environ.get("SYNCSCAN_EXAMPLE_LIMIT", "60"))
WATCH_DIR = Path(os.environ.get("SYNCSCAN_GENERATED_WATCH", tempfile.gettempdir()))


@pytest.fixture(scope="module")
def watch() -> Iterator[StallWatch]:
    """One watch for the large run: module scope, since Hypothesis calls the body per example."""
    with StallWatch(WATCH_DIR / "syncscan-generated", EXAMPLE_LIMIT) as stall_watch:
        yield stall_watch


def index_round_trip(source: bytes) -> None:
    """What a run does with one file; SummaryError (a reported skip) is the only way out."""
    scan(source)
    try:
        summary = summarise_bytes(source, "engine.generated", Path("engine/generated.py"))
    except SummaryError:
        return
    text = json.dumps(summary_to_data(summary))
    assert summary_from_data(json.loads(text)) == summary


def check_on_step_path(workdir: Path, source: str) -> None:
    """A full check with the generated module imported and called by the step."""
    project = workdir / "p"
    if project.exists():
        shutil.rmtree(project)
    copy_project(BUGGY, project)
    (project / "engine" / "generated.py").write_text(source, encoding="utf-8")
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    text = text.replace("import torch\n", "import torch\nimport engine.generated\n", 1)
    anchor = "        n = len(batch.token_ids)\n"
    text = text.replace(anchor, anchor + "        engine.generated.main(n)\n", 1)
    runner.write_text(text, encoding="utf-8")
    code = main(["check", "--no-cache", "--jobs", "1", "--format", "json", str(project)])
    assert code in (0, 1)


@CI
@given(MODULES)
def test_generated_module_indexes(source: str) -> None:
    index_round_trip(source.encode("utf-8", "surrogatepass"))


@CI
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_index(source: bytes) -> None:
    index_round_trip(source)


@CI_CHECK
@given(MODULES)
def test_generated_module_checks(tmp_path_factory: pytest.TempPathFactory, source: str) -> None:
    check_on_step_path(tmp_path_factory.mktemp("gen"), source)


@pytest.mark.large
@BIG
@given(MODULES)
def test_generated_module_indexes_large(watch: StallWatch, source: str) -> None:
    with watch.example(source):
        index_round_trip(source.encode("utf-8", "surrogatepass"))


@pytest.mark.large
@BIG_CHECK
@given(MODULES)
def test_generated_module_checks_large(
    watch: StallWatch, tmp_path_factory: pytest.TempPathFactory, source: str
) -> None:
    with watch.example(source):
        check_on_step_path(tmp_path_factory.mktemp("gen"), source)
