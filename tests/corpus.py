"""The measuring corpus: mutation entries and triage verdicts, loaded from TOML.

Both the pytest modules and the bench scripts read the same files through this
module, so a CI test and a manual `python bench/...` run judge the engine by one
definition of "reported" and "reviewed".
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MUTATION_DIR = REPO / "tests" / "mutation"
TRIAGE_FILE = REPO / "tests" / "triage" / "vllm.toml"

# The last patch of every vLLM minor from 0.10 to the newest the index lists.
RELEASES = (
    *("0.10.2", "0.11.2", "0.12.0", "0.13.0", "0.14.1", "0.15.1", "0.16.0", "0.17.1"),
    *("0.18.1", "0.19.1", "0.20.2", "0.21.0", "0.22.1", "0.23.0", "0.24.0", "0.25.1"),
    *("0.26.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"),
)

# The last patch of every SGLang 0.4 minor, and the last patch of every 0.5.x
# release (their `.postN` rebuilds: the package index lists them all).
SGLANG_RELEASES = (
    *("0.4.0.post2", "0.4.1.post7", "0.4.2.post4", "0.4.3.post4", "0.4.4.post4"),
    *("0.4.5.post3", "0.4.6.post5", "0.4.7.post1", "0.4.8.post1", "0.4.9.post6"),
    *("0.4.10.post2", "0.5.1.post3", "0.5.2", "0.5.3.post3", "0.5.4.post3", "0.5.5.post3"),
    *("0.5.6.post2", "0.5.7", "0.5.8.post1", "0.5.9", "0.5.10.post1", "0.5.11"),
    *("0.5.12.post1", "0.5.13.post1", "0.5.14", "0.5.15.post1", "0.5.16", "0.5.17"),
    *("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"),
)


@dataclass(frozen=True)
class Engine:
    """An engine the corpus sweeps: its package, its releases, its triage file."""

    package: str
    releases: tuple[str, ...]
    triage: Path


ENGINES = {
    "vllm": Engine("vllm", RELEASES, TRIAGE_FILE),
    "sglang": Engine("sglang", SGLANG_RELEASES, REPO / "tests" / "triage" / "sglang.toml"),
}

CODES = ("SYNC001", "SYNC002", "SYNC003", "SYNC004")
FAMILY_CODE = {1: "SYNC001", 2: "SYNC002", 3: "SYNC003", 4: "SYNC004"}
# "unmarked" (SYNC005 only): a host sync the engine means to make (the code needs
# the value, or the feature exists to wait) but did not wrap in its sanctioned
# region or mark; it stalls overlapping steps all the same.
VERDICTS = ("bug", "unmarked", "false-positive", "unclear")
REVIEWED_SEVERITIES = ("error", "warning")


class CorpusError(ValueError):
    """A corpus file does not say what the harness needs; the message says where."""


def version(text: str) -> tuple[int, ...]:
    """`0.25.1` -> (0, 25, 1) and `0.4.9.post6` -> (0, 4, 9, 6), for ordering releases."""
    try:
        return tuple(int(part.removeprefix("post")) for part in text.split("."))
    except ValueError as error:
        raise CorpusError(f"{text!r} is not a release number like 0.25.1") from error


# ---------------------------------------------------------------------------- findings
@dataclass(frozen=True, order=True)
class Record:
    """One finding as the sweep stores it: the fields a verdict is keyed on."""

    release: str
    code: str
    severity: str
    function: str
    mode_label: str
    path: str
    line: int
    fingerprint: str
    step_root: str = ""  # the root the finding was found from (SYNC002: the transition)
    # The functions the witness path passes through (not part of the identity).
    witness_functions: tuple[str, ...] = field(default=(), compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        """Path- and line-independent identity: survives engine rewrites."""
        return (self.code, self.function, self.mode_label)

    def as_json(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "mode_label": self.mode_label,
            "fingerprint": self.fingerprint,
            "step_root": self.step_root,
        }


def record_from(release: str, data: Mapping[str, Any]) -> Record:
    """A Record from one finding of `syncscan check --format json` (or finding_data)."""
    return Record(
        release=release,
        code=str(data["code"]),
        severity=str(data["severity"]),
        function=str(data.get("function") or ""),
        mode_label=str(data.get("mode_label") or ""),
        path=str(data["path"]),
        line=int(data["line"]),
        fingerprint=str(data["fingerprint"]),
        step_root=str(data.get("step_root") or ""),
        witness_functions=tuple(str(w.get("function") or "") for w in data.get("witness") or ()),
    )


# ---------------------------------------------------------------------------- mutations
@dataclass(frozen=True)
class Mutation:
    """A bug re-introduced into (or a behaviour-preserving edit of) a fixed release."""

    id: str
    release: str
    family: int
    kind: str  # "bug" | "benign"
    file: str
    edits: tuple[tuple[str, str], ...]  # (old, new), applied in order
    code: str | None  # expected rule code for a bug; None for benign
    functions: tuple[str, ...]  # acceptable qualnames of the finding (bug only)
    why: str
    source: str  # the TOML file it came from, for messages


def _text(entry: Mapping[str, Any], name: str, where: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or not value:
        raise CorpusError(f"{where}: '{name}' must be a non-empty string")
    return value


def _mutation(entry: Mapping[str, Any], source: str) -> Mutation:
    where = f"{source}: mutation {entry.get('id', '?')!r}"
    ident = _text(entry, "id", where)
    kind = _text(entry, "kind", where)
    if kind not in ("bug", "benign"):
        raise CorpusError(f"{where}: kind must be 'bug' or 'benign', not {kind!r}")
    family = entry.get("family")
    if family not in FAMILY_CODE:
        raise CorpusError(f"{where}: family must be one of {sorted(FAMILY_CODE)}")
    edits = [(_text(entry, "old", where), str(entry.get("new", "")))]
    for pair in entry.get("also", []):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(t, str) for t in pair)
        ):
            raise CorpusError(f"{where}: 'also' holds [old, new] pairs of strings")
        edits.append((pair[0], pair[1]))
    if any(old == new for old, new in edits):
        raise CorpusError(f"{where}: an edit whose new text equals its old text changes nothing")
    code = entry.get("expected")
    functions = entry.get("function", [])
    functions = (functions,) if isinstance(functions, str) else tuple(functions)
    if kind == "bug":
        if code not in CODES:
            raise CorpusError(f"{where}: a bug needs 'expected' = one of {CODES}")
        if not functions:
            raise CorpusError(f"{where}: a bug needs the 'function' the finding must name")
    elif code is not None or functions:
        raise CorpusError(f"{where}: a benign edit expects no finding (no 'expected'/'function')")
    return Mutation(
        id=ident,
        release=_text(entry, "release", where),
        family=int(family),
        kind=kind,
        file=_text(entry, "file", where),
        edits=tuple(edits),
        code=code,
        functions=functions,
        why=_text(entry, "why", where),
        source=source,
    )


def load_mutations(directory: Path = MUTATION_DIR) -> list[Mutation]:
    """Every `[[mutation]]` of every TOML file in `directory`, ids unique."""
    found: list[Mutation] = []
    for path in sorted(directory.glob("*.toml")):
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        found.extend(_mutation(entry, path.name) for entry in data.get("mutation", []))
    seen: set[str] = set()
    for mutation in found:
        if mutation.id in seen:
            raise CorpusError(f"{mutation.source}: duplicate mutation id {mutation.id!r}")
        seen.add(mutation.id)
    return found


def edit_text(mutation: Mutation, text: str) -> str:
    """The file's text with the mutation applied; each `old` must occur exactly once."""
    for n, (old, new) in enumerate(mutation.edits):
        count = text.count(old)
        if count != 1:
            raise CorpusError(
                f"{mutation.id}: edit {n} of {mutation.file} in vLLM {mutation.release}: "
                f"old text occurs {count} times, expected exactly once:\n{old}"
            )
        text = text.replace(old, new)
    return text


