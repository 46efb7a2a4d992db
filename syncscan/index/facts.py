"""File facts: what a cheap text scan learns from every file, kept between runs.

Some questions need every file of the tree, not only the step path: which
classes might derive from a step root (class headers), which modules define a
method of a given name, which files hold suppression comments. A regex scan
answers them without parsing. The answers, with each file's content digest,
are stored in the cache keyed by the file's size and modification time (as
ruff and mypy do), so a warm run reads only the files that changed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncscan import __version__
from syncscan.index.cache import SummaryCache
from syncscan.index.comments import suppressions as scan_suppressions
from syncscan.index.summary import Suppression

FACTS_FORMAT = 2
_DOCUMENT = "facts.json"
# Patterns that start with a literal let the regex engine skip ahead (15x faster
# than anchoring at each line start); `_at_line_start` then keeps real headers.
_DEF = re.compile(r"def[ \t]+(\w+)")
_CLASS_HEADER = re.compile(r"class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:")


@dataclass(frozen=True)
class FileFacts:
    digest: str  # of the file's bytes: the identity a summary was built from
    classes: tuple[tuple[str, str], ...]  # (class name, text of its bases)
    defs: frozenset[str]  # names of functions defined anywhere in the file (if it has classes)
    suppressions: tuple[Suppression, ...]

    def headers_key(self) -> tuple:
        """What subclass queries can see of this file."""
        return (self.classes, tuple(sorted(self.defs)))


def digest_of(source: bytes) -> str:
    return hashlib.blake2b(source, digest_size=16).hexdigest()


def scan(source: bytes) -> FileFacts:
    text = source.decode("utf-8", errors="replace")
    classes: tuple[tuple[str, str], ...] = ()
    defs: frozenset[str] = frozenset()
    if "class " in text:
        classes = tuple(
            (m.group(1), m.group(2))
            for m in _CLASS_HEADER.finditer(text)
            if _at_line_start(text, m.start(), ())
        )
        if classes:
            defs = frozenset(
                m.group(1)
                for m in _DEF.finditer(text)
                if _at_line_start(text, m.start(), ("async",))
            )
    suppressions = scan_suppressions(text)
    return FileFacts(digest_of(source), classes, defs, suppressions)


def _at_line_start(text: str, start: int, allowed: tuple[str, ...]) -> bool:
    """Only indentation (or one of `allowed` keywords) precedes `start` on its line."""
    before = text[text.rfind("\n", 0, start) + 1 : start].strip()
    return not before or before in allowed


class FactsTable:
    """Facts of every file of a project, refreshed from disk where a file changed."""

    def __init__(self, files: dict[str, Path], cache: SummaryCache | None) -> None:
        self._files = files  # module name -> path
        self._cache = cache
        self._facts: dict[str, FileFacts] | None = None
        self.files_read = 0
        self.unreadable: list[str] = []

    def all(self) -> dict[str, FileFacts]:
        """Module name -> facts, for every readable file."""
        if self._facts is None:
            self._facts = self._refresh()
        return self._facts

    def get(self, module: str) -> FileFacts | None:
        return self.all().get(module)

    def path_of(self, module: str) -> Path:
        return self._files[module]

    # ------------------------------------------------------------------ storage
    def _refresh(self) -> dict[str, FileFacts]:
        stored = self._load()
        facts: dict[str, FileFacts] = {}
        rows: dict[str, list[Any]] = {}
        changed = False
        for module, path in sorted(self._files.items()):
            try:
                st = path.stat()
            except OSError:
                self.unreadable.append(str(path))
                continue
            key = str(path)
            row = stored.get(key)
            known = _unchanged(row, st.st_mtime_ns, st.st_size)
            if known is not None and row is not None:
                facts[module] = known
                rows[key] = row
                continue
            try:
                source = path.read_bytes()
            except OSError:
                self.unreadable.append(str(path))
                continue
            self.files_read += 1
            found = scan(source)
            facts[module] = found
            rows[key] = [st.st_mtime_ns, st.st_size, *_to_row(found)]
            changed = True
        if changed or len(rows) != len(stored):
            self._save(rows)
        return facts

    def _load(self) -> dict[str, list[Any]]:
        data = self._cache.read_document(_DOCUMENT) if self._cache is not None else None
        if not isinstance(data, dict) or data.get("format") != [__version__, FACTS_FORMAT]:
            return {}  # missing, damaged or foreign: rebuilt
        rows = data.get("files")
        return rows if isinstance(rows, dict) else {}

    def _save(self, rows: dict[str, list[Any]]) -> None:
        if self._cache is not None:
            self._cache.write_document(
                _DOCUMENT, {"format": [__version__, FACTS_FORMAT], "files": rows}
            )


def _unchanged(row: Any, mtime_ns: int, size: int) -> FileFacts | None:
    """The stored facts, if the file's size and mtime still match (else None)."""
    if not isinstance(row, list) or len(row) != 6 or row[:2] != [mtime_ns, size]:
        return None
    try:
        return _from_row(row)
    except (ValueError, TypeError):
        return None  # a damaged row: the file is scanned again


def _to_row(facts: FileFacts) -> list[Any]:
    return [
        facts.digest,
        [list(c) for c in facts.classes],
        sorted(facts.defs),
        [[s.line, list(s.codes), s.reason, s.problem] for s in facts.suppressions],
    ]


def _from_row(row: list[Any]) -> FileFacts:
    _, _, digest, classes, defs, suppressions = row
    return FileFacts(
        digest,
        tuple((name, bases) for name, bases in classes),
        frozenset(defs),
        tuple(
            Suppression(line, tuple(codes), reason, problem)
            for line, codes, reason, problem in suppressions
        ),
    )
