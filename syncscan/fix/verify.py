"""Re-analysis of a patched tree: the proof a fix must pass before it is written.

The project is copied to a temporary directory (sources and configuration,
not caches or version control), the patched files are written there, and the
same check runs on the copy with the same summary cache, so only the patched
modules are summarised again. A fix passes when the findings it targets are
gone and no finding appears that the original tree did not have (findings are
compared by fingerprint, which does not depend on line numbers).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from syncscan.report.result import RunResult

_NOT_COPIED = shutil.ignore_patterns(".git", ".hg", ".syncscan_cache", "__pycache__", "*.pyc")


class Verifier:
    def __init__(self, result: RunResult, rerun: Callable[[Path], RunResult]) -> None:
        self.result = result
        self.rerun = rerun  # the same check, on another root
        self.before = {f.fingerprint for f in result.findings}

    def check(self, patched: dict[str, str], proposals) -> tuple[str, RunResult | None]:
        """("", analysis of the patched tree) when the fixes hold, else (why, None)."""
        root = self.result.project.root
        with tempfile.TemporaryDirectory(prefix="syncscan-fix-") as temp:
            copy = Path(temp) / root.name
            shutil.copytree(root, copy, ignore=_NOT_COPIED, symlinks=True)
            for path, text in patched.items():
                (copy / path).write_bytes(text.encode("utf-8"))  # line endings as they are
            after = self.rerun(copy)
        if after.incomplete:
            return "the patched tree could not be analysed completely", None
        found = {f.fingerprint for f in after.findings}
        left = [p.finding for p in proposals if p.finding.fingerprint in found]
        if left:
            where = ", ".join(f"{f.code} at {f.location.path}:{f.location.line}" for f in left)
            return f"re-analysis still reports {where}", None
        new = [f for f in after.findings if f.fingerprint not in self.before]
        if new:
            where = ", ".join(f"{f.code} at {f.location.path}:{f.location.line}" for f in new)
            return f"re-analysis reports a new finding: {where}", None
        return "", after
