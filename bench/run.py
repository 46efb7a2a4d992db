"""Benchmark syncscan against named references on the same engine tree, in one run.

    python bench/run.py [--engine vllm|sglang] [--version 0.33.0] [--runs 3]

Fetches the release as the tests do (pip download, *.py only, cached outside
the repository), copies it to a scratch directory, and reports medians of
several runs of:

- syncscan cold (empty cache), warm (full cache), and warm after a one-file
  change to the step path (vLLM: vllm/v1/worker/gpu/model_runner.py; SGLang:
  sglang/srt/managers/scheduler.py): a comment
  appended (the issue's "touch"; the findings are reused once the file's new
  summary proves equal) and, with no target, a function added (every finding
  is recomputed from cached summaries);
- syncscan's peak RSS;
- ruff check --no-cache --select E,F (reference);
- a single-process libcst parse of every file (reference).

It prints each figure and the ratios the performance issue targets. It is a
measurement, not a test: nothing here fails on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from engine_trees import fetch_release  # noqa: E402

# The file of each engine's step root: the one-file change edits it.
STEP_FILES = {
    "vllm": "vllm/v1/worker/gpu/model_runner.py",
    "sglang": "sglang/srt/managers/scheduler.py",
}
NEWEST = {"vllm": "0.33.0", "sglang": "0.5.23"}
PARSE_ALL = """
import sys, time, pathlib, libcst
root = pathlib.Path(sys.argv[1])
t = time.perf_counter()
for path in sorted(root.rglob("*.py")):
    try:
        libcst.parse_module(path.read_text(encoding="utf-8"))
    except Exception:
        pass
print(time.perf_counter() - t)
"""


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss


def _ruff() -> str:
    """The ruff binary installed with the test extras (next to this Python), else PATH's."""
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        raise SystemExit("bench: ruff is not installed (pip install -e '.[test]')")
    return found


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(STEP_FILES), default="vllm")
    parser.add_argument("--version", help="default: the newest swept release")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    version = args.version or NEWEST[args.engine]

    source = fetch_release(args.engine, version)
    scratch = Path(tempfile.mkdtemp(prefix="syncscan-bench-"))
    try:
        tree = scratch / "src"
        shutil.copytree(source, tree)
        cache = scratch / "cache"
        syncscan = [sys.executable, "-m", "syncscan", "check", str(tree), "--exit-zero"]
        ruff = [_ruff()]

        cold, cold_rss = [], []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            seconds, rss = timed([*syncscan, "--cache-dir", str(cache)])
            cold.append(seconds)
            cold_rss.append(rss)
        warm, warm_rss = [], []
        for _ in range(args.runs):
            seconds, rss = timed([*syncscan, "--cache-dir", str(cache)])
            warm.append(seconds)
            warm_rss.append(rss)
        touched = []
        step_file = tree / STEP_FILES[args.engine]
        for run in range(args.runs):
            with step_file.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# bench touch {run}\n")
            touched.append(timed([*syncscan, "--cache-dir", str(cache)])[0])
        # A change the analysis reads (a new function): the record cannot be
        # reused, every finding is recomputed from cached summaries. No target.
        edited = []
        for run in range(args.runs):
            with step_file.open("a", encoding="utf-8") as handle:
                handle.write(f"\n\ndef _bench_edit_{run}():\n    return {run}\n")
            edited.append(timed([*syncscan, "--cache-dir", str(cache)])[0])
        ruff_runs = [
            timed(
                [*ruff, "check", "--no-cache", "--select", "E,F", "--exit-zero", "-q", str(tree)]
            )[0]
            for _ in range(args.runs)
        ]
        parse_runs = []
        for _ in range(args.runs):
            out = subprocess.run(
                [sys.executable, "-c", PARSE_ALL, str(tree)],
                capture_output=True,
                text=True,
                check=True,
            )
            parse_runs.append(float(out.stdout.strip()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    files = sum(1 for _ in source.rglob("*.py"))
    size = sum(p.stat().st_size for p in source.rglob("*.py")) / 1e6
    c, w, t, r, p = (
        median(cold),
        median(warm),
        median(touched),
        median(ruff_runs),
        median(parse_runs),
    )
    rss = max(cold_rss + warm_rss) / 1024
    print(
        f"{args.engine} {version}: {files} files, {size:.1f} MB; "
        f"medians of {args.runs} runs; {os.cpu_count()} cores"
    )
    print(f"  syncscan cold            {c:8.2f} s")
    print(f"  syncscan warm            {w:8.2f} s")
    print(f"  syncscan one-file change {t:8.2f} s  (a comment appended)")
    print(f"  syncscan code edit       {median(edited):8.2f} s  (a function added; no target)")
    print(f"  syncscan peak RSS        {rss:8.0f} MiB")
    print(f"  ruff --no-cache E,F      {r:8.2f} s")
    print(f"  libcst parse-all (1 proc){p:8.2f} s")
    print("ratios (target):")
    print(f"  cold / libcst parse-all   {c / p:6.2f}  (<= 0.15)")
    print(f"  warm / ruff               {w / r:6.2f}  (<= 1.5)")
    print(f"  one-file change / ruff    {t / r:6.2f}  (<= 3)")
    print(f"  peak RSS                  {rss:6.0f} MiB (<= 1024)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
