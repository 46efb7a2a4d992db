"""A fresh clone runs its own tests: nothing they read lives outside the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import SARIF_SCHEMA, clone_repository


def test_the_sarif_schema_tests_pass_in_a_clone_with_nothing_beside_it(tmp_path: Path) -> None:
    clone = clone_repository(tmp_path / "syncscan")
    assert not (clone.parent / "shared").exists()
    assert (clone / SARIF_SCHEMA.relative_to(SARIF_SCHEMA.parents[2])).is_file()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_formats.py", "-k", "official_schema"],
        cwd=clone, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert " passed" in output and "error" not in output.lower(), output
