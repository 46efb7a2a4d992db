"""What a run takes from the last run's record and keeps for the next one.

Five stores sit beside the record (reuse.py), each holding results that stay
true while the summary items they read are unchanged: the call graph crawl's
visits (resolve/stored_crawl.py), the callee walks (stored.py), the class
analyses (stored_units.py), the roots' walks statement by statement
(stored_roots.py: true also across an edit to the root's own body, as
root_record.py checks) and the quiescence points' results (quiescence.py).
The walks, units and roots also depend on the step walker's configuration,
the points on the quiescence walker's, known only once the crawl is done: they
are made for it then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syncscan.flow.stored import StoredWalks
    from syncscan.flow.stored_results import StoredResults
    from syncscan.flow.stored_roots import StoredRoots
    from syncscan.flow.stored_units import StoredUnits
    from syncscan.index.store_files import Whole
    from syncscan.resolve.stored_crawl import StoredCrawl
    from syncscan.reuse import KeptSince


@dataclass
class Kept:
    crawl: StoredCrawl
    walks_for: Callable[[str], StoredWalks]  # for a walker's configuration
    units_for: Callable[[str], StoredUnits]
    points_for: Callable[[str], StoredResults]
    roots_for: Callable[[str], StoredRoots]
    # Each store's file as read, by name: this run's delta is written against it
    # (index/store_files.py).
    wholes: dict[str, Whole] = field(default_factory=dict)
    walks: StoredWalks | None = None  # the step walker's, once it walked
    units: StoredUnits | None = None
    roots: StoredRoots | None = None
    points: StoredResults | None = None  # the quiescence walker's, once it walked
    # What each store was kept with, by name: its token and what changed since
    # (reuse.py: where a store is left as it was, the record names this).
    since: dict[str, KeptSince] = field(default_factory=dict)

    def for_walker(self, configuration: str) -> None:
        """Make the walks, units and roots stores for the step walker."""
        self.walks = self.walks_for(configuration)
        self.units = self.units_for(configuration)
        self.roots = self.roots_for(configuration)

    def for_quiescence(self, configuration: str) -> StoredResults:
        """Make the quiescence points' store for their walker."""
        self.points = self.points_for(configuration)
        return self.points
