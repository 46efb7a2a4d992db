"""The summary cache changes speed, never results; bad entries are rebuilt."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FIXTURES, SHAPES, damage, signature

from syncscan import apart
from syncscan.index import load
from syncscan.index.cache import SummaryCache
from syncscan.index.facts import FactsTable
from syncscan.index.load import FileSummariser
from syncscan.index.prefetch import PrefetchingSummariser
from syncscan.index.summary import FunctionSummary, ModuleSummary
from syncscan.resolve.program import Program
from syncscan.runner import RunResult, load_project, run


@pytest.mark.parametrize("project", SHAPES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_findings_identical_cold_warm_and_uncached(project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = run(project, cache_dir=cache)
    warm = run(project, cache_dir=cache)
    uncached = run(project, use_cache=False)
    assert cold.stats["parsed"] > 0 and cold.stats["cache_hits"] == 0
    assert warm.stats["parsed"] == 0 and warm.stats["cache_hits"] == cold.stats["parsed"]
    assert signature(cold) == signature(warm) == signature(uncached)


@pytest.mark.parametrize("project", SHAPES[:4], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_prefetching_workers_change_nothing_but_speed(project: Path, tmp_path: Path) -> None:
    """Workers hand summaries over through the cache: each module is parsed once."""
    prefetched = run(project, cache_dir=tmp_path / "cache", jobs=2)
    assert prefetched.stats["parsed"] == prefetched.stats["summarised"]
    assert prefetched.stats["cache_hits"] == 0
    assert signature(prefetched) == signature(run(project, use_cache=False))


def test_a_summariser_told_to_stop_prefetching_summarises_in_place() -> None:
    """Once walk workers have forked, the summariser guesses no more modules
    ahead of need: every module it is asked for is still summarised, none by
    a worker."""
    project, _ = load_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy")
    summariser = PrefetchingSummariser(None, jobs=2)
    serial = FileSummariser(None)
    try:
        summariser.stop_prefetching()
        for module, path in sorted(project.modules.items()):
            assert summariser(project, module, path) == serial(project, module, path)
    finally:
        summariser.close()
    assert summariser.prefetched == 0
    assert summariser.parsed == len(project.modules)


def test_held_back_summaries_are_written_when_the_walk_workers_start(tmp_path: Path) -> None:
    """The summaries the program's loads parsed wait until its walk workers
    have forked (`Program.walkers_started`); the run's end writes the rest."""
    project, _ = load_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy")
    cache = SummaryCache(tmp_path / "cache")
    summariser = FileSummariser(cache, defer_writes=True)
    program = Program(project, summariser, FactsTable(project.modules, None))
    *first, last = sorted(project.modules)
    for module in first:
        program.summary(module)
    assert not list((tmp_path / "cache").glob("summaries/*/*.json"))  # held back
    program.walkers_started()
    assert len(list((tmp_path / "cache").glob("summaries/*/*.json"))) == len(first)
    program.summary(last)  # a load after the fork: held back until the end
    assert len(list((tmp_path / "cache").glob("summaries/*/*.json"))) == len(first)
    summariser.close()
    entries = list((tmp_path / "cache").glob("summaries/*/*.json"))
    assert len(entries) == summariser.parsed == len(project.modules)


def test_summaries_held_back_are_written_apart_where_the_walks_run_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One step class walked in the main process leaves a core idle: what the
    loads held back is written by a forked process (`Program.walking_here`),
    which `close` waits for; a module asked again is the summary at hand."""
    monkeypatch.setattr(load, "WRITE_APART_FROM", 1)
    project, _ = load_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy")
    cache = SummaryCache(tmp_path / "cache")
    put = cache.put

    def noted_put(key: str, summary: ModuleSummary) -> None:
        (tmp_path / f"put-by-{os.getpid()}").touch()
        put(key, summary)

    monkeypatch.setattr(cache, "put", noted_put)
    summariser = FileSummariser(cache, defer_writes=True)
    program = Program(project, summariser, FactsTable(project.modules, None))
    for module in sorted(project.modules):
        program.summary(module)
    program.walking_here()
    writers = [writer._process.pid for writer in summariser._writers]
    assert writers and os.getpid() not in writers  # forked
    again = summariser(project, *sorted(project.modules.items())[0])
    assert again is program.summary(sorted(project.modules)[0])
    summariser.close()
    assert not summariser._writers
    assert [p.name for p in tmp_path.glob("put-by-*")] == [f"put-by-{writers[0]}"]
    entries = list((tmp_path / "cache").glob("summaries/*/*.json"))
    assert len(entries) == summariser.parsed == len(project.modules)


def test_work_apart_that_fails_is_made_here(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A forked process that raises sends nothing back: the value is made in
    this process (the same value), and the failure is said."""
    parent = os.getpid()

    def made() -> int:
        (tmp_path / f"tried-by-{os.getpid()}").touch()
        if os.getpid() != parent:
            raise OSError("disk full")
        return 7

    assert apart.Forked(made).result() == 7
    assert len(list(tmp_path.glob("tried-by-*"))) == 2  # there, then here
    assert "a worker stopped (OSError('disk full'))" in capfd.readouterr().err


