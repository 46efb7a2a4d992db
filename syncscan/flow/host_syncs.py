"""Host syncs met on a step path, for SYNC005 (hidden-host-sync).

The walk already decides where the host waits on the device (walk.py: event
and stream `synchronize()`, full-device waits, `.item()`/`.tolist()`/`.cpu()`
of device data, blocking or pageable copies). This module only *remembers*
each such site with the call chain that reached it, so that a rule can ask
which of them sit outside a sanctioned region. It never changes a path state:
SYNC001-SYNC004 see exactly the waits they saw before.

Callee walks are memoised (memo.py), so the record follows the same scheme as
completions: a callee walk keeps the syncs it met relative to its own entry,
and every call that reuses the walk replays them under the caller's call site,
the caller's sanctioned region and the caller's modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from syncscan.findings import WitnessStep
from syncscan.packs import Vocabulary

Trace = tuple[WitnessStep, ...]
Mode = tuple[tuple[str, bool], ...]
Region = tuple[str, int]  # (relative path, line) of a `with <sanctioned>():`
RegionSite = tuple[str, int, bool]  # a sync met inside one: (path, line, certain)
WalkRegions = tuple[tuple[Region, frozenset[RegionSite]], ...]  # a walk's own regions
RegionsMark = tuple[int, int, dict[Region, frozenset[RegionSite]]]

# A pack row of `overlapping_step_modes` saying steps always overlap.
ALWAYS = "always"


@dataclass(frozen=True)
class HostSync:
    """One host sync reached from a walk's entry.

    `chain`: the call sites from the entry, then the sync itself. `mode`: what
    the path decided of the packs' overlap predicates. `sanctioned`: why the
    engine means it ("" when it does not say). `setup`: the setup-only
    function it was reached through ("" when none)."""

    chain: Trace
    mode: Mode = ()
    sanctioned: str = ""
    setup: str = ""
    # Data-dependent-shape ops and scalar conversions: syncs the walk does not
    # count as waits (SYNC001-SYNC004 never relied on them).
    wait: bool = True
    # False: a sync only if its tensor is on the device, which the walk cannot
    # tell (`.tolist()` of a tensor of unknown origin, `x[mask]`). It counts
    # towards a sanctioned region's recall (the engine says a sync is there)
    # and is never reported: outside a region it would flood the step path.
    certain: bool = True

    @property
    def site(self) -> WitnessStep:
        return self.chain[-1]

    def key(self) -> tuple:
        s = self.site
        return (
            s.path,
            s.line,
            s.column,
            self.mode,
            bool(self.sanctioned),
            bool(self.setup),
            self.certain,
        )


@dataclass
class Journal:
    """What a root's statements met, in order (root_record.py): the syncs the
    outermost walk was given, and each region entered (site None) and sync
    site met inside one."""

    syncs: list[HostSync] = field(default_factory=list)
    regions: list[tuple[Region, RegionSite | None]] = field(default_factory=list)


@dataclass
class _Level:
    """One walk under way: its syncs (first chain kept) and its open regions."""

    syncs: dict[tuple, HostSync] = field(default_factory=dict)
    sanctioned: list[str] = field(default_factory=list)
    # Whether the level keeps an uncertain sync already: one is enough to tell
    # a caller's region that a sync may be below, and keeping one per level
    # keeps what memoised walks carry small.
    uncertain: bool = False


class HostSyncs:
    """The walker's record of host syncs and sanctioned regions."""

    def __init__(self, vocabulary: Vocabulary, enabled: bool) -> None:
        self.enabled = enabled
        self.overlap = vocabulary.names("overlapping_step_modes") - {ALWAYS}
        self.contexts = vocabulary.names("sanctioned_sync_contexts")
        self.setup_only = vocabulary.names("setup_only_functions")
        # Comment markers (`gpu-sync-ok`) whose line holds a sync the code means.
        self.markers = vocabulary.names("sanctioned_sync_markers")
        self._levels: list[_Level] = [_Level()]
        # Every sanctioned region the walk entered, with the sync sites met inside
        # ((path, line, certain): `certain` False for a possible sync).
        self.regions: dict[Region, set[RegionSite]] = {}
        self._open: list[Region] = []
        # Every region opened, and every sync site met (for the regions open
        # then), in order: a callee walk keeps what it opened and met.
        self._opened: list[Region] = []
        self._sites: list[RegionSite] = []
        # While a root's statements are recorded (root_record.py): each sync the
        # outermost walk was given, and each region entered and site met inside
        # one, in order, so that another run can meet them again (`rejoin`).
        self._journal: Journal | None = None

    # ------------------------------------------------------------------ recording
    def met(
        self,
        step: WitnessStep,
        modes: list[Mode],
        marked: str = "",
        wait: bool = True,
        certain: bool = True,
    ) -> None:
        """A host sync at `step`, on paths in `modes` (their assumptions);
        `marked` says why when the line carries a sanctioned-sync marker."""
        if not self.enabled:
            return
        level = self._levels[-1]
        why = marked or (level.sanctioned[-1] if level.sanctioned else "")
        for assumptions in modes:
            sync = HostSync((step,), self._project(assumptions), why, wait=wait, certain=certain)
            self._add(sync)

    def marked(self, comments: tuple[tuple[int, str], ...], step: WitnessStep) -> str:
        """Why the sync at `step` is meant: a pack's marker comment on its line
        or alone on the line above it, else ''."""
        if not self.markers:
            return ""
        for number, marker in comments:
            if number in (step.line, step.line - 1) and marker in self.markers:
                return f"marked {marker} ({step.path}:{step.line})"
        return ""

    def _project(self, assumptions: Mode) -> Mode:
        return tuple((k, v) for k, v in assumptions if k in self.overlap)

    def _add(self, sync: HostSync) -> None:
        level = self._levels[-1]
        journal = self._journal
        if journal is not None and len(self._levels) == 1:
            journal.syncs.append(sync)
        if sync.certain:
            level.syncs.setdefault(sync.key(), sync)
        elif not level.uncertain:
            level.uncertain = True
            level.syncs.setdefault(sync.key(), sync)
        site = (sync.site.path, sync.site.line, sync.certain)
        self._sites.append(site)
        for region in self._open:
            self.regions[region].add(site)
            if journal is not None:
                journal.regions.append((region, site))

    # ------------------------------------------------------------------ regions
    def is_sanctioned(self, names: list[str]) -> bool:
        return self.enabled and any(n in self.contexts for n in names)

    def open(self, region: Region, why: str) -> None:
        self.regions.setdefault(region, set())
        if self._journal is not None:
            self._journal.regions.append((region, None))
        self._open.append(region)
        self._opened.append(region)
        self._levels[-1].sanctioned.append(why)

    def close(self) -> None:
        self._open.pop()
        self._levels[-1].sanctioned.pop()

    # ------------------------------------------------------------------ callee walks
    def enter_walk(self) -> None:
        """A callee walk begins: what it meets is kept relative to its entry."""
        if self.enabled:
            self._levels.append(_Level())

    def leave_walk(self) -> tuple[HostSync, ...]:
        if not self.enabled:
            return ()
        return tuple(self._levels.pop().syncs.values())

    def replay(
        self, call: WitnessStep, callee: str, syncs: tuple[HostSync, ...], caller: Mode
    ) -> None:
        """A callee's syncs, seen from its call site on a path in mode `caller`.

        The caller's decisions of overlap predicates win: a predicate the
        callee did not read came from the start its walk was made for, which
        may be another caller's (memo.py reuses the walk for any start)."""
        if not self.enabled or not syncs:
            return
        level = self._levels[-1]
        region = level.sanctioned[-1] if level.sanctioned else ""
        setup = callee if callee in self.setup_only else ""
        decided = dict(self._project(caller))
        for sync in syncs:
            mode = dict(sync.mode)
            mode.update(decided)
            self._add(
                replace(
                    sync,
                    chain=(call, *sync.chain),
                    mode=tuple(sorted(mode.items())),
                    sanctioned=sync.sanctioned or region,
                    setup=sync.setup or setup,
                )
            )

    def regions_mark(self) -> RegionsMark:
        """Where the regions stand as a callee walk begins (`regions_since`)."""
        if not self.enabled:
            return 0, 0, {}
        before = {r: frozenset(s) for r, s in self.regions.items()}
        return len(self._opened), len(self._sites), before

    def regions_since(self, mark: RegionsMark) -> tuple[WalkRegions, frozenset[RegionSite]]:
        """The regions a callee walk opened, with the sync sites it met inside
        them, and every sync site it met (for the regions open around it): a
        walk taken instead of walked enters and meets them again (`reenter`)."""
        opened_count, sites_count, before = mark
        opened = sorted(set(self._opened[opened_count:]))
        inside = tuple((r, frozenset(self.regions[r] - before.get(r, frozenset()))) for r in opened)
        return inside, frozenset(self._sites[sites_count:])

    def reenter(self, regions: WalkRegions, sites: frozenset[RegionSite]) -> None:
        """The regions and sync sites of a callee walk taken instead of walked,
        as walking it here would have met them."""
        journal = self._journal
        for region, inside in regions:
            self.regions.setdefault(region, set()).update(inside)
            self._opened.append(region)
            if journal is not None:
                journal.regions.append((region, None))
                journal.regions.extend((region, site) for site in sorted(inside))
        self._sites.extend(sorted(sites))
        for region in self._open:
            self.regions[region].update(sites)
            if journal is not None:
                journal.regions.extend((region, site) for site in sorted(sites))

    # ------------------------------------------------------------------ journals
    def journal(self) -> None:
        """Begin a journal of what the outermost walk meets (none where disabled);
        `journaled` ends it."""
        if self.enabled:
            self._journal = Journal()

    def journaled(self) -> Journal:
        """The journal begun last, ended."""
        found, self._journal = self._journal, None
        return found or Journal()

    def rejoin(self, journal: Journal) -> None:
        """Meet again, between a root's statements, what a journal holds: the
        syncs and region sites another run's statements met."""
        assert not self._open and self._journal is None, "met again between statements only"
        for sync in journal.syncs:
            self._add(sync)
        for region, site in journal.regions:
            sites = self.regions.setdefault(region, set())
            if site is not None:
                sites.add(site)

    def take_regions(self) -> dict[Region, frozenset[RegionSite]]:
        """The regions entered since the last call, with their syncs (between
        walks only: no region is open)."""
        found = {region: frozenset(sites) for region, sites in self.regions.items()}
        self.regions = {}
        self._opened, self._sites = [], []
        return found

    def take(self) -> tuple[HostSync, ...]:
        """The syncs the outermost walk met since the last `take`, in order."""
        if not self.enabled:
            return ()
        found = tuple(self._levels[0].syncs.values())
        self._levels[0] = _Level()
        return found
