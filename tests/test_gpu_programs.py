"""The GPU rule programs, analysed: syncscan reports each buggy one, not its fixed twin.

`tests/gpu/programs/<shape>/{buggy,fixed}` are run on a CUDA device by
`tests/gpu/test_rule_programs.py` (buggy corrupts its data, fixed does not); here
the same files are analysed, with no GPU and without importing them, so the
verdicts the device backs are the ones syncscan gives.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from helpers import REPO, analyse

PROGRAMS = REPO / "tests" / "gpu" / "programs"
CASES = sorted(
    (shape.name, variant)
    for shape in PROGRAMS.iterdir()
    if (shape / "expect.toml").is_file()
    for variant in tomllib.loads((shape / "expect.toml").read_text())
)


def test_every_program_has_a_buggy_and_a_fixed_variant() -> None:
    shapes = sorted(p.name for p in PROGRAMS.iterdir() if p.is_dir())
    assert shapes and all((PROGRAMS / s / "expect.toml").is_file() for s in shapes)
    assert sorted(CASES) == sorted((s, v) for s in shapes for v in ("buggy", "fixed"))


@pytest.mark.parametrize(("shape", "variant"), CASES, ids=[f"{s}/{v}" for s, v in CASES])
def test_program(shape: str, variant: str) -> None:
    root: Path = PROGRAMS / shape / variant
    expect = tomllib.loads((PROGRAMS / shape / "expect.toml").read_text())[variant]
    result = analyse(root)
    assert result.diagnostics == []
    messages = [f.message for f in result.findings]
    if "findings" in expect:
        assert len(result.findings) == expect["findings"], messages
    if "code" in expect:
        # A shape racing both ways (read-after-write and write-after-read) is two
        # findings of one code, as in its fixture; `function` is one of them.
        expected = [expect["code"]] * expect.get("findings", 1)
        assert [f.code for f in result.findings] == expected, messages
        if "function" in expect:
            assert expect["function"] in [f.location.function for f in result.findings], messages
