"""Reading a tree: principal variations, SearchResult snapshots and Leela Zero's stderr reports.

Owns: `principal_variation`, `snapshot`, `count_nodes`, `dump_stats_lines`, `tree_stats_lines`
(and its `tree_stats_counts`).
Imports: game.coords, search.node, search.result.

The stderr texts are byte-for-byte Leela Zero's (GUIs such as Lizzie and GoReviewPartner scrape
the ` -> ` lines and "average depth"):
    `%4s -> %7d (V: %5.2f%%) (LCB: %5.2f%%) (N: %5.2f%%) PV: %s`
    `%.1f average depth, %d max depth` and `%d non leaf nodes, %.2f average children`
"""

from __future__ import annotations

from leelaz.game.coords import gtp_vertex
from leelaz.search.node import UCTNode
from leelaz.search.result import MoveInfo, SearchResult


def principal_variation(node: UCTNode, color: int, ratio: float = 0.10) -> list[int]:
    """Best-child chain below `node` (whose side to move is `color`), stopping at a node
    without children or whose best child has no visits."""
    pv = []
    while node.children and node.psa_ratio == 0.0:  # LZ stops at a node not fully expanded
        best = node.best_child(color, ratio)
        if best is None or best.visits == 0:
            break
        pv.append(best.move)
        node = best
        color = 1 - color
    return pv


def move_info(child: UCTNode, color: int, ratio: float = 0.10) -> MoveInfo:
    """One root child as a MoveInfo (winrates for `color`, the side to move at the root)."""
    n = child.visits
    pv = [child.move]
    if n > 0:
        pv += principal_variation(child, 1 - color, ratio)
    return MoveInfo(move=child.move, visits=n, winrate=child.raw_eval(color) if n else 0.0,
                    prior=child.prior, lcb=child.lcb(color), pv=pv)


def snapshot(root: UCTNode, color: int, move_num: int, *, move=None, playouts=0, nodes=0,
             elapsed=0.0, ratio: float = 0.10) -> SearchResult:
    """A SearchResult of the root as it is now; children in their current order. Hot path
    (every move of self-play, most of whose ~360 root children have no visits): an unvisited
    child's MoveInfo is made here, as move_info would make it."""
    children = [move_info(c, color, ratio) if c.visits else
                MoveInfo(c.move, 0, 0.0, c.prior, -1e6, [c.move]) for c in root.children]
    result = SearchResult(color=color, move_num=move_num, move=move, root_visits=root.visits,
                          root_winrate=root.raw_eval(color) if root.visits else 0.5,
                          net_winrate=root.net_eval_for(color), playouts=playouts, nodes=nodes,
                          elapsed=elapsed, children=children)
    best = root.best_child(color, ratio)
    if best is not None:
        result.best_child_visits = best.visits
        result.best_child_winrate = best.eval_with_vl(color) if best.visits else 0.5
    return result


def count_nodes(root: UCTNode) -> int:
    """LZ's node count: every child slot, recursing through visited children only."""
    total = 0
    stack = [root]
    while stack:
        node = stack.pop()
        total += node.child_count()
        stack.extend(c for c in node.children if c.visits > 0)
    return total


def pv_text(moves: list[int]) -> str:
    return " ".join(gtp_vertex(m) for m in moves)


def dump_stats_lines(root: UCTNode, color: int, ratio: float = 0.10) -> list[str]:
    """The ` -> ` lines for the (already sorted) root children: at least two, then only
    visited ones; nothing when the first child has no visits."""
    lines = []
    if not root.children or root.children[0].visits == 0:
        return lines
    for count, child in enumerate(root.children, 1):
        n = child.visits
        if count > 2 and n == 0:
            break
        move = gtp_vertex(child.move)
        rest = pv_text(principal_variation(child, 1 - color, ratio)) if n else ""
        winrate = child.raw_eval(color) * 100.0 if n else 0.0
        lcb = max(0.0, child.lcb(color) * 100.0)
        lines.append(f"{move:>4s} -> {n:7d} (V: {winrate:5.2f}%) (LCB: {lcb:5.2f}%) "
                     f"(N: {child.prior * 100.0:5.2f}%) PV: {move} {rest}\n")
    return lines


def tree_stats_counts(root: UCTNode) -> tuple[int, int, int, int, int]:
    """What `tree_stats_lines` reports, by a walk over the tree (Leela Zero's tree_stats in
    src/UCTSearch.cpp): the child slots counted as nodes (an unvisited one at its parent's
    depth + 1), the nodes with more than one visit, the sum and maximum of the depths, the
    visited children. The compiled core counts the same on its arrays
    (core/kernels.tree_stats)."""
    nodes = non_leaf = depth_sum = max_depth = children_count = 0
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        non_leaf += node.visits > 1
        depth_sum += depth
        max_depth = max(max_depth, depth)
        unvisited = node.child_count() - len(node.children)
        for c in node.children:
            if c.visits > 0:
                children_count += 1
                stack.append((c, depth + 1))
            else:
                unvisited += 1
        if unvisited:
            nodes += unvisited
            depth_sum += unvisited * (depth + 1)
            max_depth = max(max_depth, depth + 1)
    return nodes, non_leaf, depth_sum, max_depth, children_count


def tree_stats_lines(root: UCTNode, counts: tuple | None = None) -> list[str]:
    """Average and maximum depth over all child slots, non-leaf count, average children
    (`counts`: `tree_stats_counts(root)`'s, when already known)."""
    nodes, non_leaf, depth_sum, max_depth, children_count = counts or tree_stats_counts(root)
    lines = []
    if nodes:
        lines.append(f"{depth_sum / nodes:.1f} average depth, {max_depth} max depth\n")
    if non_leaf:
        lines.append(f"{non_leaf} non leaf nodes, {children_count / non_leaf:.2f} average "
                     f"children\n")
    return lines
