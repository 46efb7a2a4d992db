"""Packs: API semantics and framework profiles as rows of data.

`rules/packs/torch.toml` says what each PyTorch call means for host/device
ordering; a framework pack (`vllm.toml`) names the step roots, the resolution
methods, mode labels and peer-bounded modes. Users add packs of their own from
`[tool.syncscan] packs = [...]`. The engine reads only these dataclasses.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from syncscan.filesystem import read_regular_text
from syncscan.project import ConfigError, Project

BUILTIN_SOURCE = "syncscan.rules/packs/"


@dataclass(frozen=True)
class StepRootSpec:
    cls: str
    method: str
    subclasses: bool
    continuation: tuple[str, ...]
    pack: str
    source: str = ""  # the pack file (or pyproject.toml) the row comes from
    # A dummy batch: its device work computes nothing anyone reads, so only its
    # host writes matter (to the steps whose accesses may still be pending).
    discards_output: bool = False
    # The stream current when the loop calls the step, as an attribute of the
    # root object (`self.schedule_stream`), where the loop runs inside that
    # stream's context: the step's own work is on it, not on the default stream.
    stream: str = ""

    @property
    def builtin(self) -> bool:
        return self.source.startswith(BUILTIN_SOURCE)


@dataclass(frozen=True)
class QuiescenceSpec:
    """A transition whose completion promises an idle (or ready) device."""

    function: str
    subclasses: bool
    busy_on_entry: bool
    why: str
    pack: str
    exclude: tuple[str, ...] = ()  # subclasses whose override is not this transition
    source: str = ""  # the pack file (or pyproject.toml) the row comes from

    @property
    def builtin(self) -> bool:
        return self.source.startswith(BUILTIN_SOURCE)


@dataclass(frozen=True)
class RpcDispatch:
    """Calls of `method` run the receiver method named by one of their arguments."""

    method: str
    name_argument: int
    name_keyword: str
    receivers: tuple[str, ...]
    # The receivers' method that waits for all their device work (a SYNC002 fix
    # calls it through this dispatch, adding it to the first receiver if absent).
    barrier_method: str = ""


@dataclass(frozen=True)
class ModeLabel:
    predicate: str
    value: bool
    label: str


@dataclass(frozen=True)
class BoundedMode:
    predicate: str
    value: bool
    reason: str


@dataclass(frozen=True)
class UnreadUpload:
    """What `launched_in` copies to the device is read only by device work that
    does not run where `predicate` is `value` (a pack fact): there a race on it
    reaches no output."""

    launched_in: str
    predicate: str
    value: bool
    reason: str


@dataclass(frozen=True)
class DeadStore:
    """What `function` writes into `buffer` (named as witnesses name it:
    `Class.attribute`) is overwritten before anything reads it (a pack fact):
    a landing copy that overwrites it instead changes no result, so the host
    write races nothing and the walk does not record it."""

    function: str
    buffer: str
    reason: str


@dataclass(frozen=True)
class Vocabulary:
    """The merged API vocabulary of every active pack (lists are unioned)."""

    lists: dict[str, frozenset[str]] = field(default_factory=dict)
    scalars: dict[str, str] = field(default_factory=dict)

    def names(self, key: str) -> frozenset[str]:
        return self.lists.get(key, frozenset())

    def scalar(self, key: str, default: str) -> str:
        return self.scalars.get(key, default)


@dataclass(frozen=True)
class PackSet:
    """Everything the active packs say."""

    names: tuple[str, ...]
    vocabulary: Vocabulary
    step_roots: tuple[StepRootSpec, ...]
    resolution_methods: frozenset[str]
    mode_labels: tuple[ModeLabel, ...]
    bounded_modes: tuple[BoundedMode, ...]
    sources: tuple[str, ...]
    quiescence: tuple[QuiescenceSpec, ...] = ()
    rpc: tuple[RpcDispatch, ...] = ()
    # Modes whose device work uses none of the step's uploaded inputs for an
    # output (an encoder-only producer): a torn upload there changes no result.
    unread_modes: tuple[BoundedMode, ...] = ()
    unread_uploads: tuple[UnreadUpload, ...] = ()
    dead_stores: tuple[DeadStore, ...] = ()

    def label_for(self, predicate: str, value: bool) -> str | None:
        for row in self.mode_labels:
            if row.predicate == predicate and row.value == value:
                return row.label
        return None

    def labels_text(self, mode: tuple[tuple[str, bool], ...]) -> str:
        """The pack labels of a mode's predicates, joined ("" when none is labelled)."""
        return ", ".join(label for k, v in mode if (label := self.label_for(k, v)))

    def bounded_reason(self, predicate: str, value: bool) -> str | None:
        return _reason(self.bounded_modes, predicate, value)

    def unread_reason(self, predicate: str, value: bool) -> str | None:
        return _reason(self.unread_modes, predicate, value)

    def unread_upload(
        self, functions: set[str], assumptions: tuple[tuple[str, bool], ...]
    ) -> str | None:
        """Why an upload launched through `functions` reaches no output under
        `assumptions`, if a pack row says so."""
        for row in self.unread_uploads:
            if row.launched_in in functions and (row.predicate, row.value) in assumptions:
                return row.reason
        return None