def apply_mutation(mutation: Mutation, tree: Path) -> str:
    """Edit `tree` (a writable copy of the release) in place; return the original text."""
    target = tree / mutation.file
    original = target.read_text(encoding="utf-8")
    target.write_text(edit_text(mutation, original), encoding="utf-8")
    return original


# ---------------------------------------------------------------------------- triage
@dataclass(frozen=True)
class Verdict:
    """A reviewed finding: where it was seen, what it is, and the evidence."""

    releases: tuple[str, ...]
    code: str
    function: str
    mode: str
    fingerprints: tuple[str, ...]
    verdict: str
    why: str
    fixed_in: str | None
    reported: bool  # False: a bug found by reading the code that syncscan should report

    def matches(self, record: Record) -> bool:
        """Same release and either the same fingerprint or code + function + mode.

        Mode "*" matches any mode label (for bugs found by review, whose label the
        engine has yet to choose)."""
        if record.release not in self.releases:
            return False
        if record.fingerprint in self.fingerprints:
            return True
        mode_ok = self.mode == "*" or record.mode_label == self.mode
        return mode_ok and (record.code, record.function) == (self.code, self.function)


def _verdict(entry: Mapping[str, Any], n: int, engine: Engine) -> Verdict:
    where = f"{engine.triage.name}: entry {n} ({entry.get('function', '?')})"
    releases = entry.get("releases", [entry["release"]] if "release" in entry else [])
    if not releases or not all(r in engine.releases for r in releases):
        raise CorpusError(f"{where}: 'release'/'releases' must name swept releases")
    verdict = _text(entry, "verdict", where)
    if verdict not in VERDICTS:
        raise CorpusError(f"{where}: verdict must be one of {VERDICTS}")
    code = _text(entry, "code", where)
    if entry.get("reported") is False and verdict != "bug":
        raise CorpusError(f"{where}: only a bug can be listed as expected but not reported")
    fingerprints = entry.get("fingerprint", [])
    fingerprints = (fingerprints,) if isinstance(fingerprints, str) else tuple(fingerprints)
    fixed_in = entry.get("fixed_in")
    if fixed_in is not None and (
        not isinstance(fixed_in, str) or any(version(fixed_in) <= version(r) for r in releases)
    ):
        raise CorpusError(f"{where}: fixed_in {fixed_in!r} must be a release after all of its own")
    return Verdict(
        releases=tuple(releases),
        code=code,
        function=_text(entry, "function", where),
        mode=str(entry.get("mode", "")),
        fingerprints=fingerprints,
        verdict=verdict,
        why=_text(entry, "why", where),
        fixed_in=fixed_in,
        reported=bool(entry.get("reported", True)),
    )


