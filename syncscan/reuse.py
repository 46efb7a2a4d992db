"""Reusing the last run's findings while nothing they were computed from changed.

A run reads a small part of the tree, and it knows which part: the modules it
summarised, and (when a subclass query ran) the class headers of every file.
The record stores the findings with those inputs: the content digest of each
summarised file, a digest of every file's class headers and of which files
define the method names subclass queries asked, the items of each summary the
analysis read (reads.py, in a document of their own), and a key over
everything else a result depends on (syncscan's version, the packs, the
configuration, the selected rules, the module table). The next run reuses the
findings only if every one of those inputs is unchanged, checked through the
file facts (a stat per file, a read only where the stat differs); a changed
file whose new summary agrees with the recorded one on every item read, up to
lines that moved (moves.py), counts as unchanged, its findings carried to the
new lines (relocate.py). Any change the analysis reads (a callee, a base
class, a re-export, a statement it walks) discards the record and the
findings are recomputed from summaries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncscan import __version__
from syncscan.filesystem import read_regular_file
from syncscan.findings import Diagnostic, Finding, finding_from_data, finding_to_data
from syncscan.index.cache import SUMMARY_FORMAT, SummaryCache
from syncscan.index.facts import FactsTable
from syncscan.packs import PackSet
from syncscan.project import Project
from syncscan.relocate import relocated

if TYPE_CHECKING:
    from syncscan.index.summary import ModuleSummary
    from syncscan.resolve.program import Program

RECORD_FORMAT = 7  # 7: the items read in a document of their own
_DOCUMENT = "record.json"
_READS = "reads.json"


@dataclass
class Analysed:
    """What an analysis produced, before suppressions and filters, as plain data."""

    findings: list[Finding]
    diagnostics: list[Diagnostic]
    notes: list[str]
    stats: dict[str, int | float]
    function_lines: dict[str, tuple[str, int, int]]  # function -> (file, header, def line)
    reused: bool = False


def inputs_key(project: Project, packs: PackSet, rule_codes: list[str], named: bool = False) -> str:
    """Everything a result depends on besides the files' contents (`named`: the
    codes were selected by name, which switches opt-in rules on)."""
    data = [
        __version__,
        SUMMARY_FORMAT,
        RECORD_FORMAT,
        _engine_files(),
        str(project.root),
        _stable(project.config),
        _stable(packs),
        sorted(rule_codes),
        named,
        sorted((module, str(path)) for module, path in project.modules.items()),
    ]
    return _digest(data)


def _engine_files() -> list[list[Any]]:
    """syncscan's own modules and packs, by size and mtime: an edited engine
    (a development install) must not reuse findings its old code computed."""
    import syncscan
    import syncscan.rules

    rows = []
    for package in (syncscan, syncscan.rules):
        base = Path(package.__file__).parent
        for path in sorted(base.rglob("*")):
            if path.suffix in (".py", ".toml"):
                stat = path.stat()
                rows.append([str(path), stat.st_size, stat.st_mtime_ns])
    return rows


Resummarise = Callable[[str], "ModuleSummary | None"]


def load(
    cache: SummaryCache,
    key: str,
    facts: FactsTable,
    resummarise: Resummarise,
    project: Project,
) -> Analysed | None:
    """The recorded result, if its inputs are all unchanged; else None.

    A summarised file whose bytes changed still counts as unchanged when its
    new summary agrees with the one the record was computed from on every item
    the analysis read of it (reads.py: a comment appended, an edit inside a
    function the analysis never read), up to lines that moved (moves.py: a
    line added above what it read, a comment line inside it); the result's
    lines are then carried to where they went (relocate.py). This early
    cutoff re-summarises only the changed files; the record is then updated
    to them.
    """
    data = cache.read_document(_DOCUMENT)
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    try:
        summarised = data["summarised"]
        refreshed = {}
        moves: dict[str, dict[int, int]] = {}
        read: dict[str, Any] | None = None
        for module, (digest, summary_key) in summarised.items():
            found = facts.get(module)
            current = found.digest if found is not None else None
            if current == digest:
                continue
            if current is None or summary_key is None:
                return None
            before = cache.get(summary_key, str(facts.path_of(module)))
            after = resummarise(module)
            if before is None or after is None:
                return None
            if before != after:
                if read is None:
                    read = _items_read(cache, data["reads"])
                lines = _line_map(before, after, read.get(module))
                if lines is None:
                    return None
                moves[project.relpath(facts.path_of(module))] = lines
            refreshed[module] = [current, _summary_key(cache, facts, module)]
        if data["headers"] is not None and data["headers"] != _headers_digest(facts, data["asked"]):
            return None
        result = relocated(data["result"], moves, str(project.root))
        if result is None:
            return None
        analysed = Analysed(
            findings=sorted(
                (finding_from_data(f) for f in result["findings"]), key=Finding.sort_key
            ),
            diagnostics=[Diagnostic(**d) for d in result["diagnostics"]],
            notes=list(result["notes"]),
            stats=dict(result["stats"]),
            function_lines={k: (p, first, last) for k, (p, first, last) in result["lines"].items()},
            reused=True,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # damaged or foreign: analyse afresh
    if refreshed:
        if result is not data["result"]:
            result = {**result, "findings": [finding_to_data(f) for f in analysed.findings]}
        cache.write_document(
            _DOCUMENT, {**data, "summarised": {**summarised, **refreshed}, "result": result}
        )
    return analysed


def _items_read(cache: SummaryCache, digest: str) -> dict[str, Any]:
    """The items the recorded run read, by module, from their own document
    (read only when a file changed: most warm runs need none of it); empty
    where it is missing or belongs to another record."""
    data = cache.read_document(_READS)
    if not isinstance(data, dict) or data.get("digest") != digest:
        return {}
    read = data.get("read")
    return read if isinstance(read, dict) else {}


def _line_map(before: ModuleSummary, after: ModuleSummary, items: Any) -> dict[int, int] | None:
    """Where each line of the module the run read went; None where the two
    summaries differ on an item read (or the record does not say what was read)."""
    from syncscan.index.moves import line_map

    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return None  # nothing recorded for it, or damaged: it may all have been read
    return line_map(before, after, items)


def save(
    cache: SummaryCache,
    key: str,
    facts: FactsTable,
    program: Program,
    analysed: Analysed,
    read: set[str],
) -> None:
    """Record the result with its inputs; `read`: the summary items the analysis
    read (reads.py), by which a changed file that left them alone keeps it."""
    from syncscan.index import reads

    by_module = reads.by_module(read)
    summarised = {}
    for module in program.requested():
        found = facts.get(module)
        if found is None:
            summarised[module] = [None, None]
        else:
            summarised[module] = [found.digest, _summary_key(cache, facts, module)]
    asked = _methods_asked(by_module)
    # The items go first, to a document of their own: a record never names
    # items it was not written with (their digest ties the two).
    reads_digest = _digest(by_module)
    cache.write_document(_READS, {"digest": reads_digest, "read": by_module})
    cache.write_document(
        _DOCUMENT,
        {
            "key": key,
            "summarised": summarised,
            "headers": _headers_digest(facts, asked) if program.headers_used else None,
            "asked": asked,
            "reads": reads_digest,
            "result": {
                "findings": [finding_to_data(f) for f in analysed.findings],
                "diagnostics": [dataclasses.asdict(d) for d in analysed.diagnostics],
                "notes": analysed.notes,
                "stats": analysed.stats,
                "lines": analysed.function_lines,
            },
        },
    )


def _summary_key(cache: SummaryCache, facts: FactsTable, module: str) -> str | None:
    """The summary cache's key for the module's current file."""
    path = facts.path_of(module)
    try:
        source = read_regular_file(path)
    except OSError:
        return None
    return cache.key(source, module, path.name == "__init__.py")


def _headers_digest(facts: FactsTable, methods: list[str]) -> str:
    """What subclass queries could see: every file's class headers, and which
    of the method names they asked each such file defines (a function added
    under another name leaves it as it was)."""
    return _digest(
        [
            [module, found.classes, [m for m in methods if m in found.defs]]
            for module, found in sorted(facts.all().items())
            if found.classes
        ]
    )


def _methods_asked(read: dict[str, list[str]]) -> list[str]:
    """The method names subclass queries asked (reads.py's "defs" items)."""
    from syncscan.index import reads

    return sorted(reads.methods_asked(read))


def _digest(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=list)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stable(value: Any) -> Any:
    """A JSON form that does not depend on set or dict iteration order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _stable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return sorted([str(k), _stable(v)] for k, v in value.items())
    if isinstance(value, set | frozenset):
        return sorted(_stable(v) for v in value)
    if isinstance(value, tuple | list):
        return [_stable(v) for v in value]
    return value
