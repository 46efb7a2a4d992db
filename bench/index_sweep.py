"""Index every `.py` file of a list of engine releases and report crashes.

    python bench/index_sweep.py                       # every release already cached
    python bench/index_sweep.py --version 0.33.0 --version 0.29.0 [--package vllm]
    python bench/index_sweep.py --check               # also a full `syncscan check` per release

Each file goes through what a run does with it: read (regular files only,
under the size limit), decode, summarise, the text scan of the file facts,
the cache's JSON round trip, and the lazy decode of every function body,
which must give back an equal summary. A `SummaryError` is a skip (the file
is reported, as a run would); anything else is a crash: the script prints the
file and the exception, and exits 1. With `--check`, each release also gets a
full analysis (`syncscan.runner.run`), which must end in a result.

Releases come from the test suite's engine cache (`tests/engine_trees.py`);
named versions not cached yet are fetched there once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from engine_trees import engine_cache_dir, fetch_release  # noqa: E402

from syncscan.index.facts import scan  # noqa: E402
from syncscan.index.load import read_source, summarise_bytes  # noqa: E402
from syncscan.index.summary import (  # noqa: E402
    SummaryError,  # noqa: E402
    summary_from_data,
    summary_to_data,
)
from syncscan.project import DEFAULT_MAX_FILE_SIZE, Config, discover  # noqa: E402


@dataclass
class Sweep:
    release: str
    files: int = 0
    summarised: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # path -> reason
    unnamed: int = 0  # files discovery could not give a module name (reported by a run)
    crashes: dict[str, str] = field(default_factory=dict)  # path -> exception
    check: str = "not run"
    seconds: float = 0.0


def index_file(path: Path, module: str) -> None:
    """Everything a run does with one file; raises SummaryError for a skip."""
    source = read_source(path, DEFAULT_MAX_FILE_SIZE)
    scan(source)
    summary = summarise_bytes(source, module, path)
    text = json.dumps(summary_to_data(summary))
    restored = summary_from_data(json.loads(text))
    if restored != summary:  # compares every function, bodies decoded
        raise AssertionError("the cache round trip changed the summary")


def sweep(release: str, root: Path, check: bool) -> Sweep:
    started = time.perf_counter()
    result = Sweep(release)
    project = discover(root, Config())
    result.unnamed = len(project.skipped)
    names = {path: module for module, path in project.modules.items()}
    for dirpath, _, filenames in sorted(os.walk(root)):
        for filename in sorted(f for f in filenames if f.endswith(".py")):
            path = Path(dirpath, filename)
            rel = path.relative_to(root).as_posix()
            result.files += 1
            try:
                index_file(path, names.get(path, "unnamed_module"))
                result.summarised += 1
            except SummaryError as exc:
                result.skipped[rel] = str(exc)
            except Exception as exc:  # noqa: BLE001 - what this script counts
                result.crashes[rel] = "".join(traceback.format_exception_only(exc)).strip()
    if check:
        from syncscan.runner import run

        try:
            outcome = run(root, use_cache=False)
            result.check = f"{len(outcome.findings)} finding(s), {len(outcome.diagnostics)} skipped"
        except Exception as exc:  # noqa: BLE001
            result.crashes["<check>"] = "".join(traceback.format_exception(exc))
            result.check = "crashed"
    result.seconds = round(time.perf_counter() - started, 1)
    return result


def cached_releases(package: str) -> list[tuple[str, Path]]:
    found = []
    for release in sorted(engine_cache_dir().glob(f"{package}-*")):
        src = release / "src"
        if (src / package / "__init__.py").is_file():
            found.append((release.name, src))
    return sorted(found, key=lambda item: _version_key(item[0]))


def _version_key(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in name.split("-", 1)[-1].split("."))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="vllm")
    parser.add_argument("--version", action="append", default=[], help="default: every cached")
    parser.add_argument("--check", action="store_true", help="also a full analysis per release")
    parser.add_argument("--json", type=Path, help="write the per-release figures here")
    args = parser.parse_args()
    if args.version:
        releases = [(f"{args.package}-{v}", fetch_release(args.package, v)) for v in args.version]
    else:
        releases = cached_releases(args.package)
    results = []
    for name, root in releases:
        result = sweep(name, root, args.check)
        results.append(result)
        print(
            f"{name:>16}: {result.files:5d} files, {result.summarised:5d} summarised, "
            f"{len(result.skipped):3d} skipped, {result.unnamed:3d} unnamed, "
            f"{len(result.crashes)} crashes, check: {result.check}, {result.seconds}s",
            flush=True,
        )
        for rel, reason in sorted(result.skipped.items()):
            print(f"    skipped {rel}: {reason}")
        for rel, error in sorted(result.crashes.items()):
            print(f"    CRASH {rel}: {error}")
    files = sum(r.files for r in results)
    crashes = sum(len(r.crashes) for r in results)
    print(f"total: {len(results)} releases, {files} files, {crashes} crashes")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2) + "\n")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
