"""Run the GPU suite (`tests/gpu`, marker `gpu`) and write its table of counts.

Each check in tests/gpu reports (label, trials, count, expected) through
`gpu_trials.report`, which appends a JSON line to the file named by
`SYNCSCAN_GPU_TABLE`; this script sets that variable, runs pytest on the suite,
and renders the lines as the Markdown table the README shows. It needs PyTorch
and pytest only (not syncscan), so it runs on a bare CUDA machine:

    python3 scripts/gpu_table.py --out gpu_table.md

CI has no GPU: there every test of the suite is skipped ("no CUDA device") and
the table is empty. The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent / "tests" / "gpu"
# The suite's own directory as rootdir, with no config file: the repository's
# conftest (which imports syncscan) and its addopts stay out of the run.
PYTEST = ["-m", "pytest", "-m", "gpu", "-q", "-rs", "-p", "no:cacheprovider"]
PYTEST += ["-W", "ignore::pytest.PytestUnknownMarkWarning"]
PYTEST += ["--confcutdir", str(SUITE), "-c", os.devnull, "--rootdir", str(SUITE), str(SUITE)]


def device_line() -> str:
    """Which device and PyTorch the table was measured with."""
    probe = (
        "import torch; print(torch.__version__, torch.cuda.get_device_name()"
        " if torch.cuda.is_available() else 'no CUDA device')"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


def render(rows: list[dict], header: str) -> str:
    """The Markdown table: one row per reported count, in the order they ran."""
    lines = [header, "", "| test | trials | corrupted / observed | expected |"]
    lines.append("| --- | --- | --- | --- |")
    for row in rows:
        lines.append(f"| {row['test']} | {row['trials']} | {row['count']} | {row['expected']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the table here (default: stdout)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "rows.jsonl"
        record.touch()
        env = {**os.environ, "SYNCSCAN_GPU_TABLE": str(record), "PYTHONUNBUFFERED": "1"}
        status = subprocess.run([sys.executable, *PYTEST], env=env).returncode
        rows = [json.loads(line) for line in record.read_text().splitlines() if line]
    header = f"{date.today().isoformat()}, {device_line()}, pytest exit {status}"
    table = render(rows, header)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    else:
        sys.stdout.write(table)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
