"""Small helpers the tests share: run syncscan on a directory, collect facts."""

from __future__ import annotations

from pathlib import Path

from syncscan.runner import RunResult, run

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def analyse(root: Path) -> RunResult:
    return run(root)


def codes(result: RunResult, code: str) -> list:
    return [f for f in result.findings if f.code == code]


def write_project(root: Path, files: dict[str, str], pack: str) -> Path:
    """A temporary project: the files, the pack, and a pyproject naming it."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / "example_pack.toml").write_text(pack, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.syncscan]\npacks = ["example_pack.toml"]\n', encoding="utf-8"
    )
    return root
