"""Benchmark syncscan against named references on the same engine tree, in one run.

    python bench/run.py [--engine vllm|sglang] [--version 0.33.0] [--runs 3]

Fetches the release as the tests do (pip download, *.py only, cached outside
the repository), copies it to a scratch directory, and reports medians of
several runs of:

- syncscan cold (empty cache), warm (full cache), and warm after a one-file
  change to the step path (vLLM: vllm/v1/worker/gpu/model_runner.py; SGLang:
  sglang/srt/managers/scheduler.py): a comment
  appended (the issue's "touch"; the findings are reused once the file's new
  summary proves equal), a comment line inserted at its top (every line the
  walks read moves: the findings are carried to where they went), a function
  added to it (a name nothing looks up: reused), and a statement inserted at
  the top of the step root's body (every finding is recomputed from cached
  summaries: the pre-commit case of the performance issue);
- a function added to a file off the step path (vLLM: vllm/benchmarks/latency.py;
  SGLang: sglang/bench_serving.py);
- cold runs under a concurrent CPU hog (one busy process), with the default
  `--jobs` and with `--jobs 1`: parallel indexing must never lose;
- `syncscan --version` (the console script: the start-up cost);
- syncscan's peak RSS, and the CPU time of its cold runs (every process it
  waited for: walk workers, writers, the prefetch pool): over the machine's
  cores, the floor the cold ratio cannot go below without less work;
- ruff check --no-cache --select E,F (reference);
- a single-process `ast.parse` and a single-process libcst parse of every file
  (references).

It prints each figure and the ratios the performance issue targets; a ratio to
ruff is the median of each run over a ruff run made right after it (the
machine's speed drifts within minutes). It is a measurement, not a test:
nothing here fails on time.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from engine_trees import fetch_release  # noqa: E402

# The file of each engine's step root: the one-file change edits it.
STEP_FILES = {
    "vllm": "vllm/v1/worker/gpu/model_runner.py",
    "sglang": "sglang/srt/managers/scheduler.py",
}
# The step root whose body the statement edit changes (class, method), and a file
# no step path reaches (a function added there must cost nothing).
STEP_ROOTS = {"vllm": ("GPUModelRunner", "execute_model"), "sglang": ("Scheduler", "run_batch")}
UNRELATED_FILES = {"vllm": "vllm/benchmarks/latency.py", "sglang": "sglang/bench_serving.py"}
NEWEST = {"vllm": "0.33.0", "sglang": "0.5.23"}
PARSE_ALL = """
import sys, time, pathlib, {module}
root = pathlib.Path(sys.argv[1])
t = time.perf_counter()
for path in sorted(root.rglob("*.py")):
    try:
        {call}(path.read_text(encoding="utf-8"))
    except Exception:
        pass
print(time.perf_counter() - t)
"""
PARSERS = {"libcst": ("libcst", "libcst.parse_module"), "ast": ("ast", "ast.parse")}


def insert_statement(path: Path, cls: str, method: str, text: str) -> None:
    """`text` as the first statement of `cls.method`'s body (after its docstring)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    body = item.body
                    first = body[1] if len(body) > 1 and _docstring(body[0]) else body[0]
                    lines = source.splitlines(keepends=True)
                    indent = " " * first.col_offset
                    lines.insert(first.lineno - 1, f"{indent}{text}\n")
                    path.write_text("".join(lines), encoding="utf-8")
                    return
    raise SystemExit(f"bench: no {cls}.{method} in {path}")