def _reason(rows: tuple[BoundedMode, ...], predicate: str, value: bool) -> str | None:
    for row in rows:
        if row.predicate == predicate and row.value == value:
            return row.reason
    return None


_PACK_KEYS = frozenset(
    {
        "pack",
        "vocabulary",
        "step_root",
        "resolution",
        "mode",
        "bounded_mode",
        "unread_mode",
        "unread_upload",
        "dead_store",
        "quiescence",
        "rpc",
    }
)
# The keys each table's rows may hold: a misspelt key is named as unknown, not
# reported as a missing one.
_ROW_KEYS: dict[str, frozenset[str]] = {
    "pack": frozenset({"name", "description", "activate_when_package", "always"}),
    "step_root": frozenset(
        {"class", "method", "subclasses", "continuation", "discards_output", "stream"}
    ),
    "resolution": frozenset({"method"}),
    "mode": frozenset({"predicate", "value", "label"}),
    "bounded_mode": frozenset({"predicate", "value", "reason"}),
    "unread_mode": frozenset({"predicate", "value", "reason"}),
    "unread_upload": frozenset({"launched_in", "predicate", "value", "reason"}),
    "dead_store": frozenset({"function", "buffer", "reason"}),
    "quiescence": frozenset({"function", "subclasses", "busy_on_entry", "why", "exclude"}),
    "rpc": frozenset({"method", "name_argument", "name_keyword", "receivers", "barrier_method"}),
}