def load_triage(engine: str = "vllm") -> list[Verdict]:
    """The verdicts of one engine's triage file (none yet: an empty corpus)."""
    spec = ENGINES[engine]
    if not spec.triage.is_file():
        return []
    with spec.triage.open("rb") as handle:
        data = tomllib.load(handle)
    return [_verdict(entry, n, spec) for n, entry in enumerate(data.get("finding", []))]


def verdict_for(record: Record, verdicts: Iterable[Verdict]) -> Verdict | None:
    return next((v for v in verdicts if v.matches(record)), None)


def toml_entry(record: Record) -> str:
    """A `[[finding]]` block ready to paste into the triage file (verdict to fill in)."""
    return "\n".join(
        [
            "[[finding]]",
            f'releases = ["{record.release}"]',
            f'code = "{record.code}"',
            f'function = "{record.function}"',
            f"mode = {_toml_string(record.mode_label)}",
            f'fingerprint = ["{record.fingerprint}"]',
            'verdict = "unclear"  # bug | unmarked | false-positive | unclear',
            f'why = "TODO: read {record.path}:{record.line} ({record.severity})"',
            "",
        ]
    )


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------------------- review
@dataclass(frozen=True)
class Review:
    """How a set of findings stands against the triage corpus."""

    records: tuple[Record, ...]  # the reviewed severities only
    verdicts: dict[Record, Verdict]  # each reviewed record with its entry
    unreviewed: tuple[Record, ...]
    lost: tuple[tuple[str, Verdict], ...]  # (release, bug entry) no finding matches

    def count(self, verdict: str, severity: str | None = None) -> int:
        return sum(
            v.verdict == verdict and (severity is None or r.severity == severity)
            for r, v in self.verdicts.items()
        )

    @property
    def error_bug_share(self) -> float | None:
        """Share of error findings whose verdict is `bug` (None: no error findings)."""
        errors = [r for r in self.records if r.severity == "error"]
        if not errors:
            return None
        bugs = sum(r in self.verdicts and self.verdicts[r].verdict == "bug" for r in errors)
        return bugs / len(errors)


def review(records: Iterable[Record], verdicts: list[Verdict], releases: Iterable[str]) -> Review:
    """Match the findings of `releases` with the corpus: who is reviewed, which bug is lost."""
    swept = set(releases)
    reviewed = tuple(
        sorted(r for r in records if r.severity in REVIEWED_SEVERITIES and r.release in swept)
    )
    matched = {r: v for r in reviewed if (v := verdict_for(r, verdicts)) is not None}
    lost = tuple(
        (release, v)
        for v in verdicts
        if v.verdict == "bug"
        for release in v.releases
        if release in swept and not any(v.matches(r) for r in reviewed if r.release == release)
    )
    return Review(
        records=reviewed,
        verdicts=matched,
        unreviewed=tuple(r for r in reviewed if r not in matched),
        lost=tuple(sorted(lost, key=lambda pair: (pair[0], pair[1].function))),
    )
