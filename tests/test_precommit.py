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
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, REPO, clone_repository

from syncscan import __version__

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


# --------------------------------------------------------------------------- the README's snippet

RELEASE_TAG = f"v{__version__}"  # what the release is tagged; the README must name it


def readme_pre_commit_config() -> str:
    """The README's `.pre-commit-config.yaml` snippet, exactly as written there."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (snippet,) = re.findall(r"```yaml\n(repos:\n.*?)```", readme, flags=re.DOTALL)
    return snippet


def test_the_readme_snippet_names_the_release_tag_of_this_version() -> None:
    """A version bump without the README (or a README naming a tag that is never made)
    would hand users a `rev` that does not exist: `pathspec 'v0.1.0' did not match`."""
    snippet = readme_pre_commit_config()
    (rev,) = re.findall(r"^\s*rev:\s*(\S+)\s*$", snippet, flags=re.MULTILINE)
    assert rev == RELEASE_TAG
    assert re.search(r"^\s*- id: syncscan\s*$", snippet, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def released(hook_repo: Path) -> Path:
    """The snapshot tagged as a release is tagged (`git tag v<version>`); a fresh clone of
    a released syncscan has that tag."""
    git(hook_repo, "tag", "-f", RELEASE_TAG)
    return hook_repo


def test_the_readme_snippet_works_as_written_in_a_temporary_repository(
    project: Path, released: Path, pre_commit_home: Path
) -> None:
    config = readme_pre_commit_config().replace("<URL of your syncscan repository>", str(released))
    assert str(released) in config
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    commit_all(project, "add the README's pre-commit configuration")
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    for name in ("PRE_COMMIT_COLOR", "FORCE_COLOR", "SKIP"):
        env.pop(name, None)
    proc = subprocess.run(
        [*pre_commit_command(), "run", "--all-files", "--color", "never"],
        cwd=project, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert "did not match" not in output and "An unexpected error" not in output, output
    assert proc.returncode == 1, output  # the hook ran and found the buggy engine's bug
    assert "SYNC001" in output and "Failed" in output


def test_try_repo_at_the_release_tag(project: Path, released: Path, pre_commit_home: Path) -> None:
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home)}
    proc = subprocess.run(
        [*pre_commit_command(), "try-repo", str(released), "syncscan", "--ref", RELEASE_TAG,
         "--color", "never", "--files", "engine/pool.py"],
        cwd=project, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "SYNC001" in output