def test_facts_read_apart_are_the_facts_read_here(tmp_path: Path) -> None:
    """A cold run reads and scans every file in a forked process (`refresh_apart`):
    the same facts, files read and unreadable files, and the facts are stored; a
    run that finds them stored reads them here, as before."""
    project, _ = load_project(FIXTURES / "slot_pool_mode_without_wait" / "buggy")
    files = {**project.modules, "gone": tmp_path / "gone.py"}  # one unreadable
    here = FactsTable(files, None)
    apart = FactsTable(files, SummaryCache(tmp_path / "cache"))
    apart.refresh_apart()
    assert apart._apart is not None and apart._apart._process.pid != os.getpid()
    assert apart.all() == here.all()
    assert (apart.files_read, apart.unreadable) == (here.files_read, here.unreadable)
    assert apart.files_read == len(project.modules) and "gone.py" in str(apart.unreadable)
    again = FactsTable(files, SummaryCache(tmp_path / "cache"))
    again.refresh_apart()  # stored: nothing to fork for
    assert again._apart is None and again.all() == here.all()


def test_cache_directory_is_tagged_and_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(FIXTURES / "slot_pool_mode_without_wait" / "buggy", cache_dir=cache)
    assert (
        (cache / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert (cache / ".gitignore").read_text().strip().endswith("*")
    entries = list(cache.glob("summaries/*/*.json"))
    assert entries and all(json.loads(e.read_text())["key"] == e.stem for e in entries)


@pytest.mark.parametrize("how", ["truncate", "garbage", "[]", "null", "foreign"])
def test_damaged_entries_are_ignored_and_rebuilt(tmp_path: Path, how: str) -> None:
    project = FIXTURES / "slot_pool_mode_without_wait" / "buggy"
    cache = tmp_path / "cache"
    expected = signature(run(project, cache_dir=cache))
    entries = sorted(cache.glob("summaries/*/*.json"))
    for entry in entries:
        damage(entry, how, lambda data: data.update(key="0" * 64))
    damaged = run(project, cache_dir=cache)
    assert signature(damaged) == expected
    assert damaged.stats["parsed"] == len(entries)
    assert all(json.loads(e.read_text())["key"] == e.stem for e in entries)


def test_a_changed_callee_changes_its_callers_result(tmp_path: Path) -> None:
    """Findings are recomputed from summaries: fixing the pool file clears the finding."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "slot_pool_mode_without_wait" / "buggy", project)
    cache = tmp_path / "cache"
    assert len(run(project, cache_dir=cache).findings) == 1
    pool = project / "engine" / "pool.py"
    pool.write_text(pool.read_text().replace("pin_memory=True", "pin_memory=False"))
    after = run(project, cache_dir=cache)
    assert after.findings == []
    assert after.stats["parsed"] == 1
    # With the findings' record: the edited file is parsed once, though the
    # record asks for its summary (what changed) before the analysis does.
    run(project, cache_dir=cache, reuse_findings=True)
    text = pool.read_text().replace("pin_memory=False", "pin_memory=True")
    pool.write_text(text + "# a text the cache has not seen\n")
    edited = run(project, cache_dir=cache, reuse_findings=True)
    assert edited.stats["findings_reused"] == 0 and len(edited.findings) == 1
    assert edited.stats["parsed"] == 1


def test_vllm_0_28_warm_and_uncached_match(result_0_28: RunResult, vllm_0_28: Path) -> None:
    warm = run(vllm_0_28)
    assert warm.stats["parsed"] == 0
    assert signature(warm) == signature(result_0_28)
    uncached = run(vllm_0_28, use_cache=False)
    assert signature(uncached) == signature(result_0_28)


def test_vllm_0_28_cold_run_with_a_worker_matches(
    result_0_28: RunResult, vllm_0_28: Path, tmp_path: Path
) -> None:
    """On a real tree the worker summarises imports ahead of need; nothing else changes."""
    cold = run(vllm_0_28, cache_dir=tmp_path / "cache", jobs=2)
    assert cold.stats["prefetched"] > 0
    assert cold.stats["parsed"] == cold.stats["summarised"]
    assert signature(cold) == signature(result_0_28)


def _functions(summary: ModuleSummary) -> Iterator[FunctionSummary]:
    """Every function of a module summary: top level, methods, nested defs."""
    stack = [*summary.functions.values()]
    stack += [m for c in summary.classes.values() for m in c.methods.values()]
    while stack:
        function = stack.pop()
        stack.extend(function.nested)
        yield function


def test_a_cached_summary_keeps_the_facts_read_from_every_method() -> None:
    """The `self` assignments and attribute names of each function are stored
    beside its body, so the type oracle and the walk read every method of a
    class without decoding its body: they equal the body's own, and a damaged
    stored form falls back to the body."""
    from syncscan.index.load import summarise_bytes
    from syncscan.index.summary import summary_from_data, summary_to_data

    assigned = escaping = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        built = summarise_bytes(path.read_bytes(), "engine.m", Path("engine/m.py"))
        data = json.loads(json.dumps(summary_to_data(built)))
        cached = summary_from_data(data)
        for old, new in zip(_functions(built), _functions(cached), strict=True):
            assert new.self_assignments == old.self_assignments
            assert new.self_attributes == old.self_attributes
            # Read without decoding the body, the parameters or the decorators.
            assert not {"_body", "_params", "_decorators"} & new.__dict__.keys()
            assigned += bool(old.self_assignments)
            escaping += old.self_attributes is None
        damaged = json.loads(json.dumps(data))
        methods = [m for c in damaged["classes"].values() for m in c[4].values()]
        for function in [*damaged["functions"].values(), *methods]:
            function[-2:] = [[[1, 2, 3]], [7]]  # neither a name nor a list of names
        again = summary_from_data(damaged)
        for old, new in zip(_functions(built), _functions(again), strict=True):
            assert new.self_assignments == old.self_assignments
            assert new.self_attributes == old.self_attributes
    assert assigned and escaping  # the fixtures hold both kinds
