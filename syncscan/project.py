"""Find the analysed project: its root, its Python files and their module names.

Module names come from the package structure on disk (a directory counts as a
package when it holds `__init__.py`), so a directory holding top-level packages,
such as an extracted wheel, is a valid root, and so is a package directory itself.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SKIP_DIRS = frozenset(
    {".git", ".hg", "__pycache__", ".venv", "venv", ".tox", "node_modules", "build", "dist"}
)


class ConfigError(Exception):
    """Bad configuration: the message names the key and the file."""


@dataclass(frozen=True)
class Config:
    """The effective `[tool.syncscan]` configuration of a run."""

    source: str | None = None
    packs: tuple[str, ...] = ()  # extra pack files, absolute paths
    disable_packs: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, str] = field(default_factory=dict)
    cache_dir: str | None = None
    inline_pack: dict[str, Any] = field(default_factory=dict)  # [tool.syncscan] rows, as a pack


_LIST_KEYS = ("packs", "disable_packs", "exclude", "select", "ignore")
_PACK_TABLES = ("step_root", "quiescence", "rpc", "mode", "bounded_mode", "resolution")
_KNOWN_KEYS = frozenset((*_LIST_KEYS, *_PACK_TABLES, "severity", "cache_dir"))
_SEVERITIES = frozenset({"error", "warning", "note"})


def load_config(path: Path | None, explicit: bool = False) -> Config:
    """Read `[tool.syncscan]` from a pyproject.toml (or a bare syncscan TOML).

    A file named explicitly (`--config`) must exist; a discovered one may not.
    """
    if path is None:
        return Config()
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: configuration file does not exist")
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from exc
    table: Any = data.get("tool", {}).get("syncscan") if path.name == "pyproject.toml" else data
    if table is None:
        return Config()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.syncscan] must be a table")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key 'tool.syncscan.{unknown[0]}'")
    values: dict[str, Any] = {}
    for key in _LIST_KEYS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: 'tool.syncscan.{key}' must be a list of strings")
        values[key] = tuple(value)
    severity = table.get("severity", {})
    if not isinstance(severity, dict) or not all(
        isinstance(v, str) and v in _SEVERITIES for v in severity.values()
    ):
        raise ConfigError(
            f"{path}: 'tool.syncscan.severity' must map rule codes to error|warning|note"
        )
    cache_dir = table.get("cache_dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{path}: 'tool.syncscan.cache_dir' must be a string")
    base = path.parent
    inline = {key: table[key] for key in _PACK_TABLES if key in table}
    for key, rows in inline.items():
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ConfigError(f"{path}: 'tool.syncscan.{key}' must be an array of tables")
    return Config(
        inline_pack=_inline_pack(inline) if inline else {},
        source=str(path),
        packs=tuple(str((base / p).resolve()) for p in values["packs"]),
        disable_packs=values["disable_packs"],
        exclude=values["exclude"],
        select=values["select"],
        ignore=values["ignore"],
        severity=dict(severity),
        cache_dir=str((base / cache_dir).resolve()) if cache_dir else None,
    )


@dataclass
class Project:
    """The files of one analysed tree, by module name."""

    root: Path
    modules: dict[str, Path]  # module name -> file
    packages: frozenset[str]  # module names that are packages (__init__.py)
    config: Config
    _relpaths: dict[str, str] = field(default_factory=dict, repr=False)

    def relpath(self, path: str | Path) -> str:
        """`path` relative to the root, with "/" separators (cached: called per step)."""
        key = str(path)
        cached = self._relpaths.get(key)
        if cached is None:
            candidate = Path(path)
            cached = candidate.as_posix()
            for form in _forms(candidate):
                try:
                    cached = form.relative_to(self.root).as_posix()
                    break
                except ValueError:
                    continue
            self._relpaths[key] = cached
        return cached

    @property
    def cache_dir(self) -> Path:
        """[tool.syncscan] cache_dir, else <root>/.syncscan_cache (--cache-dir overrides)."""
        configured = self.config.cache_dir
        return Path(configured) if configured else self.root / ".syncscan_cache"

    def has_package(self, name: str) -> bool:
        return name in self.packages


def _forms(path: Path):
    """`path` as given (made absolute), then with links resolved (only if needed)."""
    yield path.absolute()
    yield path.resolve()


def find_config(root: Path) -> Path | None:
    """The nearest pyproject.toml at or above `root` that has [tool.syncscan]."""
    for directory in (root, *root.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return candidate  # load_config reports the problem
            if "syncscan" in data.get("tool", {}):
                return candidate
        if (directory / ".git").exists():
            break
    return None


_VCS_MARKERS = (".git", ".hg", ".svn")


def vcs_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that is a version-control checkout."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in _VCS_MARKERS):
            return directory
    return None


def project_root_of(file: Path) -> Path:
    """The project a file belongs to, found the way ruff and pytest find theirs.

    The nearest directory above the file holding a `pyproject.toml`, else the
    nearest version-control root, else the directory above its top-level
    package (the file's own directory when it is in no package).
    """
    start = file.resolve().parent
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
        if any((directory / marker).exists() for marker in _VCS_MARKERS):
            return directory
    top = start
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    return top


def discover(root: Path, config: Config) -> Project:
    """List the Python files under `root` and name their modules.

    A module's name runs up through the directories holding an `__init__.py`
    (above the root too, so analysing `src/pkg` still names `pkg.mod`).
    Package-ness is decided once per directory: this runs on every invocation.
    """
    root = root.resolve()
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    prefixes: dict[str, tuple[str, ...] | None] = {}  # directory -> its package path

    def above_root(directory: Path) -> tuple[str, ...] | None:
        parts: list[str] = []
        while (directory / "__init__.py").is_file():
            parts.insert(0, directory.name)
            directory = directory.parent
        return tuple(parts) if parts else None

    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if dirpath == str(root):
            prefix = above_root(root)
        else:
            parent, name = os.path.split(dirpath)
            outer = prefixes.get(parent)
            prefix = ((*outer, name) if outer else (name,)) if "__init__.py" in filenames else None
        prefixes[dirpath] = prefix
        relative_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            rel = filename if relative_dir == "." else f"{relative_dir}/{filename}"
            if any(fnmatch.fnmatch(rel, pattern) for pattern in config.exclude):
                continue
            parts = (*(prefix or ()), *(() if filename == "__init__.py" else (filename[:-3],)))
            if not parts or not all(p.isidentifier() for p in parts):
                continue
            name = ".".join(parts)
            if filename == "__init__.py":
                packages.add(name)
            modules.setdefault(name, Path(dirpath, filename))
    return Project(root=root, modules=modules, packages=frozenset(packages), config=config)


def _inline_pack(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Pack rows written in [tool.syncscan] as a pack of their own."""
    meta = {"name": "project-config", "description": "rows from [tool.syncscan]"}
    return {"pack": meta, **tables}
