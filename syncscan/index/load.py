"""Read one file and summarise it, through the cache; failures become SummaryError."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from pathlib import Path

from syncscan.apart import Forked
from syncscan.filesystem import FileTooLargeError, read_regular_file
from syncscan.index.build import summarise
from syncscan.index.cache import SummaryCache
from syncscan.index.summary import (
    FunctionSummary,
    ModuleSummary,
    Rebuild,
    SummaryError,
    find_function,
    recorded,
)
from syncscan.project import Project

# Summaries held back that `flush` writes in a forked process, where asked to:
# fewer are written faster here than a fork costs (tens of milliseconds).
WRITE_APART_FROM = 50


def read_source(path: Path, max_bytes: int | None = None) -> bytes:
    """The file's bytes; a FIFO, a device or a file over `max_bytes` is a SummaryError."""
    try:
        return read_regular_file(path, max_bytes)
    except FileTooLargeError as exc:
        raise SummaryError(
            f"skipped: too large to parse: {exc.size:,} bytes "
            f"(limit {exc.limit:,}: 'tool.syncscan.max_file_size')"
        ) from exc
    except OSError as exc:
        raise SummaryError(f"cannot read: {exc.strerror or exc}") from exc


def decode(source: bytes) -> str:
    """Source text in its declared encoding (PEP 263), UTF-8 by default."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if exc.encoding.replace("-", "").lower() == "utf8" else exc.encoding
        raise SummaryError(f"not {name}: {exc.reason} at byte {exc.start}") from exc
    except (SyntaxError, LookupError, ValueError) as exc:
        # An unknown or unusable PEP 263 cookie (`undefined`, `punycode`, `rot13`)
        # raises whatever its codec raises: UnicodeError, LookupError, ValueError.
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise SummaryError(f"cannot decode: {reason}") from exc


def summarise_bytes(source: bytes, module: str, path: Path) -> ModuleSummary:
    return summarise(decode(source), module, str(path), path.name == "__init__.py")


class FileSummariser:
    """project, module, path -> ModuleSummary, reusing cached summaries."""

    prefetched = 0  # summaries worker processes made ahead of need (see prefetch)

    def __init__(self, cache: SummaryCache | None = None, defer_writes: bool = False) -> None:
        self.cache = cache
        self.parsed = 0
        self.files_read = 0
        # The modules parsed (not found in the cache), in a walk worker (parallel.py).
        self.parsed_modules: list[str] | None = None
        # With `defer_writes`, summaries parsed here and not yet written to the
        # cache: a cold run writes them once its walks have the cores (`flush`),
        # not between the modules the call graph waits for, or at its end (`close`);
        # by key, so a module asked again (an edited file: once to see what
        # changed, once by the analysis) is not parsed again.
        self._unwritten: dict[str, ModuleSummary] | None = {} if defer_writes else None
        self._written: dict[str, ModuleSummary] = {}  # those `flush` wrote, by key
        self._writers: list[Forked[None]] = []  # processes writing them (`flush` apart)

    def without_workers(self) -> FileSummariser:
        """This summariser (it makes no worker processes), naming what it parses
        from now on: in a forked walk worker, whose parent counts them. It
        writes what it parses at once (the parent reads it from the cache) and
        leaves what the parent held back to the parent."""
        self.parsed_modules = []
        self._unwritten = None
        return self

    def flush(self, apart: bool = False) -> None:
        """Write the summaries held back (`defer_writes`). `apart`: where they
        are many, in a forked process, on a core this one leaves idle (a cold
        run's one step class walked here: SGLang's scheduler); `close` waits
        for it."""
        if self.cache is None or not self._unwritten:
            return
        held, self._unwritten = self._unwritten, {}
        self._written.update(held)  # asked again, still at hand
        cache = self.cache

        def write() -> None:
            for key, summary in held.items():
                cache.put(key, summary)

        if apart and len(held) >= WRITE_APART_FROM:
            self._writers.append(Forked(write))
        else:
            write()

    def close(self) -> None:
        """The run is over: nothing stays held back, nor is still being written."""
        self.flush()
        while self._writers:
            self._writers.pop().result()

    def parsed_elsewhere(self, load: Callable[[], ModuleSummary]) -> ModuleSummary:
        """`load()` of a summary another process of this run parsed and cached:
        counted as parsed, not as a cache hit."""
        hits = self.cache.hits if self.cache is not None else 0
        summary = load()
        if self.cache is not None and self.cache.hits > hits:
            self.cache.hits = hits
            self.parsed += 1
        return summary

    def __call__(self, project: Project, module: str, path: Path) -> ModuleSummary:
        source = read_source(path, project.config.max_file_size)
        self.files_read += 1
        key = None
        if self.cache is not None:
            key = self.cache.key(source, module, path.name == "__init__.py")
            held = self._unwritten.get(key) if self._unwritten is not None else None
            if held is not None or (held := self._written.get(key)) is not None:
                return held
            cached = self.cache.get(key, str(path), self._rebuilder(project, module, path))
            if cached is not None:
                return cached
        summary = recorded(summarise_bytes(source, module, path))
        self.parsed += 1
        if self.parsed_modules is not None:
            self.parsed_modules.append(module)
        if self.cache is not None and key is not None:
            if self._unwritten is not None:
                self._unwritten[key] = summary
            else:
                self.cache.put(key, summary)
        return summary

    def _rebuilder(self, project: Project, module: str, path: Path) -> Rebuild:
        """Rebuilds a function found damaged in the cache: the module is
        summarised afresh from its file, which also replaces the entry."""

        def rebuild(qualname: str) -> FunctionSummary:
            source = read_source(path, project.config.max_file_size)
            summary = summarise_bytes(source, module, path)
            if self.cache is not None:
                self.cache.put(self.cache.key(source, module, path.name == "__init__.py"), summary)
            function = find_function(summary, qualname)
            if function is None:  # the file changed under the run
                raise SummaryError(f"{path}: {qualname} is gone; run syncscan again")
            return function

        return rebuild
