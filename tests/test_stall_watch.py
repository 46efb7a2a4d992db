"""The large generated-code run's time limit: a stall names its module and its stack."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from stall_watch import StallWatch


def sleeping_in_the_code_under_test() -> None:
    time.sleep(0.6)


def test_a_slow_example_fails_keeping_its_module_and_stack(tmp_path: Path) -> None:
    with StallWatch(tmp_path, limit=0.2) as watch:
        with watch.example("fast = 1\n"):
            pass
        too_slow = pytest.raises(AssertionError, match=r"example 2 took 0\.\d s, over the 0\.2 s")
        with too_slow, watch.example("slow = '\udcff'\n"):
            sleeping_in_the_code_under_test()
    assert (tmp_path / "slow-2.py").read_bytes() == "slow = '\udcff'\n".encode(
        "utf-8", "surrogatepass"
    )
    assert not (tmp_path / "slow-1.py").exists()
    stalls = (tmp_path / "stalls.txt").read_text(encoding="utf-8")
    assert "Timeout (0:00:00.200000)!" in stalls
    assert "sleeping_in_the_code_under_test" in stalls
    assert "example 2: " in (tmp_path / "progress.txt").read_text(encoding="utf-8")


def test_time_between_examples_is_watched_without_failing(tmp_path: Path) -> None:
    """A slow generator is shown (its stack) but is not the code under test."""
    with StallWatch(tmp_path, limit=0.2) as watch:
        with watch.example("a = 1\n"):
            pass
        sleeping_in_the_code_under_test()  # stands for Hypothesis drawing the next module
        with watch.example("b = 2\n"):
            pass
    assert "sleeping_in_the_code_under_test" in (tmp_path / "stalls.txt").read_text()
    assert not list(tmp_path.glob("slow-*.py"))
