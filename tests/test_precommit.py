"""syncscan as a real pre-commit hook (`.pre-commit-hooks.yaml`), driven by `pre-commit try-repo`.

pre-commit builds the hook's virtualenv by pip-installing the syncscan
repository (network; slow the first time), then runs `syncscan check
--changed-only <files>` from the root of the user's git repository.

`try-repo` on a local repository with uncommitted changes only carries the
*tracked* files' changes into its shadow repository, never untracked ones, so
a new module that is not committed yet would be missing from the hook. The
hook repository here is therefore a committed snapshot of the syncscan working
tree (tracked and untracked, not ignored, files), listed with the read-only
`git ls-files`: the hook runs exactly the code on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, clone_repository

SLOT = FIXTURES / "slot_pool_mode_without_wait"
INSTALL_TIMEOUT = 1800  # seconds: the first run pip-installs syncscan and its dependencies


def pre_commit_command() -> list[str]:
    exe = Path(sys.executable).parent / "pre-commit"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "pre_commit"]


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.name", "syncscan tests")
    git(path, "config", "user.email", "tests@syncscan.invalid")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def replace_project(repo: Path, source: Path) -> None:
    """Make the repository's files exactly those of the fixture variant `source`."""
    for child in repo.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(
        source,
        repo,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".syncscan_cache", "__pycache__"),
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed snapshot of the syncscan working tree, for try-repo."""
    snapshot = new_repo(tmp_path_factory.mktemp("hook") / "syncscan")
    clone_repository(snapshot)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    commit_all(snapshot, "snapshot of the syncscan working tree")
    return snapshot


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hook environment for the whole module: built once, reused by every test."""
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(
    project: Path, hook_repo: Path, home: Path, *files: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    for name in ("PRE_COMMIT_COLOR", "FORCE_COLOR", "SKIP"):
        env.pop(name, None)
    proc = subprocess.run(
        [*pre_commit_command(), "try-repo", str(hook_repo), "syncscan", "--color", "never",
         "--files", *files],
        cwd=project, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    if "An unexpected error has occurred" in output or "CalledProcessError" in output:
        pytest.fail(f"pre-commit could not install or run the hook:\n{output}")
    return proc


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository holding the buggy slot-pool fixture, committed."""
    repo = new_repo(tmp_path / "project")
    replace_project(repo, SLOT / "buggy")
    commit_all(repo, "buggy engine")
    return repo


def test_hook_fails_on_a_change_in_the_witness_path(
    project: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    proc = try_repo(project, hook_repo, pre_commit_home, "engine/pool.py")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "SYNC001" in output
    assert "Failed" in output
    assert "engine/runner.py" in output  # where the finding is, though only pool.py changed


def test_hook_passes_on_a_change_the_finding_does_not_touch(
    project: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    proc = try_repo(project, hook_repo, pre_commit_home, "engine/uva.py")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "SYNC001" not in output


def test_hook_passes_after_the_fix_is_committed(
    project: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    before = try_repo(project, hook_repo, pre_commit_home, "engine/pool.py", "engine/runner.py")
    assert before.returncode != 0, before.stdout + before.stderr

    replace_project(project, SLOT / "fixed")
    commit_all(project, "fix: reuse event for encoder-only steps")
    assert "reuse_event" in (project / "engine" / "runner.py").read_text(encoding="utf-8")

    after = try_repo(project, hook_repo, pre_commit_home, "engine/pool.py", "engine/runner.py")
    output = after.stdout + after.stderr
    assert after.returncode == 0, output
    assert "SYNC001" not in output
    assert "Passed" in output
