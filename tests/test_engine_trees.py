"""Tests for the helpers that provide real engine release trees."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from engine_trees import _extract_py, apply_edit, fetch_release
from helpers import copy_project

SOURCE = """\
def step(self):
    out = self.model(x)
    return out.tolist()
"""


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "runner.py").write_text(SOURCE)
    return root


def test_copied_tree_is_independent(small_tree: Path, tmp_path: Path) -> None:
    dst = copy_project(small_tree, tmp_path / "copy")
    assert dst == tmp_path / "copy"
    copied = dst / "pkg" / "sub" / "runner.py"
    assert copied.read_text() == SOURCE
    apply_edit(copied, "out = self.model(x)", "    # patched")
    assert "# patched" in copied.read_text()
    assert (small_tree / "pkg" / "sub" / "runner.py").read_text() == SOURCE


def test_apply_edit_inserts_after(small_tree: Path) -> None:
    f = small_tree / "pkg" / "sub" / "runner.py"
    apply_edit(f, "out = self.model(x)", "    torch.cuda.synchronize()")
    assert f.read_text().splitlines() == [
        "def step(self):",
        "    out = self.model(x)",
        "    torch.cuda.synchronize()",
        "    return out.tolist()",
    ]


def test_apply_edit_inserts_before(small_tree: Path) -> None:
    f = small_tree / "pkg" / "sub" / "runner.py"
    apply_edit(f, "return out.tolist()", "    out = out.cpu()\n", after=False)
    assert f.read_text().splitlines() == [
        "def step(self):",
        "    out = self.model(x)",
        "    out = out.cpu()",
        "    return out.tolist()",
    ]


def test_apply_edit_after_last_line_without_newline(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("x = 1")
    apply_edit(f, "x = 1", "y = 2")
    assert f.read_text() == "x = 1\ny = 2\n"


def test_apply_edit_count_matches_every_occurrence(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a()\nsync()\nb()\nsync()\n")
    apply_edit(f, "sync()", "# after sync", count=2)
    assert f.read_text() == "a()\nsync()\n# after sync\nb()\nsync()\n# after sync\n"


def test_apply_edit_missing_anchor_raises(small_tree: Path) -> None:
    f = small_tree / "pkg" / "sub" / "runner.py"
    with pytest.raises(ValueError, match="found 0"):
        apply_edit(f, "no such line", "x = 1")
    assert f.read_text() == SOURCE


def test_apply_edit_duplicate_anchor_raises(small_tree: Path) -> None:
    f = small_tree / "pkg" / "sub" / "runner.py"
    with pytest.raises(ValueError, match="found 2"):
        apply_edit(f, "out", "x = 1")
    assert f.read_text() == SOURCE


def test_apply_edit_wrong_count_raises(small_tree: Path) -> None:
    f = small_tree / "pkg" / "sub" / "runner.py"
    with pytest.raises(ValueError, match="exactly 2 line"):
        apply_edit(f, "def step", "x = 1", count=2)
    assert f.read_text() == SOURCE


def test_apply_edit_anchor_twice_on_one_line_raises(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("a = b = 1\n")
    with pytest.raises(ValueError, match="more than once on a line"):
        apply_edit(f, " = ", "x = 1")


def test_extract_skips_unsafe_and_non_py_members(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo/__init__.py", "")
        zf.writestr("demo/_C.abi3.so", b"\x7fELF")
        zf.writestr("demo/data.json", "{}")
        zf.writestr("../escape.py", "")
        zf.writestr("demo/../../escape2.py", "")
        zf.writestr("/abs.py", "")
    dest = tmp_path / "out"
    dest.mkdir()
    assert _extract_py(wheel, dest) == 1
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "demo",
        "demo/__init__.py",
    ]
    assert not (tmp_path / "escape.py").exists()
    assert not (tmp_path / "escape2.py").exists()


def test_fetch_release_vllm_0_28() -> None:
    src = fetch_release("vllm", "0.28.0")
    assert src.name == "src"
    assert (src / "vllm" / "__init__.py").is_file()
    assert (src / "vllm" / "v1" / "worker" / "gpu" / "model_runner.py").is_file()
    # syncscan's own summary cache may live in the tree (runs write it there).
    files = [p for p in src.rglob("*") if p.is_file() and ".syncscan_cache" not in p.parts]
    assert not [p for p in files if p.suffix == ".so"]
    assert all(p.suffix == ".py" for p in files)
    assert not list(src.parent.glob("*.whl"))
    assert not list(src.parent.glob("**/*.whl"))
    # Second call is a cache hit and returns the same tree.
    assert fetch_release("vllm", "0.28.0") == src
