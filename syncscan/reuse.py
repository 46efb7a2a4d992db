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
findings are recomputed from summaries; the record then says which of the
items read changed (moves included), and what was kept beside it — the call
graph crawl's visits, the callee walks, the class analyses (flow/kept.py, each
in a document of its own) — that read none of them is taken instead of made
again. A store a run never opened is left as it was kept, the record naming it
with what changed since (`save`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncscan import __version__
from syncscan.apart import Forked
from syncscan.filesystem import read_regular_file
from syncscan.findings import Diagnostic, Finding, finding_from_data, finding_to_data
from syncscan.index.cache import SUMMARY_FORMAT, SummaryCache
from syncscan.index.facts import FactsTable
from syncscan.index.moves import LineMap, composed, shifts
from syncscan.packs import PackSet
from syncscan.project import Project
from syncscan.relocate import NO_MOVES, Moves, relocated

if TYPE_CHECKING:
    from syncscan.flow.kept import Kept
    from syncscan.index.moves import Changes
    from syncscan.index.store_files import Whole
    from syncscan.index.store_texts import Texts
    from syncscan.index.summary import ModuleSummary
    from syncscan.resolve.program import Program

# 8: the callee walks kept beside it; 9: crawl visits and class analyses too;
# 10: their documents framed (cache.py write_framed)
RECORD_FORMAT = 10
_DOCUMENT = "record.json"
_READS = "reads.json"
_WALKS = "walks.json"
_CRAWL = "crawl.json"
_UNITS = "units.json"
_POINTS = "quiescence.json"
_ROOTS = "roots.json"
# Walks made by a run from which it writes their store in a forked process
# (a cold run on vLLM 0.33.0 makes 7,400; an edit to its step root, none).
WALKS_APART_FROM = 1000


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


@dataclass(frozen=True)
class KeptSince:
    """What a run kept beside its record (flow/kept.py) as a later record sees
    it: the token it was kept with, the items it read that changed since
    (None: the change is not known, and nothing kept holds), and of those the
    ones that only moved, with where their lines went (relocate.py)."""

    token: str | None = None
    changed: frozenset[str] | None = None
    moves: Moves = NO_MOVES

    def entry(self) -> dict[str, Any]:
        """The record's fields for it (`_since_kept` reads them back)."""
        known = self.changed is not None
        return {
            "kept": self.token if known else None,
            "kept_stale": sorted(self.changed or ()),
            "kept_moved": sorted(self.moves.items),
            "kept_lines": {
                path: _runs(lines)
                for path, lines in sorted(self.moves.lines.items())
                if shifts(lines)
            },
        }


@dataclass(frozen=True)
class Recorded:
    """What the last run's record says of this one: its result where every
    input is unchanged; else what it kept beside it (flow/kept.py: crawl
    visits, callee walks, class analyses) as this run sees it: its token and,
    where the change is known item by item, the items it read that differ now
    (a move included, carried where it is the only change: relocate.py). What
    is kept holds while its items are unchanged."""

    analysed: Analysed | None = None
    kept: KeptSince = KeptSince()
    # Each summarised module's content digest and summary key, as of now where
    # the digest is (what `save` writes again without reading the file).
    summarised: dict[str, list[str | None]] = field(default_factory=dict)
    # The digest of the items read that this run found in their document (what
    # `save` need not write again where its run read the same).
    reads: str | None = None
    # The stores the recorded run left as an earlier run kept them (no walk
    # was looked up in them: `save`), by name, as this run sees them.
    left: dict[str, KeptSince] = field(default_factory=dict)
    # The recorded run's inputs besides its modules (`summarised`), where this
    # run read them: its items (their digest is `reads`) and, where it read
    # every file's class headers, the method names its subclass queries asked
    # with the headers' digest now (what `save` writes again where this run
    # asked the same: 12 ms on vLLM 0.33.0). A store is left only by a run
    # whose inputs hold all of them (`_covers`).
    read_before: frozenset[str] | None = None
    headers: tuple[tuple[str, ...], str] | None = None


def load(
    cache: SummaryCache,
    key: str,
    facts: FactsTable,
    resummarise: Resummarise,
    project: Project,
) -> Recorded:
    """The recorded result, if its inputs are all unchanged; else what changed.

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
        return Recorded()
    root = str(project.root)
    try:
        summarised = data["summarised"]
        refreshed = {}
        moves: dict[str, dict[int, int]] = {}
        changed: set[str] | None = set()
        moved: set[str] = set()  # of `changed`, what only moved
        relocations: dict[str, dict[int, int]] = {}  # where their lines went, per file
        reusable = True
        read: dict[str, Any] | None = None
        held = None  # the items' digest, where their document holds them
        for module, (digest, summary_key) in summarised.items():
            found = facts.get(module)
            current = found.digest if found is not None else None
            if current == digest:
                continue
            before = after = None
            if current is not None and summary_key is not None:
                before = cache.get(summary_key, str(facts.path_of(module)))
                after = resummarise(module)
            if before is None or after is None:
                return Recorded()  # a file gone, unreadable or unparsable: nothing holds
            if before != after:
                if read is None:
                    read = _items_read(cache, data["reads"])
                    held = data["reads"] if read else None
                found = _changes(before, after, read.get(module))
                lines = found.lines if found is not None and found.whole else None
                relpath = project.relpath(facts.path_of(module))
                if changed is not None and (lines is None or shifts(lines)):
                    if found is None:
                        changed = None
                    else:
                        changed |= {f"{module}\0{item}" for item in found.changed}
                        moved |= {f"{module}\0{item}" for item in found.moved}
                        relocations[relpath] = found.lines
                if lines is None:
                    reusable = False
                else:
                    moves[relpath] = lines
            refreshed[module] = [current, _summary_key(cache, facts, module)]
        headers = None  # (the methods asked, the headers' digest now), where the record has one
        if data["headers"] is not None:
            headers = (tuple(data["asked"]), _headers_digest(facts, data["asked"]))
            if data["headers"] != headers[1]:
                return Recorded()
        since = partial(_kept_since, changed=changed, moved=moved, lines=relocations, root=root)
        kept = since(data)
        left = {name: since(entry) for name, entry in _left_entries(data).items()}
        result = relocated(data["result"], moves, root) if reusable else None
        known = {**summarised, **refreshed}
        if result is None:
            return Recorded(
                None,
                kept,
                known,
                held,
                left=left,
                read_before=_flattened(read) if read else None,
                headers=headers,
            )
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
        return Recorded()  # damaged or foreign: analyse afresh
    if refreshed:
        if result is not data["result"]:
            result = {**result, "findings": [finding_to_data(f) for f in analysed.findings]}
        # What is kept with the record holds the lines it was kept with: the
        # next run counts what changed since as changed for it, and carries
        # what only moved (relocate.py) by the maps from then to now.
        cache.write_document(
            _DOCUMENT,
            {
                **data,
                "summarised": known,
                "result": result,
                **kept.entry(),
                "kept_left": _left_fields(left),
            },
        )
    return Recorded(analysed, summarised=known)


def _kept_since(
    data: dict[str, Any],
    changed: set[str] | None,
    moved: set[str],
    lines: dict[str, LineMap],
    root: str,
) -> KeptSince:
    """What the record's `data` (or a store's entry among those left) says is
    kept, with this run's change (`changed`, of it `moved`, its `lines`) added
    to what changed between it and the record."""
    since = _since_kept(data)
    if changed is None or since is None:
        return KeptSince(data.get("kept"))
    stale, stale_moved, stale_lines = since
    real = (stale - stale_moved) | (changed - moved)
    only_moved = (stale_moved | moved) - real
    carried = Moves(composed(stale_lines, lines), root, frozenset(only_moved))
    return KeptSince(data.get("kept"), frozenset(real | only_moved), carried)


def _left_entries(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The record's stores left as an earlier run kept them, by name (a damaged
    entry is dropped: its store's files name another token, so it is not read)."""
    left = data.get("kept_left", {})
    if not isinstance(left, dict):
        return {}
    return {
        name: entry
        for name, entry in left.items()
        if isinstance(entry, dict) and isinstance(entry.get("kept"), str)
    }


