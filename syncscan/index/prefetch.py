"""Parallel cold indexing: summarise the modules a loaded module imports, ahead of need.

The analysis loads modules on demand, one at a time. While it works on one,
worker processes summarise the project modules that module imports (the next
ones it is likely to ask for). When the analysis asks for a module a worker
has not started, the request is cancelled and the module is summarised in
place, so a wrong guess never makes a run wait. Workers write the cache, and
the main process reads their summaries from it; without a cache they cross the
process boundary as plain data (`summary_to_data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from syncscan.filesystem import read_regular_file
from syncscan.index.cache import SummaryCache
from syncscan.index.load import FileSummariser, read_source, summarise_bytes
from syncscan.index.summary import (
    ModuleSummary,
    SummaryError,
    imports_unnoted,
    summary_from_data,
    summary_to_data,
)
from syncscan.project import Project

if TYPE_CHECKING:  # the pool is imported where it starts: a warm run never starts it
    from concurrent.futures import Future, ProcessPoolExecutor


def _summarise_in_worker(
    module: str, path: str, cache_dir: str | None, max_bytes: int
) -> dict | tuple[str, int] | None:
    """Runs in a worker: a summary as data, an error (message, line), or None (redo it
    in place)."""
    try:
        source = read_source(Path(path), max_bytes)
        summary = summarise_bytes(source, module, Path(path))
    except SummaryError as exc:
        return (str(exc), exc.line)
    if cache_dir is not None:
        # The main process reads it from the cache (json in C, bodies decoded on
        # use), which is cheaper than unpickling it in the pool's result thread.
        cache = SummaryCache(Path(cache_dir))
        cache.put(cache.key(source, module, path.endswith("__init__.py")), summary)
        return None
    try:
        return summary_to_data(summary)
    except RecursionError:
        return None  # too deep to send: the main process summarises it


class PrefetchingSummariser(FileSummariser):
    def __init__(self, cache: SummaryCache | None, jobs: int, defer_writes: bool = False) -> None:
        super().__init__(cache, defer_writes)
        self.workers = max(1, jobs - 1)
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[str, Future] = {}
        self._seen: set[str] = set()
        self.prefetched = 0
        self._stopped = False

    def __call__(self, project: Project, module: str, path: Path) -> ModuleSummary:
        self._seen.add(module)
        future = self._pending.pop(module, None)
        summary: ModuleSummary | None = None
        if future is not None and not future.cancel():
            outcome = future.result()
            if isinstance(outcome, tuple):
                raise SummaryError(*outcome)
            if outcome is not None:
                summary = summary_from_data(outcome)
                self.prefetched += 1
                self.parsed += 1  # parsed in a worker
            elif self.cache is not None:
                hits = self.cache.hits
                summary = super().__call__(project, module, path)  # the worker cached it
                if self.cache.hits > hits:  # parsed this run, in a worker: not a hit
                    self.cache.hits = hits
                    self.prefetched += 1
                    self.parsed += 1
        if summary is None:
            before = self.parsed
            summary = super().__call__(project, module, path)
            if self.parsed == before:
                return summary  # a cache hit: its imports are likely cached too
        self._prefetch_imports(project, summary)
        return summary

    def without_workers(self) -> FileSummariser:
        """The same cache without prefetching: for a forked process, where this
        one's pool and its threads do not exist."""
        return FileSummariser(self.cache).without_workers()

    def stop_prefetching(self) -> None:
        """Summarise nothing more ahead of need: the queued guesses are dropped
        (a module asked for later is summarised in place). Walk workers have
        taken every core, and a pool still parsing guesses would slow them all
        (vLLM 0.33.0 cold: 212 imports still queued when the walks began)."""
        self._stopped = True
        for future in self._pending.values():
            future.cancel()

    def _prefetch_imports(self, project: Project, summary: ModuleSummary) -> None:
        if self._stopped:
            return
        for binding in imports_unnoted(summary):
            module = _project_module(project, binding.target)
            if module is None or module in self._seen:
                continue
            self._seen.add(module)
            path = project.modules[module]
            if self.cache is not None and self._cached(module, path, project.config.max_file_size):
                continue
            if self._pool is None:
                from concurrent.futures import ProcessPoolExecutor

                self._pool = ProcessPoolExecutor(max_workers=self.workers)
            cache_dir = str(self.cache.directory) if self.cache is not None else None
            self._pending[module] = self._pool.submit(
                _summarise_in_worker, module, str(path), cache_dir, project.config.max_file_size
            )

    def _cached(self, module: str, path: Path, max_bytes: int) -> bool:
        try:
            source = read_regular_file(path, max_bytes)
        except OSError:
            return False
        assert self.cache is not None
        key = self.cache.key(source, module, path.name == "__init__.py")
        return self.cache.has(key)

    def close(self) -> None:
        if self._pool is not None:
            for future in self._pending.values():
                future.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()


def _project_module(project: Project, target: str) -> str | None:
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        if name in project.modules:
            return name
    return None
