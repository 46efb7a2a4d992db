"""Real inference-engine release trees for tests.

The analyzer has to be exercised on real engine source, but no third-party
code is committed to this repository. Releases are fetched once with pip,
reduced to their ``.py`` files and cached outside the repository.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

CACHE_ENV = "SYNCSCAN_ENGINE_CACHE"


def engine_cache_dir() -> Path:
    """Return the cache root: ``$SYNCSCAN_ENGINE_CACHE`` or a user cache dir.

    The default lives under the home directory so that downloaded third-party
    code never ends up inside the repository.
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "syncscan-engines"


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive flock so parallel test processes don't race."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _safe_member(name: str) -> PurePosixPath | None:
    """Return the member's relative path, or None if it could escape the dest.

    Wheels are untrusted archives; absolute paths, drive letters and ``..``
    components are rejected instead of being extracted.
    """
    if "\\" in name:
        return None
    rel = PurePosixPath(name)
    if rel.is_absolute() or not rel.parts:
        return None
    if any(part in ("", ".", "..") for part in rel.parts):
        return None
    if ":" in rel.parts[0]:
        return None
    return rel


def _extract_py(wheel: Path, dest: Path) -> int:
    """Extract only ``.py`` members of ``wheel`` into ``dest``; return count.

    Skipping compiled extensions and data keeps the cache small and guarantees
    the tests only ever see source the analyzer can read.
    """
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir() or not info.filename.endswith(".py"):
                continue
            rel = _safe_member(info.filename)
            if rel is None:
                continue
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            count += 1
    return count


def _pip_download(package: str, version: str, dest: Path) -> Path:
    """Download the release wheel with pip; raise RuntimeError on failure.

    Failure must surface as an error so tests fail rather than skip.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        f"{package}=={version}",
        "-d",
        str(dest),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"pip download of {package}=={version} failed "
            f"(exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr}"
        )
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(
            f"expected exactly one wheel for {package}=={version} in {dest}, "
            f"found {[w.name for w in wheels]}\n{proc.stderr}"
        )
    return wheels[0]


def fetch_release(package: str, version: str) -> Path:
    """Return a cached source tree (``.../src``) holding ``package`` at ``version``.

    The returned directory contains the top-level package directory, e.g.
    ``src/vllm/...``. The first call downloads the wheel; later calls reuse it.
    """
    cache = engine_cache_dir()
    release_dir = cache / f"{package}-{version}"
    src = release_dir / "src"
    marker = src / package / "__init__.py"
    if marker.is_file():
        return src

    with _locked(cache / f"{package}-{version}.lock"):
        if marker.is_file():  # another process finished while we waited
            return src
        release_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=release_dir, prefix=".tmp-") as tmp:
            tmp_path = Path(tmp)
            wheel = _pip_download(package, version, tmp_path / "download")
            staging = tmp_path / "src"
            staging.mkdir()
            _extract_py(wheel, staging)
            wheel.unlink()
            if not (staging / package / "__init__.py").is_file():
                raise RuntimeError(
                    f"wheel {wheel.name} has no {package}/__init__.py; is the package name right?"
                )
            if src.exists():  # leftover from an interrupted run
                shutil.rmtree(src)
            os.replace(staging, src)
    return src


def apply_edit(
    path: Path,
    anchor: str,
    insert: str,
    *,
    after: bool = True,
    count: int = 1,
) -> None:
    """Insert ``insert`` after (or before) every line containing ``anchor``.

    The anchor must occur on exactly ``count`` lines, so a reference fix
    fails loudly instead of landing in the wrong place when a release changes.
    ``insert`` is placed as whole lines; a trailing newline is added if missing.
    """
    if not anchor:
        raise ValueError("apply_edit: anchor must be a non-empty string")
    if count < 1:
        raise ValueError(f"apply_edit: count must be >= 1, got {count}")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if anchor in line]
    if len(hits) != count:
        where = ", ".join(str(i + 1) for i in hits) or "none"
        raise ValueError(
            f"apply_edit: anchor {anchor!r} expected on exactly {count} line(s) "
            f"of {path}, found {len(hits)} (lines: {where})"
        )
    if any(line.count(anchor) != 1 for line in (lines[i] for i in hits)):
        raise ValueError(
            f"apply_edit: anchor {anchor!r} occurs more than once on a line of "
            f"{path}; insertion point is ambiguous"
        )
    block = insert if insert.endswith("\n") else insert + "\n"
    for i in reversed(hits):
        if after:
            if not lines[i].endswith("\n"):
                lines[i] += "\n"
            lines.insert(i + 1, block)
        else:
            lines.insert(i, block)
    path.write_text("".join(lines), encoding="utf-8")