def _left_fields(left: dict[str, KeptSince]) -> dict[str, dict[str, Any]]:
    """The record's field for the stores left (those whose change is known)."""
    return {
        name: since.entry() for name, since in sorted(left.items()) if since.changed is not None
    }


def _since_kept(data: dict[str, Any]) -> tuple[set[str], set[str], dict[str, LineMap]] | None:
    """What changed since what is kept beside the record was kept (a refreshed
    record's moves): the items, those of them that only moved, and where
    their lines went; None where the record's lists are damaged."""
    stale, moved = data.get("kept_stale", []), data.get("kept_moved", [])
    lines = data.get("kept_lines", {})
    if not (_names(stale) and _names(moved) and isinstance(lines, dict)):
        return None
    try:
        maps = {path: _from_runs(runs) for path, runs in lines.items()}
    except (TypeError, ValueError):
        return None
    return set(stale), set(moved) & set(stale), maps


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) for i in value)


def _runs(lines: LineMap) -> list[list[int]]:
    """A line map as runs of consecutive lines that moved alike:
    [first old line, count, offset]."""
    runs: list[list[int]] = []
    for old in sorted(lines):
        offset = lines[old] - old
        last = runs[-1] if runs else None
        if last is not None and last[0] + last[1] == old and last[2] == offset:
            last[1] += 1
        else:
            runs.append([old, 1, offset])
    return runs


