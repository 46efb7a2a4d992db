"""Which step roots a skipped file leaves incomplete.

The analysis summarises only the modules the step path asks for, so every
file it asked for and could not summarise (it does not parse today; any reason
a summariser gives up counts) is a file the step path needs: what that file
holds is missing from the walk, and a finding may be missing with it. This
module turns each such skip into an "incomplete" diagnostic naming the roots
that reach it. A run with one is never a clean pass.
"""

from __future__ import annotations

from syncscan.findings import Diagnostic
from syncscan.flow.context import Analysis
from syncscan.index.summary import ImportBinding, ModuleSummary
from syncscan.resolve.callgraph import context_name


def incomplete_roots(analysis: Analysis, skipped: list[Diagnostic]) -> list[Diagnostic]:
    """One "incomplete" diagnostic per skipped file the step path asked for.

    A root is named when code it reaches imports the skipped module (the import
    line is given); a file asked for in another way (a subclass query, a
    re-export) is charged to every root and quiescence point, since any of them
    may have needed it.
    """
    if not skipped:
        return []
    program = analysis.program
    by_path = {analysis.project.relpath(p): m for m, p in analysis.project.modules.items()}
    reached = _modules_reached(analysis)
    everything = [*sorted(reached), *(spec.function for spec in analysis.packs.quiescence)]
    out: list[Diagnostic] = []
    for diagnostic in skipped:
        module = by_path.get(diagnostic.path)
        importers: dict[str, str] = {}  # root -> "path:line"
        for root, modules in sorted(reached.items()):
            for summary in modules:
                line = _import_line(summary.imports, module) if module else None
                if line is not None:
                    importers.setdefault(root, f"{program.project.relpath(summary.path)}:{line}")
        if importers:
            roots = ", ".join(f"{root} (imported at {where})" for root, where in importers.items())
        else:
            roots = ", ".join(everything) or "the step path"
        out.append(
            Diagnostic(
                diagnostic.path,
                f"the step path needs this file, which was skipped ({diagnostic.message}); "
                f"findings of these roots may be missing: {roots}",
                diagnostic.line,
                "incomplete",
            )
        )
    return out


def _modules_reached(analysis: Analysis) -> dict[str, list[ModuleSummary]]:
    """Each step root's name -> the summaries of the modules its call graph reaches."""
    graph = analysis.callgraph.graph
    by_path = {summary.path: summary for summary in analysis.program.loaded()}
    out: dict[str, list[ModuleSummary]] = {}
    for root in analysis.roots:
        node = context_name(root.function, root.self_class)
        if node not in graph:
            continue
        nodes = {node, *graph.descendants(node)}
        paths = sorted({graph.nodes[n].get("path") for n in nodes} - {None})
        out.setdefault(root.name, []).extend(by_path[p] for p in paths if p in by_path)
    return out


def _import_line(imports: tuple[ImportBinding, ...], module: str) -> int | None:
    """The line of the first import of `module` (or of a name inside it), if any."""
    for binding in imports:
        if binding.target == module or binding.target.startswith(module + "."):
            return binding.line
    return None
