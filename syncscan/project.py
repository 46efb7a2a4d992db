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

from syncscan.filesystem import read_regular_text

SKIP_DIRS = frozenset(
    {".git", ".hg", "__pycache__", ".venv", "venv", ".tox", "node_modules", "build", "dist"}
)


# About 15x the largest file of a vLLM release; the 56 MB generated module that
# prompted the limit took 12 GB and minutes inside the parser.
DEFAULT_MAX_FILE_SIZE = 5_000_000


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
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes; a larger file is skipped, not parsed
    inline_pack: dict[str, Any] = field(default_factory=dict)  # [tool.syncscan] rows, as a pack


_LIST_KEYS = ("packs", "disable_packs", "exclude", "select", "ignore")
_PACK_TABLES = ("step_root", "quiescence", "rpc", "mode", "bounded_mode", "resolution")
_KNOWN_KEYS = frozenset((*_LIST_KEYS, *_PACK_TABLES, "severity", "cache_dir", "max_file_size"))
_SEVERITIES = frozenset({"error", "warning", "note"})


def load_config(path: Path | None, explicit: bool = False) -> Config:
    """Read `[tool.syncscan]` from a pyproject.toml (or a bare syncscan TOML).

    A file named explicitly (`--config`) must exist; a discovered one may not.
    """
    if path is None:
        return Config()
    if not path.exists():
        if explicit:
            raise ConfigError(f"{path}: configuration file does not exist")
        return Config()
    data = _read_toml(path)
    tool = data.get("tool", {}) if path.name == "pyproject.toml" else {"syncscan": data}
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: [tool] must be a table")
    table: Any = tool.get("syncscan")
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
    max_file_size = table.get("max_file_size", DEFAULT_MAX_FILE_SIZE)
    if type(max_file_size) is not int or max_file_size < 1:
        raise ConfigError(
            f"{path}: 'tool.syncscan.max_file_size' must be a positive integer (bytes)"
        )
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
        max_file_size=max_file_size,
    )


@dataclass
class Project:
    """The files of one analysed tree, by module name."""

    root: Path
    modules: dict[str, Path]  # module name -> file
    packages: frozenset[str]  # module names that are packages (__init__.py)
    config: Config
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # files not named, and why
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


def _read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables, or ConfigError naming the file and why."""
    try:
        return tomllib.loads(read_regular_text(path))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from exc
    except RecursionError as exc:  # tomllib recurses once per nesting level
        raise ConfigError(f"{path}: cannot read configuration: nested too deeply") from exc


def find_config(root: Path) -> Path | None:
    """The nearest pyproject.toml at or above `root` that has [tool.syncscan]."""
    for directory in (root, *root.parents):
        candidate = directory / "pyproject.toml"
        if candidate.exists():  # a directory or FIFO of that name is an error, not "none"
            try:
                tool = _read_toml(candidate).get("tool", {})
            except ConfigError:
                return candidate  # load_config reports the problem
            if not isinstance(tool, dict) or "syncscan" in tool:
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
    (above the root too, so analysing `src/pkg` still names `pkg.mod`). A
    directory without one is a namespace package (PEP 420): inside a package
    it extends the name (`pkg/ns/mod.py` is `pkg.ns.mod`); below the root it
    starts one (`tools/x.py` is `tools.x`), while a regular package under it
    starts its own name, as a `src/` layout expects. A file that cannot get a
    name (a part that is not an identifier, a name another file already has)
    or a directory that cannot be listed is reported in `skipped`, never
    dropped silently. Package-ness is decided once per directory: this runs on
    every invocation.
    """
    root = root.resolve()
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    skipped: list[tuple[Path, str]] = []
    # directory -> (its package path, or None when its files cannot be named;
    #               whether a regular package encloses it)
    prefixes: dict[str, tuple[tuple[str, ...] | None, bool]] = {}

    def above_root(directory: Path) -> tuple[str, ...]:
        parts: list[str] = []
        while directory.name.isidentifier() and (directory / "__init__.py").is_file():
            parts.insert(0, directory.name)
            directory = directory.parent
        return tuple(parts)

    def unlistable(error: OSError) -> None:
        where = Path(error.filename) if error.filename else root
        skipped.append((where, f"directory not analysed: {error.strerror or error}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlistable):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if dirpath == str(root):
            outside = above_root(root)
            prefix, rooted = outside, bool(outside)
        else:
            parent, name = os.path.split(dirpath)
            prefix, rooted = _package_path(prefixes[parent], name, "__init__.py" in filenames)
        prefixes[dirpath] = (prefix, rooted)
        if prefix:
            packages.add(".".join(prefix))
        relative_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            rel = filename if relative_dir == "." else f"{relative_dir}/{filename}"
            if any(fnmatch.fnmatch(rel, pattern) for pattern in config.exclude):
                continue
            path = Path(dirpath, filename)
            stem = filename[:-3]
            if prefix is None:
                skipped.append((path, f"not analysed: {relative_dir!r} is not a package name"))
                continue
            if not stem.isidentifier():
                skipped.append((path, f"not analysed: {stem!r} is not a module name"))
                continue
            parts = (*prefix, *(() if filename == "__init__.py" else (stem,)))
            if not parts:
                continue  # the root's own __init__.py outside any package: nothing imports it
            name = ".".join(parts)
            if name in modules:
                other = os.path.relpath(modules[name], root).replace(os.sep, "/")
                skipped.append((path, f"not analysed: module {name} is already {other}"))
                continue
            modules[name] = path
    return Project(
        root=root,
        modules=modules,
        packages=frozenset(packages),
        config=config,
        skipped=sorted(skipped),
    )


def _package_path(
    parent: tuple[tuple[str, ...] | None, bool], name: str, regular: bool
) -> tuple[tuple[str, ...] | None, bool]:
    """A directory's (package path, enclosed by a regular package) from its parent's."""
    outer, rooted = parent
    if not name.isidentifier():
        return None, False  # its files have no name; a regular package below starts afresh
    if regular:
        return ((*outer, name) if rooted and outer is not None else (name,)), True
    return ((*outer, name) if outer is not None else None), rooted


def _inline_pack(tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Pack rows written in [tool.syncscan] as a pack of their own."""
    meta = {"name": "project-config", "description": "rows from [tool.syncscan]"}
    return {"pack": meta, **tables}
