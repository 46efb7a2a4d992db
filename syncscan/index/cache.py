"""The cache directory: one JSON summary per (file content, syncscan version,
format), plus small documents (file facts, the last run's record).

JSON, never pickle: a cache lives in a project directory and must not be
able to execute code when read. Everything is written atomically (temp file +
rename); a corrupt, truncated, foreign or too deeply nested entry is ignored
and rebuilt, and anything that is not a regular file is never read (a FIFO
in place of an entry would block the run).
Findings are never cached per file: a run's findings are reused only while
every file they were computed from is unchanged or summarises identically (see
`syncscan.reuse`), so a change in a callee changes its caller's result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncscan import __version__
from syncscan.filesystem import read_regular_file, read_regular_text

if TYPE_CHECKING:
    from syncscan.index.summary import ModuleSummary, Rebuild

# Bump when ModuleSummary or the IR changes shape or meaning (13: a function's
# body is its IR's JSON text, summary.py `TREES`).
SUMMARY_FORMAT = 13
# The header field naming a framed document's field written as lines (`write_framed`).
_LINES = "framed_lines"

_DOCUMENTS = json.JSONEncoder(separators=(",", ":"))

_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by syncscan.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class SummaryCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0
        self.rejected = 0
        self._ready = False

    def key(self, source: bytes, module: str, is_package: bool) -> str:
        digest = hashlib.sha256()
        for part in (__version__, str(SUMMARY_FORMAT), module, str(is_package)):
            digest.update(part.encode())
            digest.update(b"\0")
        digest.update(source)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / "summaries" / key[:2] / f"{key}.json"

    def has(self, key: str) -> bool:
        return self._path(key).is_file()

    def get(self, key: str, path: str, rebuild: Rebuild | None = None) -> ModuleSummary | None:
        """The summary stored under `key`, or None (missing, damaged or foreign).

        Function bodies are decoded on first use; `rebuild` makes one found
        damaged then from the source, instead of failing the run.
        """
        # The IR loads with the first summary: a check whose findings are
        # reused reads documents only (start-up time).
        from syncscan.index.summary import DECODE_ERRORS, summary_from_data

        entry = self._path(key)
        try:
            data = json.loads(read_regular_text(entry))
            if not isinstance(data, dict) or data.get("key") != key:
                raise ValueError("foreign entry")
            summary = summary_from_data(data["summary"], rebuild)
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, *DECODE_ERRORS):
            self.rejected += 1
            return None
        self.hits += 1
        # The same bytes may live at another path (a copied tree): say where.
        return summary if summary.path == path else _relocated(summary, path)

    def put(self, key: str, summary: ModuleSummary) -> None:
        from syncscan.index import reads
        from syncscan.index.summary import TREES, summary_to_data

        try:
            self._prepare()
            entry = self._path(key)
            entry.parent.mkdir(parents=True, exist_ok=True)
            with reads.paused():  # encoding reads every field: not the analysis
                data = summary_to_data(summary)
            _write_atomic(entry, {"key": key, "summary": data}, TREES)
        except (OSError, RecursionError):
            pass  # a read-only or full cache, or a freak nesting depth, never fails the run

    def read_document(self, name: str) -> Any:
        """A whole-cache JSON document, or None when missing or damaged."""
        try:
            return json.loads(read_regular_text(self.directory / name))
        except (OSError, ValueError, RecursionError):  # deep nesting: json recurses per level
            return None

    def write_document(self, name: str, data: Any) -> None:
        try:
            self._prepare()
            _write_atomic(self.directory / name, data)
        except OSError:
            pass  # a read-only cache costs speed, never results

    def discard(self, name: str) -> None:
        """Remove a whole-cache file, where there is one."""
        with contextlib.suppress(OSError):  # a read-only cache costs speed, never results
            (self.directory / name).unlink(missing_ok=True)

    def read_framed(self, name: str) -> tuple[Any, bytes]:
        """A document written by `write_framed`: its JSON data (its field of
        lines restored) and the bytes after it; (None, b"") when missing or
        damaged."""
        try:
            content = read_regular_file(self.directory / name)
            end = content.index(b"\n")
            data = json.loads(content[:end])
            start = end + 1
            lines = data.pop(_LINES, None) if isinstance(data, dict) else None
            if lines is not None:
                field, count, size = lines
                text = content[start : start + size].decode("utf-8")
                data[field] = text.split("\n") if count else []
                if len(data[field]) != count or content[start + size : start + size + 1] != b"\n":
                    return None, b""
                start += size + 1
            return data, content[start:]
        except (OSError, ValueError, RecursionError, TypeError, AttributeError):
            return None, b""

    def write_framed(
        self, name: str, data: Any, blob: bytes, lines_field: str | None = None
    ) -> None:
        """A JSON document followed by a blob of bytes it names by offset (a
        kept store's texts, index/store_texts.py): one file, written at once.
        `lines_field`: a field of `data` holding a long list of strings (a
        store's item table, 30,000 names with NULs that JSON escapes), written
        as lines between the two: read back with a split, not a parse."""
        try:
            self._prepare()
            middle: list[bytes] = []
            lines = data.get(lines_field) if lines_field is not None else None
            encoded = _as_lines(lines)
            if encoded is not None:
                data = {k: v for k, v in data.items() if k != lines_field}
                data[_LINES] = [lines_field, len(lines), len(encoded)]
                middle = [encoded, b"\n"]
            header = json.dumps(data, separators=(",", ":")).encode("utf-8")
            _write_bytes_atomic(self.directory / name, b"".join((header, b"\n", *middle, blob)))
        except OSError:
            pass  # a read-only cache costs speed, never results

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(_TAG, encoding="utf-8")
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by syncscan\n*\n", encoding="utf-8")
        self._ready = True


def _write_atomic(target: Path, data: Any, encoder: json.JSONEncoder = _DOCUMENTS) -> None:
    _write_bytes_atomic(target, encoder.encode(data).encode("utf-8"))


def _as_lines(value: Any) -> bytes | None:
    """`value`, a list of strings none of which holds a line break, as their
    lines in UTF-8; None where it is not such a list (it stays in the JSON)."""
    if not isinstance(value, list) or not all(type(x) is str for x in value):
        return None
    text = "\n".join(value)
    if text.count("\n") != max(0, len(value) - 1):
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON escapes it
        return None


def _write_bytes_atomic(target: Path, payload: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


def _relocated(summary: ModuleSummary, path: str) -> ModuleSummary:
    from syncscan.index.summary import at_path

    return at_path(summary, path)
