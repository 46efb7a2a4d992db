"""Naming where an internal error happened, for its one-line message.

A crash is reported without a traceback (that needs `-v` or
`SYNCSCAN_TRACEBACK=1`), so the message itself must say which file syncscan
was working on. The traceback's frames already know: the innermost frame
holding a module summary, a function summary or a source path names it. No
layer has to keep a "current file" for the rare day something breaks.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from types import TracebackType


def crash_site(error: BaseException) -> tuple[str | None, str | None]:
    """(file, function) being processed when `error` was raised, innermost first."""
    # Summaries exist only where the indexer was loaded (a reused check never
    # loads it): then no frame holds one.
    summaries = sys.modules.get("syncscan.index.summary")
    function_type = getattr(summaries, "FunctionSummary", ())
    module_type = getattr(summaries, "ModuleSummary", ())
    path: str | None = None
    function: str | None = None
    for frame_locals in reversed(_frames(error.__traceback__)):
        for name, value in frame_locals.items():
            if function is None and isinstance(value, function_type):
                function = value.qualname  # type: ignore[attr-defined]
            elif path is None and isinstance(value, module_type):
                path = value.path  # type: ignore[attr-defined]
            elif path is None and name == "path" and str(value).endswith(".py"):
                path = str(value)
        if path is not None:
            break
    return path, function


def _frames(tb: TracebackType | None) -> list[dict[str, object]]:
    frames = []
    while tb is not None:
        frames.append(dict(tb.tb_frame.f_locals))
        tb = tb.tb_next
    return frames


def describe(error: BaseException, root: Path | None) -> tuple[str, str | None]:
    """The one-line message, and the file (relative to `root` when inside it)."""
    path, function = crash_site(error)
    if path is not None and root is not None:
        with contextlib.suppress(ValueError, OSError):  # outside the root: as it is
            path = Path(path).resolve().relative_to(root.resolve()).as_posix()
    where = path or "no file (before or after reading the project)"
    if function is not None:
        where += f" ({function})"
    detail = " ".join(str(error).split())[:300]
    kind = type(error).__name__
    return f"internal error while processing {where}: {kind}{': ' + detail if detail else ''}", path
