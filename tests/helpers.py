"""Small helpers the tests share: run syncscan on a directory, collect facts."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pytest
from engine_trees import fetch_release

from syncscan.cli import main
from syncscan.flow import walk
from syncscan.flow.stored_roots import StoredRoots
from syncscan.index import store_files
from syncscan.index.cache import SummaryCache
from syncscan.runner import RunResult, run

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# The official SARIF 2.1.0 schema, shipped with the tests (tests/data/README.md says whence).
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"


def analyse(root: Path) -> RunResult:
    return run(root)


@lru_cache(maxsize=8)
def analysed_sglang(release: str) -> RunResult:
    """syncscan's run on an SGLang release, once per test session."""
    return run(fetch_release("sglang", release))


def walks_of(root: Path, qualname: str) -> int:
    """How many times a run on `root` walks the callee `qualname` (memo misses)."""
    walked: list[str] = []
    original = walk.Walker._walk_callee

    def counting(self, frame, start, depth):  # type: ignore[no-untyped-def]
        walked.append(frame.function.qualname)
        return original(self, frame, start, depth)

    walk.Walker._walk_callee = counting  # type: ignore[method-assign]
    try:
        analyse(root)
    finally:
        walk.Walker._walk_callee = original  # type: ignore[method-assign]
    return walked.count(qualname)


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


# A module with a little of everything a summary holds (module `pkg.mod`): an
# import, a module-level value, a class with a base, an annotation, a decorated
# method assigning through `self` with a nested function, and another method.
SUMMARY_SOURCE = """
import torch

LIMIT = 4


class Runner(Base):
    size: int = 2

    @property
    def step(self, batch: list = None) -> int:
        self.count = len(batch)

        def inner():
            return 1

        return inner()

    def other(self):
        return 2
"""
SHAPES = sorted(p.parent for p in FIXTURES.glob("*/*/pyproject.toml"))  # every fixture project
BUGGY = FIXTURES / "slot_pool_mode_without_wait" / "buggy"
FIXED = FIXTURES / "slot_pool_mode_without_wait" / "fixed"
PAUSE_BUGGY = FIXTURES / "pause_returns_after_launch" / "buggy"


def repository_files() -> list[str]:
    """The files a clone of this repository holds: tracked ones, plus new ones git does
    not ignore (so a test sees uncommitted work), minus those deleted on disk."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return [rel for rel in listed.split("\0") if rel and (REPO / rel).is_file()]


def clone_repository(dest: Path) -> Path:
    """A copy of the repository as a fresh clone has it (no caches, nothing beside it)."""
    for rel in repository_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def copy_project(source: Path, dest: Path) -> Path:
    """A fixture copied where a test may change it (without caches)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".syncscan_cache", "__pycache__"))
    return dest


def combined_project(dest: Path) -> Path:
    """The SYNC001 slot-pool fixture plus the SYNC002 pause fixture: one finding of each."""
    copy_project(BUGGY, dest)
    shutil.copy(PAUSE_BUGGY / "engine" / "core.py", dest / "engine" / "core.py")
    pause_kernels = (PAUSE_BUGGY / "engine" / "kernels.py").read_text(encoding="utf-8")
    decode = pause_kernels[pause_kernels.index("@triton.jit") :]
    with (dest / "engine" / "kernels.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\n" + decode)
    shutil.copy(PAUSE_BUGGY / "step_pack.toml", dest / "pause_pack.toml")
    (dest / "pyproject.toml").write_text(
        '[tool.syncscan]\npacks = ["step_pack.toml", "pause_pack.toml"]\n', encoding="utf-8"
    )
    return dest


def check_json(capsys, *args: object) -> tuple[int, dict, str]:
    """`syncscan check --format json ARGS`: exit code, parsed report, stderr."""
    code = main(["check", "--no-cache", "--format", "json", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, json.loads(out), err


def damage(path: Path, how: str, reshape: Callable[[dict], None]) -> None:
    """Damage a JSON cache file: cut it in half, replace it by garbage or by JSON that
    is not an object (`how` "[]" or "null"), or `reshape` its data. A kept store's
    file is framed (its JSON, a newline, its texts: index/store_texts.py): its
    texts are in the data as "_texts" while `reshape` runs."""
    content = path.read_bytes()
    if how == "truncate":
        path.write_bytes(content[: len(content) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x80\x00not json")
    elif how in ("[]", "null"):  # JSON, but not an object
        path.write_text(how)
    elif b"\n" in content:
        cache = SummaryCache(path.parent)
        data, texts = cache.read_framed(path.name)
        data["_texts"] = texts.decode()
        reshape(data)
        cache.write_framed(path.name, data, data.pop("_texts").encode(), store_files.ITEMS)
    else:
        data = json.loads(content)
        reshape(data)
        path.write_text(json.dumps(data))


def add_text(data: dict, text: str) -> list[int]:
    """`text` added to the texts of a framed document `damage` is reshaping;
    the reference a row names it by."""
    ref = [len(data["_texts"]), len(text)]
    data["_texts"] += text
    return ref


def framed(path: Path) -> dict:
    """The document of a kept store's framed file (without its texts)."""
    return SummaryCache(path.parent).read_framed(path.name)[0]


def signature(result: RunResult) -> list[tuple]:
    """What two runs must agree on: each finding with its place, identity and witness."""
    return [
        (f.code, f.location.path, f.location.line, f.fingerprint, f.message, f.witness)
        for f in result.findings
    ]


def source_text(result: RunResult, path: str, line: int, count: int = 1) -> str:
    """`count` lines of the analysed tree's `path` from `line` (1-based)."""
    lines = (result.project.root / path).read_text().splitlines()
    return "\n".join(lines[line - 1 : line - 1 + count])


def without_root_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    """Roots walked whole after an edit to their body, their kept walks not
    resumed (syncscan/flow/root_resume.py): a test of the callee walks an edit
    to a root takes sees them taken."""
    monkeypatch.setattr(StoredRoots, "shape", lambda self, key: None)