def _from_runs(runs: Any) -> LineMap:
    """The line map `_runs` wrote (ValueError where it is not such a list)."""
    if not isinstance(runs, list):
        raise ValueError("not a list of runs")
    lines: LineMap = {}
    for first, count, offset in runs:
        if not all(type(n) is int for n in (first, count, offset)) or count > 100_000:
            raise ValueError("not a run")
        lines.update((old, old + offset) for old in range(first, first + count))
    return lines


def _changes(before: ModuleSummary, after: ModuleSummary, items: Any) -> Changes | None:
    """What changed of the module's read items, and whether they all agree up
    to a move (`Changes.whole`: then its lines are where each line the run
    read went); None where the record does not say what was read (or its
    list is damaged: it may all have been read)."""
    from syncscan.index.moves import changes

    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return None
    return changes(before, after, items)


def _items_read(cache: SummaryCache, digest: str) -> dict[str, Any]:
    """The items the recorded run read, by module, from their own document
    (read only when a file changed: most warm runs need none of it); empty
    where it is missing or belongs to another record."""
    data = cache.read_document(_READS)
    if not isinstance(data, dict) or data.get("digest") != digest:
        return {}
    read = data.get("read")
    return read if isinstance(read, dict) else {}


def kept(cache: SummaryCache, recorded: Recorded) -> Kept:
    """What the record keeps beside it (flow/kept.py): of each store, what
    none of whose items changed (nothing where the change is not known)."""
    from syncscan.flow.kept import Kept
    from syncscan.flow.quiescence import KEPT_CLASSES, POINTS_FORMAT
    from syncscan.flow.stored import StoredWalks
    from syncscan.flow.stored_results import StoredResults
    from syncscan.flow.stored_roots import StoredRoots
    from syncscan.flow.stored_units import StoredUnits
    from syncscan.index import store_files
    from syncscan.index.store_texts import Texts
    from syncscan.resolve.stored_crawl import StoredCrawl

    wholes: dict[str, Whole] = {}  # what each store's delta is written against
    since = {
        name: recorded.left.get(name, recorded.kept)
        for name in (_CRAWL, _WALKS, _UNITS, _POINTS, _ROOTS)
    }

    def document(name: str) -> tuple[Any, Texts]:
        """A store kept beside the record, where the record names it by its
        token, and the texts held after it (index/store_texts.py)."""
        token, changed = since[name].token, since[name].changed
        if token is None or changed is None:
            return None, Texts()
        found, blob, whole = store_files.read(cache, name, token)
        if whole is not None:
            wholes[name] = whole
        return found, Texts(blob)

    def walks(config: str) -> StoredWalks:
        kept = since[_WALKS]  # read where a walk is first looked up
        return StoredWalks(partial(document, _WALKS), kept.changed, config, kept.moves)

    def units(config: str) -> StoredUnits:
        found, texts = document(_UNITS)
        return StoredUnits(found, since[_UNITS].changed, config, texts, since[_UNITS].moves)

    def roots(config: str) -> StoredRoots:
        found, texts = document(_ROOTS)
        return StoredRoots(found, since[_ROOTS].changed, config, texts, since[_ROOTS].moves)

    def points(config: str) -> StoredResults:
        found, texts = document(_POINTS)
        kept = since[_POINTS]
        return StoredResults(
            found, kept.changed, config, texts, kept.moves, KEPT_CLASSES, POINTS_FORMAT
        )

    crawl, _ = document(_CRAWL)
    crawl_store = StoredCrawl(crawl, since[_CRAWL].changed)
    return Kept(crawl_store, walks, units, points, roots, wholes, since=since)


