"""Callee walks reused across starts that agree on what the walk read (flow/memo.py)."""

from __future__ import annotations

from pathlib import Path

from helpers import walks_of, write_project

PACK = """
[pack]
name = "memo"
[[step_root]]
class = "eng.Runner"
method = "execute_model"
"""

ENGINE = """
import torch


class Helper:
    def __init__(self, fast):
        self.fast = fast
        self.buf = torch.zeros(8, device="cuda")

    def tune(self):
        if self.fast:
            torch.ops.eng.tune(self.buf)

    def run(self):
        {run}


class Runner:
    def __init__(self, fast):
        self.helper = Helper(fast)

    def execute_model(self, batch):
        if self.helper.fast:
            torch.ops.eng.fast(batch)
        self.helper.run()
"""


def test_a_walk_that_never_reads_a_mode_serves_both_of_its_values(tmp_path: Path) -> None:
    """`run` can see `self.fast` (its class reads it) but never tests it: one walk."""
    root = write_project(tmp_path, {"eng.py": ENGINE.format(run="torch.ops.eng.k(self.buf)")}, PACK)
    assert walks_of(root, "eng.Helper.run") == 1


def test_a_walk_that_reads_the_mode_is_made_per_value(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"eng.py": ENGINE.format(run="self.tune()")}, PACK)
    assert walks_of(root, "eng.Helper.run") == 2