def _builtin_pack_texts() -> list[tuple[str, str]]:
    packs_dir = resources.files("syncscan.rules").joinpath("packs")
    out = []
    for entry in sorted(packs_dir.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out.append((f"syncscan.rules/packs/{entry.name}", entry.read_text(encoding="utf-8")))
    return out


def _parse(source: str, text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: pack is not valid TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib recurses once per nesting level
        raise ConfigError(f"{source}: pack is not valid TOML: nested too deeply") from exc
    return _checked(source, data)


def _checked(source: str, data: dict[str, Any]) -> dict[str, Any]:
    """A pack's tables, checked for shape (from a file or from [tool.syncscan])."""
    unknown = sorted(set(data) - _PACK_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown pack table '{unknown[0]}'")
    if not isinstance(data.get("pack"), dict) or "name" not in data["pack"]:
        raise ConfigError(f"{source}: a pack needs [pack] with a name")
    for table, allowed in _ROW_KEYS.items():
        rows = data.get(table, [])
        for row in rows if isinstance(rows, list) else [rows]:
            if not isinstance(row, dict):
                continue
            for key in sorted(set(row) - allowed):
                close = difflib.get_close_matches(key, sorted(allowed), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ConfigError(
                    f"{source}: unknown key '{key}' in [{table}] {row}{hint}; "
                    f"known keys: {', '.join(sorted(allowed))}"
                )
    return data


def check_disabled(project: Project, names: list[str]) -> None:
    """`disable_packs` must name packs that exist: a typo would leave one active."""
    for name in project.config.disable_packs:
        if name not in names:
            raise ConfigError(
                f"{project.config.source}: 'tool.syncscan.disable_packs' names no pack: "
                f"{name!r} (packs: {', '.join(names)})"
            )


_NO_DEFAULT = object()


def _require(
    source: str, row: dict[str, Any], key: str, kind: type, default: Any = _NO_DEFAULT
) -> Any:
    """row[key], checked to be a `kind` (or `default` when the key is absent)."""
    if key not in row and default is not _NO_DEFAULT:
        return default
    value = row.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{source}: '{key}' must be a {kind.__name__} in {row}")
    return value


def _strings(source: str, row: dict[str, Any], key: str) -> tuple[str, ...]:
    """row[key] as a tuple of strings (empty when absent)."""
    values = _require(source, row, key, list, [])
    if not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{source}: '{key}' must be a list of strings in {row}")
    return tuple(values)


# The fields of the tables whose rows are all required, in their dataclass's order.
_MODE_LABEL = (("predicate", str), ("value", bool), ("label", str))
_MODE_REASON = (("predicate", str), ("value", bool), ("reason", str))
_UNREAD_UPLOAD = (("launched_in", str), *_MODE_REASON)
_DEAD_STORE = (("function", str), ("buffer", str), ("reason", str))


def _rows(
    source: str, data: dict[str, Any], table: str, make: Any, fields: tuple[tuple[str, type], ...]
) -> list[Any]:
    """`make(...)` of each row of `table`, every field checked to be of its type."""
    return [
        make(*(_require(source, row, key, kind) for key, kind in fields))
        for row in data.get(table, [])
    ]


def load_packs(project: Project) -> PackSet:
    """Load the built-in packs that apply to `project`, then the user's packs."""
    packs = [(source, _parse(source, text)) for source, text in _builtin_pack_texts()]
    if project.config.inline_pack:
        source = str(project.config.source)
        packs.append((source, _checked(source, project.config.inline_pack)))
    for path in project.config.packs:
        try:
            text = read_regular_text(path)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigError(
                f"{project.config.source}: cannot read pack {path}: {reason}"
            ) from exc
        packs.append((path, _parse(path, text)))
    check_disabled(project, [str(data["pack"]["name"]) for _, data in packs])
    lists: dict[str, set[str]] = {}
    scalars: dict[str, str] = {}
    names: list[str] = []
    sources: list[str] = []
    roots: list[StepRootSpec] = []
    resolution: set[str] = set()
    labels: list[ModeLabel] = []
    bounded: list[BoundedMode] = []
    unread: list[BoundedMode] = []
    uploads: list[UnreadUpload] = []
    dead: list[DeadStore] = []
    quiescence: list[QuiescenceSpec] = []
    rpc: list[RpcDispatch] = []
    for source, data in packs:
        meta = data["pack"]
        name = str(meta["name"])
        if name in project.config.disable_packs:
            continue
        trigger = meta.get("activate_when_package")
        if trigger is not None and not project.has_package(str(trigger)):
            continue
        names.append(name)
        sources.append(source)
        for key, value in data.get("vocabulary", {}).items():
            if isinstance(value, list):
                lists.setdefault(key, set()).update(str(v) for v in value)
            else:
                scalars[key] = str(value)
        for row in data.get("step_root", []):
            roots.append(
                StepRootSpec(
                    cls=_require(source, row, "class", str),
                    method=_require(source, row, "method", str),
                    subclasses=_require(source, row, "subclasses", bool, True),
                    continuation=_strings(source, row, "continuation"),
                    pack=name,
                    source=source,
                    discards_output=_require(source, row, "discards_output", bool, False),
                    stream=_require(source, row, "stream", str, ""),
                )
            )
        for row in data.get("resolution", []):
            resolution.add(_require(source, row, "method", str))
        labels += _rows(source, data, "mode", ModeLabel, _MODE_LABEL)
        for row in data.get("quiescence", []):
            quiescence.append(
                QuiescenceSpec(
                    function=_require(source, row, "function", str),
                    subclasses=_require(source, row, "subclasses", bool, True),
                    busy_on_entry=_require(source, row, "busy_on_entry", bool, True),
                    why=_require(source, row, "why", str, ""),
                    pack=name,
                    exclude=_strings(source, row, "exclude"),
                    source=source,
                )
            )
        for row in data.get("rpc", []):
            receivers = _strings(source, row, "receivers")
            if not receivers:
                raise ConfigError(f"{source}: 'receivers' must be a non-empty list in {row}")
            rpc.append(
                RpcDispatch(
                    method=_require(source, row, "method", str),
                    name_argument=_require(source, row, "name_argument", int, 0),
                    name_keyword=_require(source, row, "name_keyword", str, "method"),
                    receivers=receivers,
                    barrier_method=_require(source, row, "barrier_method", str, ""),
                )
            )
        uploads += _rows(source, data, "unread_upload", UnreadUpload, _UNREAD_UPLOAD)
        dead += _rows(source, data, "dead_store", DeadStore, _DEAD_STORE)
        bounded += _rows(source, data, "bounded_mode", BoundedMode, _MODE_REASON)
        unread += _rows(source, data, "unread_mode", BoundedMode, _MODE_REASON)
    return PackSet(
        quiescence=tuple(quiescence),
        rpc=tuple(rpc),
        names=tuple(names),
        vocabulary=Vocabulary({k: frozenset(v) for k, v in lists.items()}, scalars),
        step_roots=tuple(roots),
        resolution_methods=frozenset(resolution),
        mode_labels=tuple(labels),
        bounded_modes=tuple(bounded),
        unread_modes=tuple(unread),
        unread_uploads=tuple(uploads),
        dead_stores=tuple(dead),
        sources=tuple(sources),
    )
