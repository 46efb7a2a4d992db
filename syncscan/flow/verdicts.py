"""A step path's verdicts, as the step analysis gives them and the rules read them.

Light on purpose: a rule module imports these without loading the analysis
(`syncscan rules` and `explain` only document the rules).
"""

from __future__ import annotations

UNBOUNDED = "unbounded"
OUTSIDE_GUARD = "write outside guard"
DISCARDED = "output discarded"
