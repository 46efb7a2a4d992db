"""Read one file and summarise it, through the cache; failures become SummaryError."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from syncscan.index.build import SummaryError, summarise
from syncscan.index.cache import SummaryCache
from syncscan.index.summary import ModuleSummary
from syncscan.project import Project


def read_source(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SummaryError(f"cannot read: {exc.strerror or exc}") from exc


def decode(source: bytes) -> str:
    """Source text in its declared encoding (PEP 263), UTF-8 by default."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, LookupError) as exc:
        raise SummaryError(f"cannot decode: {exc}") from exc
    except UnicodeDecodeError as exc:
        name = "UTF-8" if exc.encoding.replace("-", "").lower() == "utf8" else exc.encoding
        raise SummaryError(f"not {name}: {exc.reason} at byte {exc.start}") from exc


def summarise_bytes(source: bytes, module: str, path: Path) -> ModuleSummary:
    return summarise(decode(source), module, str(path), path.name == "__init__.py")


class FileSummariser:
    """project, module, path -> ModuleSummary, reusing cached summaries."""

    prefetched = 0  # summaries worker processes made ahead of need (see prefetch)

    def __init__(self, cache: SummaryCache | None = None) -> None:
        self.cache = cache
        self.parsed = 0
        self.files_read = 0

    def __call__(self, project: Project, module: str, path: Path) -> ModuleSummary:
        source = read_source(path)
        self.files_read += 1
        key = None
        if self.cache is not None:
            key = self.cache.key(source, module, path.name == "__init__.py")
            cached = self.cache.get(key, str(path))
            if cached is not None:
                return cached
        summary = summarise_bytes(source, module, path)
        self.parsed += 1
        if self.cache is not None and key is not None:
            self.cache.put(key, summary)
        return summary