def save(
    cache: SummaryCache,
    key: str,
    facts: FactsTable,
    program: Program,
    analysed: Analysed,
    read: set[str],
    kept: Kept | None = None,
    recorded: Recorded | None = None,
    apart: bool = False,
) -> None:
    """Record the result with its inputs; `read`: the summary items the analysis
    read (reads.py), by which a changed file that left them alone keeps it;
    `kept`: the crawl's visits, callee walks, class analyses and points to keep for
    the next run (flow/kept.py); `recorded`: what the last record said of this
    run: its modules' digests and summary keys (kept where the digest is the
    file's now instead of reading it again), the digest of the items read their
    document holds (not written again), its inputs (`_covers`); `apart`: a
    core is free to write the walks on (apart.py).

    A store this run never opened (no walk was looked up in it: an edit whose
    root resumed from its kept walk) is left as it is, where this run's inputs
    hold every input of the record it was kept with: the record names it with
    its token and what changed since (`kept_left`), as a record whose findings
    were reused names what is kept (`load`). Its rows read only inputs of that
    record, so the next run sees every change that touches one."""
    from syncscan.index import reads

    recorded = recorded or Recorded()
    known = recorded.summarised
    summarised: dict[str, list[str | None]] = {}
    for module in program.requested():
        found = facts.get(module)
        if found is None:
            summarised[module] = [None, None]
        elif (was := known.get(module)) and was[0] == found.digest and isinstance(was[1], str):
            summarised[module] = was
        else:
            summarised[module] = [found.digest, _summary_key(cache, facts, module)]
    asked = sorted(reads.methods_asked(read))
    # The items go first, to a document of their own: a record never names
    # items it was not written with (their digest ties the two). Grouped by
    # module only where written: an edit mostly reads what its record read
    # (vLLM 0.33.0: 35,527 items, grouped and dumped 37 ms, digested 17).
    # The same items as the record's: their digest is the record's (sorting
    # and hashing 35,000 items cost 17 ms, comparing them with the record's 2).
    same = recorded.read_before is not None and recorded.read_before == read
    reads_digest = recorded.reads if same and recorded.reads else _items_digest(read)
    if reads_digest != recorded.reads:
        cache.write_document(_READS, {"digest": reads_digest, "read": reads.by_module(read)})
    token = None
    left: dict[str, KeptSince] = {}
    if kept is not None:  # like the items: a token ties them to this record
        token = os.urandom(16).hex()
        stores = (
            (_CRAWL, kept.crawl),
            (_WALKS, kept.walks),
            (_UNITS, kept.units),
            (_POINTS, kept.points),
            (_ROOTS, kept.roots),
        )
        writers: list[Forked[None]] = []
        covered: bool | None = None  # computed where a store was not opened
        for name, store in stores:
            if store is None:
                continue
            # Only the walks are read lazily (`StoredWalks.opened`): the others
            # are read whole when made for their walker.
            since = kept.since.get(name)
            unopened = getattr(store, "opened", True) is False
            if unopened and since and since.token is not None and since.changed is not None:
                if covered is None:
                    covered = _covers(recorded, read, program)
                if covered:
                    left[name] = since
                    continue
            write = partial(_write_store, cache, name, store, token, kept.wholes.get(name))
            # The walks, the largest by far (vLLM 0.33.0: 0.43 s of the record's
            # 0.79 s), are written beside the rest where a core is free for them
            # and the run made many: after an edit that took them all, a fork
            # and the copies it costs both processes came to more than the
            # write (1.089 s against 1.048, 14 alternating pairs).
            if apart and name == _WALKS and store.made >= WALKS_APART_FROM:
                writers.append(Forked(write))
            else:
                write()
        for writer in writers:  # all of them before the record that names their token
            writer.result()
    cache.write_document(
        _DOCUMENT,
        {
            "key": key,
            "summarised": summarised,
            "headers": _headers_now(facts, asked, recorded) if program.headers_used else None,
            "asked": asked,
            "reads": reads_digest,
            **KeptSince(token, frozenset()).entry(),  # kept now: nothing changed since
            "kept_left": _left_fields(left),
            "result": {
                "findings": [finding_to_data(f) for f in analysed.findings],
                "diagnostics": [dataclasses.asdict(d) for d in analysed.diagnostics],
                "notes": analysed.notes,
                "stats": analysed.stats,
                "lines": analysed.function_lines,
            },
        },
    )


