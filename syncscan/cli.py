"""Command line: check | audit | explain | rules | config.

Exit codes: 0 clean, 1 findings at or above --fail-on (or a result that is
incomplete because a file the step path needs was skipped, or unused
suppressions under --report-unused-ignores), 2 usage or configuration error
(and, under --strict, a run that analysed nothing), or an internal error
(whatever `--exit-zero` says: a crash is never read as clean or as findings).
Bad input files never stop a run: they are reported as skipped.

The analysis is imported only when a command needs it, so `--version` and
`--help` answer at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from syncscan import __version__
from syncscan.project import ConfigError, project_root_of, vcs_root

if TYPE_CHECKING:
    from rich.console import Console

    from syncscan.report.audit_model import Audit
    from syncscan.report.result import RunResult
    from syncscan.runner import Options

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
TRACEBACK_ENV = "SYNCSCAN_TRACEBACK"
_SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}
# `console` is the old name of `full`.
_FORMATS = ("full", "concise", "console", "json", "sarif", "github", "markdown")
_TEXT_FORMATS = ("full", "concise", "console")
_AUDIT_FORMATS = ("console", "json", "markdown", "html")


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syncscan",
        description="Find host/device synchronization bugs in GPU inference engine step loops.",
    )
    parser.add_argument("--version", action="version", version=f"syncscan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, many: bool) -> None:
        if many:
            p.add_argument(
                "paths", nargs="*", type=Path,
                help="a project directory (default: .), or files to report on",
            )  # fmt: skip
        else:
            p.add_argument("paths", nargs="?", type=Path, help="project root (default: .)")
        p.add_argument("--config", type=Path, help="a pyproject.toml or syncscan TOML file")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
        p.add_argument("--cache-dir", type=Path, help="summary cache location")
        p.add_argument(
            "--jobs", type=int, default=None,
            help="processes for cold indexing and for walking the step roots (default: the "
            "idle cores; indexing serial under --changed-only)",
        )  # fmt: skip
        p.add_argument(
            "-v", "--verbose", action="store_true",
            help="also print the run's figures to stderr (check), and the traceback of an "
            f"internal error (or set {TRACEBACK_ENV}=1)",
        )  # fmt: skip

    check = sub.add_parser("check", help="report findings (for CI and pre-commit)")
    common(check, many=True)
    check.add_argument("--select", action="append", default=[], help="only these rule codes")
    check.add_argument("--ignore", action="append", default=[], help="skip these rule codes")
    check.add_argument(
        "--output-format", "--format", dest="output_format", choices=_FORMATS, default="full",
        help="full (panels, the default), concise (one line per finding), json, sarif, "
        "github, markdown",
    )  # fmt: skip
    check.add_argument("--output", type=Path, help="write the report to this file")
    check.add_argument(
        "--statistics", action="store_true", help="count the findings per rule instead"
    )
    check.add_argument(
        "-q", "--quiet", action="store_true", help="only findings and what fails the run"
    )
    check.add_argument(
        "--fail-on", choices=("error", "warning", "note"), default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )  # fmt: skip
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument(
        "--allow-incomplete", action="store_true",
        help="exit 0 although a file the step path needs was skipped (it is still reported)",
    )  # fmt: skip
    check.add_argument(
        "--strict", action="store_true",
        help="exit 2 when the packs name step roots or quiescence points but none exist",
    )  # fmt: skip
    check.add_argument(
        "--changed-only", action="store_true",
        help="pre-commit mode: PATHS are changed files; exit 0 at once when there are none",
    )  # fmt: skip
    check.add_argument("--baseline", type=Path, help="report only findings not in this file")
    check.add_argument("--write-baseline", type=Path, help="record current findings and exit 0")
    check.add_argument(
        "--report-unused-ignores", action="store_true",
        help="report `# syncscan: ignore[...]` comments that suppress nothing (exit 1)",
    )  # fmt: skip
    check.add_argument(
        "--add-ignore", nargs="?", const="", default=None, metavar="REASON",
        help="write `# syncscan: ignore[CODE] REASON` on each finding's line, then exit 0",
    )  # fmt: skip
    check.add_argument(
        "--diff", action="store_true",
        help="print the verified fixes as a unified diff (nothing is written; exit 1 if any)",
    )  # fmt: skip
    check.add_argument(
        "--fix", action="store_true",
        help="apply the fixes that re-analysis verifies, then report what remains",
    )  # fmt: skip
    check.add_argument(
        "--source-root", type=Path,
        help="SARIF paths are relative to this directory (default: the repository root)",
    )  # fmt: skip

    audit = sub.add_parser("audit", help="every step root x mode, with its verdict")
    common(audit, many=False)
    audit.add_argument(
        "--format", dest="audit_format", choices=_AUDIT_FORMATS, default=None,
        help="console (the default: one table per root; -v adds each row's paths), json, "
        "markdown, html (one self-contained file)",
    )  # fmt: skip
    audit.add_argument("-o", "--output", type=Path, help="write the audit to this file")
    audit.add_argument(
        "--graph", choices=("dot", "mermaid", "json"),
        help="print the step-path call graph in this format instead of the audit",
    )  # fmt: skip
    audit.add_argument(
        "--source-url", metavar="TEMPLATE",
        help="link source lines in the HTML audit: {path} and {line} are filled in "
        "(e.g. https://github.com/ORG/REPO/blob/TAG/{path}#L{line})",
    )  # fmt: skip
    audit.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")

    config = sub.add_parser("config", help="print the effective configuration")
    common(config, many=False)

    explain = sub.add_parser("explain", help="a rule's documentation and remedy")
    explain.add_argument("code")

    sub.add_parser("rules", help="list the rules")
    return parser


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip().upper() for item in values for v in item.split(",") if v.strip())


def _target(paths: list[Path], changed_only: bool) -> tuple[Path, tuple[str, ...] | None]:
    """(project root, files to report on relative to it, or None for a full report).

    Files name their project: the nearest directory above them with a
    pyproject.toml, else the version-control root, else the top package's
    parent. Files of two projects in one call are refused.
    """
    files = [p for p in paths if not p.is_dir()]
    dirs = [p for p in paths if p.is_dir()]
    missing = [p for p in paths if not p.exists()]
    if missing and not changed_only:
        raise UsageError(f"path does not exist: {missing[0]}")
    if not files and not changed_only:
        if len(dirs) > 1:
            raise UsageError("give one project directory (or files)")
        return (dirs[0] if dirs else Path(".")), None
    if dirs:
        raise UsageError("give either one project directory or files, not both")
    existing = [p for p in files if p.exists()]
    roots: dict[Path, Path] = {}  # project root -> first file naming it
    for path in existing:
        roots.setdefault(project_root_of(path), path)
    if len(roots) > 1:
        (a, fa), (b, fb) = list(roots.items())[:2]
        raise UsageError(
            f"the files belong to different projects: {fa} is in {a}, {fb} is in {b}; "
            "run syncscan once per project"
        )
    root = next(iter(roots)) if roots else project_root_of(Path.cwd() / "_")
    changed = []
    for path in files:
        try:
            changed.append(path.absolute().resolve().relative_to(root).as_posix())
        except ValueError:
            raise UsageError(f"{path} is outside the project at {root}") from None
    return root, tuple(changed)


def _run(
    args: argparse.Namespace,
    err: Console,
    root: Path,
    options: Options,
    reuse: bool = False,
    *,
    config: Path | None = None,
    cache_dir: Path | None = None,
    jobs: int | None = None,
) -> RunResult:
    """The check the arguments ask for, on `root`; `config`, `cache_dir` and
    `jobs` override theirs (a fix's verification runs on a copy of the project)."""
    from syncscan import runner
    from syncscan.report.progress import reporting

    with reporting(err, quiet=getattr(args, "quiet", False)) as progress:
        return runner.run(
            root,
            config or args.config,
            _split(getattr(args, "select", [])),
            _split(getattr(args, "ignore", [])),
            use_cache=not args.no_cache,
            cache_dir=cache_dir or args.cache_dir,
            options=options,
            progress=progress,
            jobs=jobs or _jobs(args, options),
            walk_jobs=jobs or _walk_jobs(args),
            reuse_findings=reuse,
        )


def _jobs(args: argparse.Namespace, options: Options) -> int:
    """Indexing processes: serial under pre-commit (changed files: the summaries
    are cached, a pool would only start) unless asked; else one per idle core."""
    if options.changed is not None and args.jobs is None:
        return 1
    return _walk_jobs(args)


def _walk_jobs(args: argparse.Namespace) -> int:
    """Processes for the step roots' walks (taken only where they pay: a large
    step path that must be walked again): as asked, else one per idle core."""
    if args.jobs is not None:
        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        return args.jobs
    from syncscan.workers import default_jobs

    return default_jobs()


def _check(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan import baseline
    from syncscan.runner import Options

    if args.changed_only and not args.paths:
        return EXIT_CLEAN  # pre-commit with nothing to check
    if args.quiet and args.verbose:
        raise UsageError("-q and -v contradict each other")
    root, changed = _target(args.paths, args.changed_only)
    options = Options(
        changed=changed,
        baseline=args.baseline,
        report_unused_ignores=args.report_unused_ignores,
    )
    fixing = args.fix or args.diff
    if fixing and (args.add_ignore is not None or args.write_baseline):
        raise UsageError("--fix/--diff cannot be combined with --add-ignore or --write-baseline")
    result = _run(args, err, root, options, reuse=not fixing)
    if fixing:
        fixed = _fix(args, err, out, root, options, result)
        if isinstance(fixed, int):
            return fixed
        result = fixed
    if args.add_ignore is not None:
        return _add_ignore(args, err, result)
    if args.write_baseline:
        # Refreshing a baseline keeps what it already accepted.
        accepted = result.findings + result.baselined
        baseline.write(args.write_baseline, accepted)
        err.print(f"syncscan: wrote {len(accepted)} finding(s) to {args.write_baseline}")
        return EXIT_CLEAN
    _emit(args, out, result)
    if args.output_format not in _TEXT_FORMATS or args.output or args.statistics:
        _echo_diagnostics(err, result, args.quiet)  # a human reads stderr
    nothing = result.nothing_analysed
    if nothing:
        err.print(f"syncscan: warning: {nothing}")
    if args.verbose:
        figures = ", ".join(f"{key}={value}" for key, value in result.stats.items())
        err.print(f"syncscan: {figures}")
    if nothing and args.strict:
        return EXIT_ERROR
    return _exit_status(args, result)


def _exit_status(args: argparse.Namespace, result: RunResult) -> int:
    if args.exit_zero:
        return EXIT_CLEAN
    threshold = _SEVERITY_RANK[args.fail_on]
    failing = [f for f in result.findings if _SEVERITY_RANK.get(f.severity, 2) >= threshold]
    incomplete = result.incomplete and not args.allow_incomplete
    if failing or incomplete or result.unused_suppressions:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _echo_diagnostics(err: Console, result: RunResult, quiet: bool) -> None:
    """Diagnostics on stderr beside a machine-readable report (which carries them too)."""
    from syncscan.report.result import diagnostic_label, diagnostic_level, diagnostic_where

    for diagnostic in result.diagnostics:
        level = diagnostic_level(diagnostic)
        if quiet and level != "error":
            continue
        where = diagnostic_where(diagnostic)
        prefix = f"{where}: " if where else ""
        label = diagnostic_label(diagnostic)
        err.print(f"syncscan: {level}: {prefix}{label}: {diagnostic.message}")


def _fix(
    args: argparse.Namespace,
    err: Console,
    out: Console,
    root: Path,
    options: Options,
    result: RunResult,
) -> int | RunResult:
    """--diff: print the verified fixes and exit (1 when there are any). --fix:
    write them, and return the run to report: what remains."""
    from syncscan.fix import plan_fixes
    from syncscan.fix.files import write_atomically

    source = result.project.config.source
    config = args.config or (Path(source) if source else None)
    cache_dir = args.cache_dir or result.project.cache_dir

    def rerun(copy: Path) -> RunResult:
        return _run(args, err, copy, options, config=config, cache_dir=cache_dir, jobs=1)

    outcome = plan_fixes(result, rerun)
    notes = [(p.finding, f"{'fix' if args.diff else 'fixed'} ({p.label})") for p in outcome.fixed]
    for finding, note in sorted([*notes, *outcome.notes], key=lambda n: n[0].sort_key()):
        loc = finding.location
        err.print(f"syncscan: {loc.path}:{loc.line}: {finding.code}: {note}", highlight=False)
    if args.diff:
        diff = outcome.diff()
        if diff:
            out.file.write(diff)
        files = len(outcome.files)
        err.print(f"syncscan: {len(outcome.fixed)} fix(es) verified in {files} file(s)")
        return EXIT_FINDINGS if diff else EXIT_CLEAN
    for path, (_, text) in sorted(outcome.files.items()):
        write_atomically(root / path, text)
    err.print(f"syncscan: fixed {len(outcome.fixed)} finding(s) in {len(outcome.files)} file(s)")
    # What remains, read from the fixed tree (the verified copy is gone).
    return _run(args, err, root, options) if outcome.files else result


def _add_ignore(args: argparse.Namespace, err: Console, result: RunResult) -> int:
    from syncscan.fix.ignores import add_ignores

    edits = add_ignores(result.project.root, result.findings, args.add_ignore)
    files = len({edit.path for edit in edits})
    err.print(f"syncscan: added {len(edits)} suppression(s) in {files} file(s)")
    for edit in edits:
        if args.verbose:
            err.print(f"syncscan: {edit.path}:{edit.line}: ignore[{','.join(edit.codes)}]")
    return EXIT_CLEAN


def _emit(args: argparse.Namespace, out: Console, result: RunResult) -> None:
    text_format = args.output_format in _TEXT_FORMATS
    if text_format or args.statistics:
        from rich.console import Console

        from syncscan.report import concise, console

        def write(target: Console) -> None:
            if args.statistics:
                concise.render_statistics(target, result.findings)
            elif args.output_format == "concise":
                concise.render(target, result, result.findings, quiet=args.quiet)
            else:
                console.render(target, result, result.findings, quiet=args.quiet)

        if args.output:
            with args.output.open("w", encoding="utf-8") as handle:
                write(Console(file=handle, no_color=True, markup=False, soft_wrap=True, width=100))
        else:
            write(out)
        return
    text = _render_text(args, result)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _render_text(args: argparse.Namespace, result: RunResult) -> str:
    """A machine-readable report of `result`, by format name."""
    import os

    fmt = args.output_format  # each format's module is imported only when asked for
    if fmt == "github":
        from syncscan.report import github

        prefix = os.path.relpath(result.project.root, Path.cwd())
        return github.render(result, result.findings, path_prefix="" if prefix == "." else prefix)
    if fmt == "sarif":
        from syncscan.report import sarif

        return sarif.render(result, result.findings, source_root=_source_root(args, result))
    if fmt == "json":
        from syncscan.report import json_report

        return json_report.render(result, result.findings)
    from syncscan.report import markdown

    return markdown.render(result, result.findings)


def _source_root(args: argparse.Namespace, result: RunResult) -> Path:
    """--source-root, else the repository holding the project, else the project."""
    root = result.project.root
    if args.source_root is not None:
        source = args.source_root.resolve()
        if not source.is_dir():
            raise UsageError(f"--source-root is not a directory: {args.source_root}")
        if not root.is_relative_to(source):
            raise UsageError(f"--source-root {args.source_root} does not contain {root}")
        return source
    return vcs_root(root) or root


def _project_dir(args: argparse.Namespace) -> Path:
    root = args.paths or Path(".")
    if not root.is_dir():
        raise UsageError(f"not a directory: {root}")
    return root


def _audit(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.report import audit_model
    from syncscan.runner import Options

    if args.graph and args.audit_format:
        raise UsageError("--graph prints the call graph instead of the audit: drop --format")
    root = _project_dir(args)
    model = audit_model.build(_run(args, err, root, Options()))
    fmt = args.audit_format or "console"
    if fmt == "console" and not args.graph:
        _audit_console(args, model)
        return EXIT_CLEAN
    text = _audit_text(args, model, fmt, root)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_CLEAN


def _audit_text(args: argparse.Namespace, model: Audit, fmt: str, root: Path) -> str:
    """The audit (or, with --graph, its call graph) as one document."""
    if args.graph:
        from syncscan.report import graph_export

        return graph_export.render(model.graph, args.graph)
    if fmt == "json":
        from syncscan.report import audit_json

        return audit_json.render(model)
    if fmt == "markdown":
        from syncscan.report import audit_markdown

        return audit_markdown.render(model)
    from syncscan.report import audit_html
    from syncscan.report.source_view import SourceView

    source = SourceView(root, args.source_url)
    return audit_html.render(model, source, str(args.paths or Path(".")))


def _audit_console(args: argparse.Namespace, model: Audit) -> None:
    """The tables at the terminal's width, or COLUMNS when piped (80 if unset);
    into a file at COLUMNS (else 100), without colour."""
    from rich.console import Console

    from syncscan.report import audit

    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else None
    if args.output:
        with args.output.open("w", encoding="utf-8") as handle:
            target = Console(file=handle, no_color=True, markup=False, width=width or 100)
            audit.render(target, model, verbose=args.verbose)
        return
    target = Console(highlight=False, markup=False, width=width)
    audit.render(target, model, verbose=args.verbose)


def _config(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.report import config_report
    from syncscan.runner import load_project

    project, packs = load_project(_project_dir(args), args.config)
    config_report.render(out, project, packs)
    return EXIT_CLEAN


def _explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.rules import rule_by_code

    rule = rule_by_code(args.code)
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; see `syncscan rules`")
    from rich.markdown import Markdown

    out.print(Markdown(f"# {rule.code} {rule.name}\n\n{rule.documentation()}"))
    out.print(Markdown(f"## Reference remedy\n{rule.remedy}"))
    return EXIT_CLEAN


def _rules(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.rules import all_rules

    for rule in all_rules():
        out.print(f"{rule.code}  {rule.name:<28} {rule.severity:<8} {rule.summary}")
    return EXIT_CLEAN


def _consoles() -> tuple[Console, Console]:
    """stdout and stderr consoles. Off a terminal (CI logs, pipes, pre-commit) no text
    is wrapped: a message or a path is never cut across lines (findings are printed
    unboxed there; the width only shapes the audit's and config's tables)."""
    from rich.console import Console

    out = Console(highlight=False, markup=False)
    if not out.is_terminal:
        out = Console(highlight=False, markup=False, soft_wrap=True, width=160)
    err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
    return out, err


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_CLEAN
    out, err = _consoles()
    handlers = {
        "check": _check,
        "audit": _audit,
        "config": _config,
        "explain": _explain,
        "rules": _rules,
    }
    try:
        return handlers[args.command](args, out, err)
    except UsageError as exc:
        err.print(f"syncscan: error: {exc}", markup=False)
    except ConfigError as exc:
        err.print(f"syncscan: configuration error: {exc}", markup=False)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"syncscan: error: {where}{exc.strerror or exc}", markup=False)
    except Exception as exc:  # noqa: BLE001 - a bug in syncscan: say so, never a bare traceback
        _internal_error(args, err, exc)
    return EXIT_ERROR


def _internal_error(args: argparse.Namespace, err: Console, error: Exception) -> None:
    """One line naming the file being processed; the traceback only when asked;
    and for json/sarif, a document that says the run failed."""
    from syncscan.crash import describe
    from syncscan.report import failure

    paths = getattr(args, "paths", None)
    root = paths if isinstance(paths, Path) else (paths[0] if paths else Path.cwd())
    try:
        message, site = describe(error, root if root.is_dir() else Path.cwd())
    except Exception:  # noqa: BLE001 - the report of a crash must not crash
        message, site = f"internal error: {type(error).__name__}", None
    err.print(f"syncscan: {message}", markup=False)
    if getattr(args, "verbose", False) or os.environ.get(TRACEBACK_ENV):
        import traceback

        err.print("".join(traceback.format_exception(error)), markup=False, end="")
    else:
        err.print(
            f"syncscan: this is a bug in syncscan; -v or {TRACEBACK_ENV}=1 shows the traceback",
            markup=False,
        )
    document = failure.render(getattr(args, "output_format", "full"), message, site, EXIT_ERROR)
    if document is None:
        return
    try:
        if getattr(args, "output", None):
            args.output.write_text(document, encoding="utf-8")
        else:
            sys.stdout.write(document)
    except OSError:
        pass  # the message on stderr and the exit status still say it


def entry() -> NoReturn:
    """The console script and `python -m syncscan`: `main`, then an exit that
    skips tearing the heap down. A run leaves hundreds of megabytes of small
    objects (summaries, paths) that interpreter shutdown frees one by one
    (vLLM 0.33.0: 40 ms after an edit, more after a cold run) when the
    process is about to give them all back at once. Everything is written by
    then: reports, the cache (closed files), the worker processes (joined);
    the standard streams are flushed here."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe (`| head`): nothing is left to say.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    entry()
