"""File facts: what a cheap text scan learns from every file, kept between runs.

Some questions need every file of the tree, not only the step path: which
classes might derive from a step root (class headers), which modules define a
method of a given name, which files hold suppression comments. A regex scan
answers them without parsing. The answers, with each file's content digest,
are stored in the cache keyed by the file's stat: size, modification time,
status-change time and inode (an edit that keeps the size and restores the
mtime still moves the ctime; a file replaced by rename changes its inode), so
a warm run reads only the files that changed. A stat recorded within a second
or two of the file's last change cannot prove a later same-tick edit absent
(git's "racy" entries): such a row is marked, and the next run reads the file
again instead of trusting the stat.

The scan is linear in the file's size on any input: a run reads every file.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncscan import __version__
from syncscan.apart import Forked, can_fork
from syncscan.filesystem import NotRegularFileError, read_regular_file, stat_is_regular
from syncscan.index.cache import SummaryCache
from syncscan.index.comments import Suppression
from syncscan.index.comments import suppressions as scan_suppressions

FACTS_FORMAT = 2
_DOCUMENT = "facts.json"
# Patterns that start with a literal let the regex engine skip ahead (15x faster
# than anchoring at each line start); `_at_line_start` then keeps real headers.
_DEF = re.compile(r"def[ \t]+(\w+)")
# The bases stop at the first parenthesis of either kind: with `[^)]*` an
# unclosed `class A(` scanned to the end of the file, once per occurrence.
_CLASS_HEADER = re.compile(r"class[ \t]+(\w+)[ \t]*\(([^()]*)\)[ \t]*:")
# How long after a file's change its stat stays ambiguous (coarse timestamps:
# one second on many file systems, two on FAT).
_RACY_NS = 2_000_000_000
_STAT_FIELDS = 5  # size, mtime, ctime, inode, racy


@dataclass(frozen=True)
class FileFacts:
    digest: str  # of the file's bytes: the identity a summary was built from
    classes: tuple[tuple[str, str], ...]  # (class name, text of its bases)
    defs: frozenset[str]  # names of functions defined anywhere in the file (if it has classes)
    suppressions: tuple[Suppression, ...]


def digest_of(source: bytes) -> str:
    return hashlib.blake2b(source, digest_size=16).hexdigest()


def scan(source: bytes) -> FileFacts:
    text = source.decode("utf-8", errors="replace")
    classes: tuple[tuple[str, str], ...] = ()
    defs: frozenset[str] = frozenset()
    if "class " in text:
        classes = tuple(
            (m.group(1), m.group(2))
            for m in _at_line_starts(text, _CLASS_HEADER.finditer(text), "")
        )
        if classes:
            defs = frozenset(
                m.group(1) for m in _at_line_starts(text, _DEF.finditer(text), "async")
            )
    suppressions = scan_suppressions(text)
    return FileFacts(digest_of(source), classes, defs, suppressions)


def _at_line_starts(text: str, matches, keyword: str):
    """The matches preceded on their line only by indentation (and `keyword`).

    Matches come in order, so the search for line starts moves forward only,
    and only the blanks just before a match are looked at: linear on any
    input (a line of 100 KB holding thousands of matches included).
    """
    line_start = 0
    searched = 0
    for match in matches:
        start = match.start()
        newline = text.rfind("\n", searched, start)
        if newline >= 0:
            line_start = newline + 1
        searched = start
        at = _skip_blanks_back(text, start, line_start)
        before = at - len(keyword)
        if keyword and before >= line_start and text.startswith(keyword, before):
            at = _skip_blanks_back(text, before, line_start)
        if at == line_start:
            yield match


def _skip_blanks_back(text: str, at: int, line_start: int) -> int:
    while at > line_start and text[at - 1] in " \t\f\r\v":
        at -= 1
    return at


class FactsTable:
    """Facts of every file of a project, refreshed from disk where a file changed."""

    def __init__(self, files: dict[str, Path], cache: SummaryCache | None) -> None:
        self._files = files  # module name -> path
        self._cache = cache
        self._facts: dict[str, FileFacts] | None = None
        self.files_read = 0
        self.unreadable: dict[str, str] = {}  # path -> why the scan could not read it
        self._apart: Forked[tuple[dict[str, FileFacts], int, dict[str, str]]] | None = None

    def refresh_apart(self) -> None:
        """Where no facts are stored (a cold run reads every file: vLLM 0.33.0's
        3,231 in 0.3 s, SGLang 0.5.23's 4,716 in 0.7 s), read and scan them in a
        forked process while this one goes on: a run parses its step roots'
        modules before its first subclass query asks for them (`all`)."""
        stored = self._cache is not None and (self._cache.directory / _DOCUMENT).exists()
        if stored or self._facts is not None or self._apart is not None or not can_fork():
            return
        self._apart = Forked(self._refreshed)

    def _refreshed(self) -> tuple[dict[str, FileFacts], int, dict[str, str]]:
        """The facts (stored in the cache too), the files read, those unreadable."""
        return self._refresh(), self.files_read, self.unreadable

    def all(self) -> dict[str, FileFacts]:
        """Module name -> facts, for every readable file."""
        if self._facts is None and self._apart is not None:
            self._facts, self.files_read, self.unreadable = self._apart.result()
            self._apart = None
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
        # Whether a row was read again that the next run trusts (one not racy):
        # only then is the document written again. A file edited right before
        # the run (a pre-commit hook) is racy: the next run reads it again
        # whether or not its row is stored, and writing the whole document for
        # it (vLLM 0.33.0: 1.3 MB) cost each such run about 11 ms.
        settled = False
        now = time.time_ns()
        for module, path in sorted(self._files.items()):
            key = str(path)
            try:
                st = path.stat()
                if not stat_is_regular(st):
                    raise NotRegularFileError(path, st.st_mode)
            except OSError as exc:
                self.unreadable[key] = exc.strerror or str(exc)
                continue
            row = stored.get(key)
            stamp = _stamp(st)
            known = _unchanged(row, stamp)
            if known is not None and row is not None:
                facts[module] = known
                rows[key] = row
                continue
            try:
                source = read_regular_file(path)
            except OSError as exc:
                self.unreadable[key] = exc.strerror or str(exc)
                continue
            self.files_read += 1
            found = scan(source)
            facts[module] = found
            racy = now - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS
            rows[key] = [*stamp, racy, *_to_row(found)]
            settled = settled or not racy
        if settled or len(rows) != len(stored):
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


def _stamp(st: os.stat_result) -> list[int]:
    """What the stored facts of a file are keyed on (see the module docstring)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _unchanged(row: Any, stamp: list[int]) -> FileFacts | None:
    """The stored facts, if the file's stat still matches and was not racy (else None)."""
    width = _STAT_FIELDS + 4
    if not isinstance(row, list) or len(row) != width or row[: _STAT_FIELDS - 1] != stamp:
        return None
    if row[_STAT_FIELDS - 1] is not False:
        return None  # recorded too close to the file's change: read it again
    try:
        return _from_row(row[_STAT_FIELDS:])
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
    """A stored row back as facts; TypeError or ValueError when it is misshapen.

    Only the shape is checked (a warm run reads every row): damage that keeps
    the JSON valid and the shape right is as undetectable as a forged digest.
    """
    digest, classes, defs, suppressions = row
    if type(digest) is not str:
        raise TypeError("a damaged facts row")
    return FileFacts(
        digest,
        tuple((name, bases) for name, bases in classes),
        frozenset(defs),
        tuple(
            Suppression(line, tuple(codes), reason, problem)
            for line, codes, reason, problem in suppressions
        ),
    )
