"""The root statistics of several trees of one position, merged (root parallelism).

Owns: `root_report` (what a search process sends of its tree: the root's and every visited
root child's N, W, Welford M2, prior and principal variation, as plain tuples) and
`merged_root` (a stand-in root whose children carry the sums, for the reports and the move
choice). Imports: search.node, search.stats.

Why: a single Python thread walks one tree too slowly to keep a GPU busy, so with
`--search-processes` several processes search the same position, each its own tree, and the
root statistics are merged (root_parallel/pool.py). Per root move the visits add, the
values (Black's W) add, and the M2 of the union is Chan's pairwise combination of Welford's
sums, so Q, the variance and Leela Zero's LCB of a merged child are those of all its playouts
together, and the order, the move choice, resignation and the `info` lines read the merged
root as they read one tree's root. Nothing is written back into a tree: the next move's tree
reuse sees each tree as it was.

The principal variation of a merged child is the one of the tree with the most visits for
that move: the own subtree when it has them, else a chain of stand-in nodes along the
reported moves, which `stats.principal_variation` walks as it walks a tree.
"""

from __future__ import annotations

from leelaz.search.node import M2_START, UCTNode
from leelaz.search.stats import principal_variation

#: A process's report: (root N, root W, root M2, children), each child (move, N, W, M2,
#: prior, pv tuple). Plain tuples: they cross a pipe several times a second.
RootReport = tuple


def root_report(root: UCTNode, color: int, ratio: float = 0.10) -> RootReport:
    """What `merged_root` needs of this tree (visited root children only)."""
    children = []
    for c in root.children:
        if c.visits:
            pv = tuple(principal_variation(c, 1 - color, ratio))
            children.append((c.move, c.visits, c.black_wins, c.m2, c.prior, pv))
    return (root.visits, root.black_wins, root.m2, tuple(children))


def combine(n_a: int, w_a: float, m2_a: float, n_b: int, w_b: float,
            m2_b: float) -> tuple[int, float, float]:
    """(N, W, M2) of two sets of values given as (N, sum, M2) each (Chan et al.'s update).
    Each M2 started at M2_START; the result keeps one M2_START, as one tree's would."""
    if n_a == 0:
        return n_b, w_b, m2_b
    if n_b == 0:
        return n_a, w_a, m2_a
    n = n_a + n_b
    delta = w_b / n_b - w_a / n_a
    m2 = m2_a + m2_b - M2_START + delta * delta * n_a * n_b / n
    return n, w_a + w_b, m2


def merged_root(root: UCTNode, reports: list[RootReport]) -> UCTNode:
    """A stand-in for `root` whose statistics and children's are summed with `reports`' (see
    the module docstring); `root` itself is not changed. Children keep the own tree's order,
    priors and statuses; a move only other trees visited is appended."""
    if not reports:
        return root
    shadow = UCTNode(root.move, root.prior)
    n, w, m2 = root.visits, root.black_wins, root.m2
    theirs: dict[int, list] = {}
    for report in reports:
        n, w, m2 = combine(n, w, m2, report[0], report[1], report[2])
        for child in report[3]:
            theirs.setdefault(child[0], []).append(child)
    shadow.visits, shadow.black_wins, shadow.m2 = n, w, m2
    shadow.net_eval, shadow.status, shadow.expanded = root.net_eval, root.status, True
    shadow.psa_ratio = root.psa_ratio
    children = []
    for c in root.children:
        children.append(_merged_child(c, c.move, c.prior, theirs.pop(c.move, ())))
    for move, reported in theirs.items():
        children.append(_merged_child(None, move, reported[0][4], reported))
    shadow.children = children
    return shadow


def _merged_child(own: UCTNode | None, move: int, prior: float, reported) -> UCTNode:
    shadow = UCTNode(move, prior)
    if own is not None:
        n, w, m2 = own.visits, own.black_wins, own.m2
        shadow.net_eval, shadow.status, shadow.expanded = own.net_eval, own.status, own.expanded
        shadow.psa_ratio = own.psa_ratio
    else:
        n, w, m2 = 0, 0.0, M2_START
        shadow.expanded, shadow.psa_ratio = True, 0.0
    best_pv, best_visits = None, n
    for _, visits, wins, squares, _, pv in reported:
        n, w, m2 = combine(n, w, m2, visits, wins, squares)
        if visits > best_visits:
            best_pv, best_visits = pv, visits
    shadow.visits, shadow.black_wins, shadow.m2 = n, w, m2
    if best_pv is None:
        if own is not None:
            shadow.children = own.children  # read only: the PV walks the own subtree
    else:
        shadow.psa_ratio = 0.0
        shadow.children = _chain(best_pv[1:])
    return shadow


def _chain(moves) -> list[UCTNode]:
    """Stand-in nodes along `moves`, each the only visited child of the one before."""
    head: list[UCTNode] = []
    children = head
    for move in moves:
        node = UCTNode(move)
        node.visits, node.black_wins, node.expanded, node.psa_ratio = 1, 0.5, True, 0.0
        children.append(node)
        children = node.children
    return head
