"""Read one file and summarise it; every failure becomes a SummaryError."""

from __future__ import annotations

from pathlib import Path

from syncscan.index.build import SummaryError, summarise
from syncscan.index.summary import ModuleSummary
from syncscan.project import Project


def summarise_file(project: Project, module: str, path: Path) -> ModuleSummary:
    try:
        source = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SummaryError(f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SummaryError(f"not UTF-8: {exc.reason} at byte {exc.start}") from exc
    is_package = path.name == "__init__.py"
    return summarise(source, module, str(path), is_package)