def _covers(recorded: Recorded, read: set[str], program: Program) -> bool:
    """Whether this run's inputs hold the recorded run's: its modules, its
    items, and every file's class headers where it read them. A store left by
    a run that covers its record is covered by the next record too."""
    before = recorded.read_before
    if before is None or (recorded.headers is not None and not program.headers_used):
        return False
    return set(recorded.summarised) <= set(program.requested()) and before <= read


def _flattened(by_module: dict[str, Any]) -> frozenset[str] | None:
    """The items `reads.by_module` grouped, whole again (None where the
    document is damaged)."""
    items: list[str] = []
    try:
        for module, rest in by_module.items():
            if not isinstance(rest, list):
                return None
            prefix = module + "\0"
            items += [prefix + item for item in rest]
    except TypeError:  # not a name
        return None
    return frozenset(items)


def _write_store(
    cache: SummaryCache, name: str, store: Any, token: str, whole: Whole | None
) -> None:
    """One kept store's document and texts, against the file as read (`whole`)."""
    from syncscan.index import store_files

    document, texts = store.document()
    store_files.write(cache, name, document, texts, token, whole, store.TEXT_FIELD)


def _summary_key(cache: SummaryCache, facts: FactsTable, module: str) -> str | None:
    """The summary cache's key for the module's current file."""
    path = facts.path_of(module)
    try:
        source = read_regular_file(path)
    except OSError:
        return None
    return cache.key(source, module, path.name == "__init__.py")


def _headers_now(facts: FactsTable, methods: list[str], recorded: Recorded) -> str:
    """`_headers_digest`, as the record's check computed it where it asked
    the same methods (the facts are this run's throughout)."""
    if recorded.headers is not None and recorded.headers[0] == tuple(methods):
        return recorded.headers[1]
    return _headers_digest(facts, methods)


def _headers_digest(facts: FactsTable, methods: list[str]) -> str:
    """What subclass queries could see: every file's class headers, and which
    of the method names they asked each such file defines (a function added
    under another name leaves it as it was)."""
    asked = set(methods)
    return _digest(
        [
            [module, found.classes, sorted(found.defs.intersection(asked))]
            for module, found in sorted(facts.all().items())
            if found.classes
        ]
    )


def _items_digest(items: set[str]) -> str:
    """The items read, in an order no set's iteration decides (no item holds
    a line break: a module, a kind and a qualified name)."""
    return hashlib.sha256("\n".join(sorted(items)).encode("utf-8")).hexdigest()


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
