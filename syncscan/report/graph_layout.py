"""A layered layout of the step-path call graph, computed here (no JavaScript,
no Graphviz): the HTML report draws it as inline SVG.

Layers are call depth from the roots (left to right, the way a call chain
reads); within a layer, nodes are first placed in the order a depth-first walk
from the roots meets them (a call tree stays together), then reordered by a
few barycenter sweeps (Sugiyama's heuristic) so edges cross less. Everything is
sorted before it is used, so the same graph gives the same picture.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from syncscan.report.step_graph import StepGraph

CHAR_WIDTH = 6.6  # px per character of the 11px monospace labels
NODE_HEIGHT = 20
ROW_GAP = 8
COLUMN_GAP = 48
PADDING = 10
_SWEEPS = 4


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]  # node id -> its box
    width: float
    height: float


def layers(graph: StepGraph) -> dict[str, int]:
    """Each node's call depth: the fewest calls from a root (a node no root
    reaches starts a layer-0 chain of its own)."""
    children: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    has_parent: set[str] = set()
    for edge in graph.edges:
        children[edge.source].append(edge.target)
        has_parent.add(edge.target)
    starts = [n.id for n in graph.nodes if "root" in n.roles or n.id not in has_parent]
    depth: dict[str, int] = {}
    queue = deque((s, 0) for s in starts)
    while queue:
        node, d = queue.popleft()
        if node in depth:
            continue
        depth[node] = d
        queue.extend((c, d + 1) for c in sorted(children[node], key=_numeric))
    for node in children:  # on a cycle no root reaches: put it beside its parents
        depth.setdefault(node, 0)
    return depth


def _numeric(node_id: str) -> int:
    return int(node_id[1:])


def order_layers(graph: StepGraph, depth: dict[str, int]) -> list[list[str]]:
    children: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    parents: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for edge in graph.edges:
        children[edge.source].append(edge.target)
        parents[edge.target].append(edge.source)
    seen: list[str] = []
    visited: set[str] = set()
    for start in sorted(depth, key=lambda n: (depth[n], _numeric(n))):
        stack = [start]
        while stack:
            node = stack.pop()
            if node in visited:
                continue
            visited.add(node)
            seen.append(node)
            stack.extend(sorted(children[node], key=_numeric, reverse=True))
    count = max(depth.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(count)]
    for node in seen:
        rows[depth[node]].append(node)
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        indices = range(1, count) if downward else range(count - 2, -1, -1)
        for layer in indices:
            neighbour = rows[layer - 1] if downward else rows[layer + 1]
            place = {n: i for i, n in enumerate(neighbour)}
            links = parents if downward else children
            rows[layer] = _by_barycenter(rows[layer], links, place)
    return rows


def _by_barycenter(row: list[str], links: dict[str, list[str]], place: dict[str, int]) -> list:
    def key(item: tuple[int, str]) -> tuple[float, int]:
        index, node = item
        near = [place[n] for n in links[node] if n in place]
        return (sum(near) / len(near) if near else float(index), index)

    return [node for _, node in sorted(enumerate(row), key=key)]


def layout(graph: StepGraph) -> Layout:
    depth = layers(graph)
    rows = order_layers(graph, depth)
    labels = {n.id: n.label for n in graph.nodes}
    tallest = max((len(r) for r in rows), default=0)
    height = 2 * PADDING + tallest * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
    boxes: dict[str, Box] = {}
    x = PADDING
    for row in rows:
        width = max((len(labels[n]) for n in row), default=0) * CHAR_WIDTH + 12
        span = len(row) * (NODE_HEIGHT + ROW_GAP) - ROW_GAP
        y = PADDING + (height - 2 * PADDING - span) / 2
        for node in row:
            boxes[node] = Box(round(x, 1), round(y, 1), round(width, 1), NODE_HEIGHT)
            y += NODE_HEIGHT + ROW_GAP
        x += width + COLUMN_GAP
    return Layout(boxes, round(max(x - COLUMN_GAP + PADDING, 0), 1), max(height, 0))
