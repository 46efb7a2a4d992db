"""Command line: check | audit | explain | rules.

Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or
configuration error. Bad input files never stop a run: they are reported as
skipped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown

from syncscan import __version__
from syncscan.project import ConfigError
from syncscan.rules import all_rules, rule_by_code
from syncscan.runner import RunResult, run

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="syncscan",
        description="Find host/device synchronization bugs in GPU inference engine step loops.",
    )
    parser.add_argument("--version", action="version", version=f"syncscan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("path", nargs="?", default=".", help="project root (default: .)")
        p.add_argument("--config", type=Path, help="a pyproject.toml or syncscan TOML file")
        p.add_argument("--select", action="append", default=[], help="only these rule codes")
        p.add_argument("--ignore", action="append", default=[], help="skip these rule codes")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
        p.add_argument("--cache-dir", type=Path, help="summary cache location")

    check = sub.add_parser("check", help="report findings (for CI and pre-commit)")
    common(check)
    check.add_argument(
        "--format",
        choices=("console", "json", "sarif", "github", "markdown"),
        default="console",
        help="console (default), json (stable contract), sarif (code scanning), "
        "github (workflow annotations), markdown (PR comment)",
    )
    check.add_argument("--output", type=Path, help="write the report to this file")
    check.add_argument(
        "--fail-on", choices=("error", "warning", "note"), default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )  # fmt: skip
    check.add_argument("--exit-zero", action="store_true", help="always exit 0 on findings")

    audit = sub.add_parser("audit", help="every step root x mode, with its verdict")
    common(audit)

    explain = sub.add_parser("explain", help="a rule's documentation and remedy")
    explain.add_argument("code")

    sub.add_parser("rules", help="list the rules")
    return parser


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip().upper() for item in values for v in item.split(",") if v.strip())


def _run(args: argparse.Namespace, err: Console) -> RunResult | None:
    root = Path(args.path)
    if not root.exists():
        err.print(f"syncscan: error: path does not exist: {root}")
        return None
    if root.is_file():
        root = root.parent
    try:
        return run(
            root,
            args.config,
            _split(args.select),
            _split(args.ignore),
            use_cache=not args.no_cache,
            cache_dir=args.cache_dir,
        )
    except ConfigError as exc:
        err.print(f"syncscan: configuration error: {exc}")
        return None


def _check(args: argparse.Namespace, out: Console, err: Console) -> int:
    result = _run(args, err)
    if result is None:
        return EXIT_ERROR
    findings = result.findings
    if args.format != "console":
        text = _render_text(args.format, result)
        if args.output:
            args.output.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    else:
        from syncscan.report import console

        target = out
        handle = None
        if args.output:
            handle = args.output.open("w", encoding="utf-8")
            target = Console(file=handle, width=120, no_color=True)
        console.render(target, result, findings)
        if handle is not None:
            handle.close()
    threshold = _SEVERITY_RANK[args.fail_on]
    failing = [f for f in findings if _SEVERITY_RANK.get(f.severity, 2) >= threshold]
    if failing and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _render_text(fmt: str, result: RunResult) -> str:
    """A machine-readable report of `result`, by format name."""
    from syncscan.report import github, json_report, markdown, sarif

    if fmt == "github":
        prefix = os.path.relpath(result.project.root, Path.cwd())
        return github.render(result, result.findings, path_prefix="" if prefix == "." else prefix)
    renderers = {"json": json_report.render, "sarif": sarif.render, "markdown": markdown.render}
    return renderers[fmt](result, result.findings)


def _audit(args: argparse.Namespace, out: Console, err: Console) -> int:
    result = _run(args, err)
    if result is None:
        return EXIT_ERROR
    from syncscan.report import audit

    audit.render(out, result)
    return EXIT_CLEAN


def _explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    rule = rule_by_code(args.code)
    if rule is None:
        err.print(f"syncscan: error: unknown rule {args.code!r}; see `syncscan rules`")
        return EXIT_ERROR
    out.print(Markdown(f"# {rule.code} {rule.name}\n\n{_dedent(rule.documentation())}"))
    out.print(Markdown(f"## Reference remedy\n{rule.remedy}"))
    return EXIT_CLEAN


def _rules(args: argparse.Namespace, out: Console, err: Console) -> int:
    for rule in all_rules():
        out.print(f"{rule.code}  {rule.name:<28} {rule.severity:<8} {rule.summary}")
    return EXIT_CLEAN


def _dedent(doc: str) -> str:
    import textwrap

    first, _, rest = doc.partition("\n")
    return first + "\n" + textwrap.dedent(rest)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_CLEAN
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    handlers = {"check": _check, "audit": _audit, "explain": _explain, "rules": _rules}
    return handlers[args.command](args, out, err)


if __name__ == "__main__":
    raise SystemExit(main())