def _docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def parse_all(parser: str, tree: Path) -> float:
    """Seconds one process takes to parse every file of `tree` with `parser`."""
    module, call = PARSERS[parser]
    out = subprocess.run(
        [sys.executable, "-c", PARSE_ALL.format(module=module, call=call), str(tree)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def compile_syncscan() -> None:
    """Byte-compile syncscan (and its rules) as an installed wheel has it: pip
    compiles at install, but an editable checkout under
    PYTHONDONTWRITEBYTECODE (set on the development machine) would otherwise
    compile every module from source in every timed run (about 50 ms)."""
    import importlib.util

    for package in ("syncscan", "syncscan.rules"):
        spec = importlib.util.find_spec(package)
        for location in spec.submodule_search_locations if spec else ():
            subprocess.run([sys.executable, "-m", "compileall", "-q", location], check=True)


class Timing(NamedTuple):
    seconds: float  # wall
    rss: int  # peak RSS, KiB
    # User and system CPU seconds of the process and of every process it
    # waited for (its walk workers, writers and prefetch pool).
    cpu: float


def timed(command: list[str]) -> Timing:
    """One child process, timed."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    return Timing(seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)


# Seconds before the first hogged run: the running count shows the hog at once, the
# one-minute load average (where there is no running count) after about this long.
HOG_WARMUP = 30


def cold_under_hog(syncscan: list[str], cache: Path, runs: int) -> dict[str, list[float]]:
    """Cold runs while another process keeps one core busy: the default --jobs
    against --jobs 1, alternating so both see the same load. `chosen` holds the
    worker count the default picked each time (as this process computes it at
    that moment: where it is 1, the two runs are the same configuration)."""
    from syncscan.workers import default_jobs

    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(HOG_WARMUP)
        seconds: dict[str, list[float]] = {"default": [], "1": [], "chosen": []}
        for _ in range(runs):
            for jobs, extra in (("default", []), ("1", ["--jobs", "1"])):
                if jobs == "default":
                    default_jobs.cache_clear()  # asked afresh, as the run will ask it
                    seconds["chosen"].append(default_jobs())
                shutil.rmtree(cache, ignore_errors=True)
                seconds[jobs].append(timed([*syncscan, "--cache-dir", str(cache), *extra]).seconds)
        return seconds
    finally:
        hog.kill()
        hog.wait()


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
    compile_syncscan()
    scratch = Path(tempfile.mkdtemp(prefix="syncscan-bench-"))
    try:
        tree = scratch / "src"
        shutil.copytree(source, tree)
        cache = scratch / "cache"
        syncscan = [sys.executable, "-m", "syncscan", "check", str(tree), "--exit-zero"]
        ruff = [_ruff(), "check", "--no-cache", "--select", "E,F", "--exit-zero", "-q", str(tree)]
        # Per case, ruff's seconds timed right after each of its runs: the
        # machine's speed drifts by several percent within minutes, and a
        # ratio of runs made minutes apart drifts with it (a statement edit
        # read 1.60 x ruff in one bench, 1.35 x in ten pairs the same hour).
        beside: dict[str, list[float]] = {}

        def warm_run(case: str) -> Timing:
            """A run on the cache as it stands, and a ruff run right after it."""
            timing = timed([*syncscan, "--cache-dir", str(cache)])
            beside.setdefault(case, []).append(timed(ruff).seconds)
            return timing

        cold, cold_rss, cold_cpu = [], [], []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            seconds, rss, cpu = timed([*syncscan, "--cache-dir", str(cache)])
            cold.append(seconds)
            cold_rss.append(rss)
            cold_cpu.append(cpu)
        warm, warm_rss = [], []
        for _ in range(args.runs):
            seconds, rss, _ = warm_run("warm")
            warm.append(seconds)
            warm_rss.append(rss)
        step_file = tree / STEP_FILES[args.engine]
        other_file = tree / UNRELATED_FILES[args.engine]
        cls, method = STEP_ROOTS[args.engine]

        def after_each(case: str, change) -> list[float]:
            """Seconds of a warm run after each of `args.runs` changes `change(run)`."""
            seconds = []
            for run in range(args.runs):
                change(run)
                seconds.append(warm_run(case).seconds)
            return seconds

        def append(path: Path, text: str) -> None:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(text)

        # A comment: the findings are reused once the file's new summary proves equal.
        touched = after_each("touched", lambda run: append(step_file, f"\n# bench touch {run}\n"))
        # A line inserted at the top of the step file: every line the walks read
        # moves, nothing they read changes; the findings are carried (relocate.py).
        moved = after_each(
            "moved",
            lambda run: step_file.write_text(
                f"# bench moved {run}\n" + step_file.read_text(encoding="utf-8"), encoding="utf-8"
            ),
        )
        # A function added to the step file: a name no lookup asked (reads.py).
        edited = after_each(
            "edited",
            lambda run: append(step_file, f"\n\ndef _bench_edit_{run}():\n    return {run}\n"),
        )
        # A statement in the step root's body: every finding is recomputed from
        # cached summaries (the performance issue's target).
        statement = after_each(
            "statement",
            lambda run: insert_statement(step_file, cls, method, f"_bench_statement_{run} = {run}"),
        )
        unrelated = after_each(
            "unrelated",
            lambda run: append(
                other_file, f"\n\ndef _bench_unrelated_{run}():\n    return {run}\n"
            ),
        )
        hogged = cold_under_hog(syncscan, cache, args.runs)
        script = shutil.which("syncscan", path=str(Path(sys.executable).parent)) or "syncscan"
        version_runs = [timed([script, "--version"]).seconds for _ in range(max(args.runs, 5))]
        ruff_runs = [seconds for runs in beside.values() for seconds in runs]
        parse_runs = [parse_all("libcst", tree) for _ in range(args.runs)]
        ast_runs = [parse_all("ast", tree) for _ in range(args.runs)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    files = sum(1 for _ in source.rglob("*.py"))
    size = sum(p.stat().st_size for p in source.rglob("*.py")) / 1e6
    c, w, t, r, p, a = (
        median(cold),
        median(warm),
        median(touched),
        median(ruff_runs),
        median(parse_runs),
        median(ast_runs),
    )
    e, u, v = median(statement), median(unrelated), median(version_runs)

    def paired(case: str, samples: list[float]) -> float:
        """The case's ratio to ruff: the median of each run over the ruff run beside it."""
        return median([s / rf for s, rf in zip(samples, beside[case], strict=True)])

    rss = max(cold_rss + warm_rss) / 1024
    print(
        f"{args.engine} {version}: {files} files, {size:.1f} MB; "
        f"medians of {args.runs} runs; {os.cpu_count()} cores"
    )
    print(f"  syncscan cold            {c:8.2f} s")
    print(f"  syncscan cold, CPU       {median(cold_cpu):8.2f} s  (user + system, every process)")
    print(f"  syncscan warm            {w:8.2f} s")
    print(f"  syncscan one-file change {t:8.2f} s  (a comment appended)")
    print(f"  syncscan lines moved     {median(moved):8.2f} s  (a line at the top; no target)")
    print(f"  syncscan code edit       {median(edited):8.2f} s  (a function added; no target)")
    print(f"  syncscan statement edit  {e:8.2f} s  (inserted in {cls}.{method})")
    print(f"  syncscan unrelated edit  {u:8.2f} s  (a function added to {other_file.name})")
    h, h1 = median(hogged["default"]), median(hogged["1"])
    chosen = ", ".join(str(int(n)) for n in hogged["chosen"])
    print(f"  syncscan cold, CPU hog   {h:8.2f} s  (default --jobs, chose {chosen})")
    print(f"  syncscan cold, CPU hog   {h1:8.2f} s  (--jobs 1)")
    print(f"  syncscan --version       {v:8.2f} s")
    print(f"  syncscan peak RSS        {rss:8.0f} MiB")
    print(f"  ruff --no-cache E,F      {r:8.2f} s  (each run beside one of syncscan's)")
    print(f"  libcst parse-all (1 proc){p:8.2f} s")
    print(f"  ast parse-all (1 proc)   {a:8.2f} s")
    print("ratios (target):")
    print(f"  cold / libcst parse-all   {c / p:6.2f}  (<= 0.15)")
    print(f"  cold / ast parse-all      {c / a:6.2f}  (<= 1)")
    # Wall time can beat CPU time divided by the cores by no scheduling: the
    # cold ratio's floor on this machine, for the work the run does now.
    floor = median(cold_cpu) / (os.cpu_count() or 1) / a
    print(f"  cold CPU / cores / ast    {floor:6.2f}  (the floor of the cold ratio here)")
    print("  (against ruff: each run over the ruff run made right after it, median)")
    w_r = paired("warm", warm)
    print(f"  warm / ruff               {w_r:6.2f}  (<= 1.5; performance issue: <= 0.5)")
    print(f"  one-file change / ruff    {paired('touched', touched):6.2f}  (<= 3)")
    print(f"  statement edit / ruff     {paired('statement', statement):6.2f}  (<= 1.5)")
    print(f"  unrelated edit / ruff     {paired('unrelated', unrelated):6.2f}  (<= 1)")
    print(f"  hogged default / --jobs 1 {h / h1:6.2f}  (<= 1)")
    print(f"  --version                 {v:6.2f} s (<= 0.1)")
    print(f"  peak RSS                  {rss:6.0f} MiB (<= 1024)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
