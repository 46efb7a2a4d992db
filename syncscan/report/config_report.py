"""`syncscan config`: the effective configuration, and why each pack is on."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from syncscan.packs import PackSet
from syncscan.project import Project


def render(console: Console, project: Project, packs: PackSet) -> None:
    config = project.config
    console.print(f"[bold]root[/bold]          {project.root}")
    console.print(f"[bold]configuration[/bold] {config.source or '(none: defaults)'}")
    console.print(f"[bold]python files[/bold]  {len(project.modules)}")
    settings = Table(title="settings", show_header=True)
    settings.add_column("key")
    settings.add_column("value")
    settings.add_row("select", ", ".join(config.select) or "(all rules)")
    settings.add_row("ignore", ", ".join(config.ignore) or "-")
    settings.add_row("severity", ", ".join(f"{k}={v}" for k, v in config.severity.items()) or "-")
    settings.add_row("exclude", ", ".join(config.exclude) or "-")
    settings.add_row("disable_packs", ", ".join(config.disable_packs) or "-")
    settings.add_row("cache_dir", str(project.cache_dir))
    console.print(settings)

    active = Table(title="active packs")
    active.add_column("pack")
    active.add_column("source")
    for name, source in zip(packs.names, packs.sources, strict=True):
        active.add_row(name, source)
    console.print(active)

    roots = Table(title="step roots")
    for column in ("class", "method", "subclasses", "continuation", "output", "pack"):
        roots.add_column(column)
    for spec in packs.step_roots:
        roots.add_row(
            spec.cls,
            spec.method,
            str(spec.subclasses),
            ", ".join(spec.continuation),
            "discarded" if spec.discards_output else "used",
            spec.pack,
        )
    console.print(roots)

    points = Table(title="quiescence points")
    for column in ("function", "busy on entry", "why"):
        points.add_column(column, overflow="fold")
    for spec in packs.quiescence:
        points.add_row(spec.function, str(spec.busy_on_entry), spec.why)
    console.print(points)

    modes = Table(title="mode labels, peer-bounded and unread modes")
    for column in ("predicate", "value", "label / reason"):
        modes.add_column(column, overflow="fold")
    for label in packs.mode_labels:
        modes.add_row(label.predicate, str(label.value).lower(), label.label)
    for kind, rows in (("bounded by peer", packs.bounded_modes), ("unread", packs.unread_modes)):
        for row in rows:
            modes.add_row(row.predicate, str(row.value).lower(), f"{kind}: {row.reason}")
    console.print(modes)
    if packs.rpc:
        console.print(
            "rpc dispatch: "
            + "; ".join(
                f"{r.method}(name) -> {', '.join(r.receivers)}"
                + (f" (barrier: {r.barrier_method})" if r.barrier_method else "")
                for r in packs.rpc
            )
        )
    for row in packs.dead_stores:
        console.print(f"dead store: {row.function} -> {row.buffer}: {row.reason}")
    console.print(f"resolution methods: {', '.join(sorted(packs.resolution_methods)) or '-'}")
