"""Command line: check | audit | explain | rules | config.

Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or
configuration error, or an internal error (whatever `--exit-zero` says: a
crash is never read as clean or as findings). Bad input files never stop a
run: they are reported as skipped.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console

from syncscan import __version__, baseline
from syncscan.project import ConfigError
from syncscan.rules import all_rules, rule_by_code
from syncscan.runner import Options, RunResult, run

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
TRACEBACK_ENV = "SYNCSCAN_TRACEBACK"
_SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}
_FORMATS = ("console", "json", "sarif", "github", "markdown")


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
                help="a project directory (default: .), or changed files to report on",
            )  # fmt: skip
        else:
            p.add_argument("paths", nargs="?", type=Path, help="project root (default: .)")
        p.add_argument("--config", type=Path, help="a pyproject.toml or syncscan TOML file")
        p.add_argument("--select", action="append", default=[], help="only these rule codes")
        p.add_argument("--ignore", action="append", default=[], help="skip these rule codes")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
        p.add_argument("--cache-dir", type=Path, help="summary cache location")
        p.add_argument(
            "--jobs", type=int, default=None,
            help="processes for cold indexing (default: the cores; 1 under --changed-only)",
        )  # fmt: skip
        p.add_argument(
            "-v", "--verbose", action="store_true",
            help=f"on an internal error, print the traceback (or set {TRACEBACK_ENV}=1)",
        )  # fmt: skip

    check = sub.add_parser("check", help="report findings (for CI and pre-commit)")
    common(check, many=True)
    check.add_argument("--format", choices=_FORMATS, default="console")
    check.add_argument("--output", type=Path, help="write the report to this file")
    check.add_argument(
        "--fail-on", choices=("error", "warning", "note"), default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )  # fmt: skip
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
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

    audit = sub.add_parser("audit", help="every step root x mode, with its verdict")
    common(audit, many=False)

    config = sub.add_parser("config", help="print the effective configuration")
    common(config, many=False)

    explain = sub.add_parser("explain", help="a rule's documentation and remedy")
    explain.add_argument("code")

    sub.add_parser("rules", help="list the rules")
    return parser


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip().upper() for item in values for v in item.split(",") if v.strip())


def _target(paths: list[Path], changed_only: bool) -> tuple[Path, tuple[str, ...] | None]:
    """(project root, changed files relative to it, or None for a full report)."""
    files = [p for p in paths if not p.is_dir()]
    dirs = [p for p in paths if p.is_dir()]
    missing = [p for p in paths if not p.exists()]
    if missing and not changed_only:
        raise UsageError(f"path does not exist: {missing[0]}")
    if not files and not changed_only:
        if len(dirs) > 1:
            raise UsageError("give one project directory (or changed files)")
        return (dirs[0] if dirs else Path(".")), None
    if dirs:
        raise UsageError("give either one project directory or changed files, not both")
    root = _project_root(Path.cwd())
    changed = []
    for path in files:
        try:
            changed.append(path.resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            raise UsageError(f"{path} is outside the project at {root}") from None
    return root, tuple(changed)


def _project_root(start: Path) -> Path:
    from syncscan.project import find_config

    config = find_config(start.resolve())
    return config.parent if config is not None else start


def _run(
    args: argparse.Namespace, err: Console, root: Path, options: Options, reuse: bool = False
) -> RunResult:
    status = (
        err.status("syncscan: reading the step path", spinner="dots")
        if err.is_terminal
        else nullcontext()
    )
    with status as spinner:
        progress = (lambda text: spinner.update(f"syncscan: {text}")) if spinner else None
        return run(
            root,
            args.config,
            _split(args.select),
            _split(args.ignore),
            use_cache=not args.no_cache,
            cache_dir=args.cache_dir,
            options=options,
            progress=progress,
            jobs=_jobs(args, options),
            reuse_findings=reuse,
        )


def _jobs(args: argparse.Namespace, options: Options) -> int:
    """Serial under pre-commit (changed files) unless asked; else one per core."""
    if args.jobs is not None:
        if args.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        return args.jobs
    if options.changed is not None:
        return 1
    from syncscan.index.prefetch import default_jobs

    return default_jobs()


def _check(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.changed_only and not args.paths:
        return EXIT_CLEAN  # pre-commit with nothing to check
    root, changed = _target(args.paths, args.changed_only)
    options = Options(
        changed=changed,
        baseline=args.baseline,
        report_unused_ignores=args.report_unused_ignores,
    )
    result = _run(args, err, root, options, reuse=True)
    if args.write_baseline:
        # Refreshing a baseline keeps what it already accepted.
        accepted = result.findings + result.baselined
        baseline.write(args.write_baseline, accepted)
        err.print(
            f"syncscan: wrote {len(accepted)} finding(s) to {args.write_baseline}", markup=False
        )
        return EXIT_CLEAN
    _emit(args, out, result)
    for problem in result.problems:
        err.print(f"syncscan: {problem}", markup=False)
    threshold = _SEVERITY_RANK[args.fail_on]
    failing = [f for f in result.findings if _SEVERITY_RANK.get(f.severity, 2) >= threshold]
    if (failing or result.problems) and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _emit(args: argparse.Namespace, out: Console, result: RunResult) -> None:
    if args.format == "console":
        from syncscan.report import console

        if args.output:
            with args.output.open("w", encoding="utf-8") as handle:
                console.render(
                    Console(file=handle, width=120, no_color=True), result, result.findings
                )
        else:
            console.render(out, result, result.findings)
        return
    text = _render_text(args.format, result)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _render_text(fmt: str, result: RunResult) -> str:
    """A machine-readable report of `result`, by format name."""
    from syncscan.report import github, json_report, markdown, sarif

    if fmt == "github":
        prefix = os.path.relpath(result.project.root, Path.cwd())
        return github.render(result, result.findings, path_prefix="" if prefix == "." else prefix)
    renderers = {"json": json_report.render, "sarif": sarif.render, "markdown": markdown.render}
    return renderers[fmt](result, result.findings)


def _project_dir(args: argparse.Namespace) -> Path:
    root = args.paths or Path(".")
    if not root.is_dir():
        raise UsageError(f"not a directory: {root}")
    return root


def _audit(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.report import audit

    audit.render(out, _run(args, err, _project_dir(args), Options()))
    return EXIT_CLEAN


def _config(args: argparse.Namespace, out: Console, err: Console) -> int:
    from syncscan.report import config_report
    from syncscan.runner import load_project

    project, packs = load_project(_project_dir(args), args.config)
    config_report.render(out, project, packs)
    return EXIT_CLEAN


def _explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    rule = rule_by_code(args.code)
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; see `syncscan rules`")
    from rich.markdown import Markdown

    out.print(Markdown(f"# {rule.code} {rule.name}\n\n{rule.documentation()}"))
    out.print(Markdown(f"## Reference remedy\n{rule.remedy}"))
    return EXIT_CLEAN


def _rules(args: argparse.Namespace, out: Console, err: Console) -> int:
    for rule in all_rules():
        out.print(f"{rule.code}  {rule.name:<28} {rule.severity:<8} {rule.summary}")
    return EXIT_CLEAN


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_CLEAN
    # Logs (CI, pre-commit) are not terminals: do not wrap paths at 80 columns.
    out = Console(highlight=False)
    if not out.is_terminal:
        out = Console(highlight=False, width=160)
    err = Console(stderr=True, highlight=False)
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
    document = failure.render(getattr(args, "format", "console"), message, site, EXIT_ERROR)
    if document is None:
        return
    try:
        if getattr(args, "output", None):
            args.output.write_text(document, encoding="utf-8")
        else:
            sys.stdout.write(document)
    except OSError:
        pass  # the message on stderr and the exit status still say it


if __name__ == "__main__":
    raise SystemExit(main())
