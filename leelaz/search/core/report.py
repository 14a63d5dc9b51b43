"""A progress report read straight from the compiled core's arrays: search/stats.snapshot
without writing the tree back into its UCTNodes first.

Owns: `snapshot`, `root_report` (a helper search process's report) and `rows_read` (what
the end of a genmove reads). Imports: numpy, game.coords, search.lcb, search.result; the
kernels are handed in (core/run.py loads them).

Why: lz-analyze reports every interval (Lizzie and Sabaki ask for one every 0.1-0.5 s), and
a report read the UCTNodes, which the core first had to bring up to date: every node whose
visits changed since the last report, a Python object each, then the principal variations
by Python comparisons. At a GPU's speed on the shipped network that was about a third of
one tree's analysis time. Here the root's children are read as arrays and their principal
variations walked by `kernels.principal_variations`, the compiled copy of
`UCTNode.best_child`, `node_less` and `stats.principal_variation`; the values are the same
float64 expressions as UCTNode's `raw_eval`, `lcb` and `eval_with_vl`.
tests/test_search_core.py compares every field with the Python snapshot of the written-back
tree, report after report. GTP's calls write back at their end only what `rows_read`
names (core/run.py, `partial_write_back`); the others every WRITE_BACK_ROWS new nodes, so
that the end of a long analysis leaves little to write.
"""

from __future__ import annotations

import math

import numpy as np

from leelaz.game.coords import BLACK
from leelaz.search.lcb import t_quantile
from leelaz.search.result import MoveInfo, SearchResult

#: Moves of a principal variation the buffer holds before the report falls back to the
#: UCTNodes (a chain deeper than this is far beyond any real search's).
PV_ROOM = 128


def _walk(tree, kernels, color: int, tq: np.ndarray, ratio: float, buffers: dict | None):
    """(the root's inflated children's node rows, their principal variations' moves, node
    rows and lengths, the root's best child) by kernels.principal_variations; None when a
    chain is longer than PV_ROOM."""
    t = tree
    inflated = int(t.inflated[0]) if t.expanded[0] else 0
    lo = int(t.first[0])
    buffers = {} if buffers is None else buffers
    pv = buffers.get("pv")
    if pv is None or len(pv) < inflated:
        pv = buffers["pv"] = np.empty((max(inflated, 1), PV_ROOM), np.int64)
        buffers["pv_rows"] = np.empty((max(inflated, 1), PV_ROOM), np.int64)
        buffers["lengths"] = np.empty(max(inflated, 1), np.int64)
    lengths, pv_rows = buffers["lengths"], buffers["pv_rows"]
    best = kernels.principal_variations(color != BLACK, ratio, t.expanded, t.first,
                                        t.inflated, t.cnode, t.visits, t.wins, t.m2, t.vl,
                                        t.prior, t.nmove, tq, pv, pv_rows, lengths)
    if best == -2:
        return None
    return t.cnode[lo:lo + inflated], pv, pv_rows, lengths, best


def snapshot(tree, kernels, color: int, move_num: int, tq: np.ndarray, ratio: float, *,
             move=None, playouts: int = 0, nodes: int = 0, elapsed: float = 0.0,
             buffers: dict | None = None) -> SearchResult | None:
    """stats.snapshot of the core's `tree` (root: node row 0, `color` to move), `tq` the
    t quantiles (lcb.t_quantiles, long enough for the root's visits), `buffers` a dict the
    caller keeps for the PV rows between reports; None when a principal variation is
    longer than PV_ROOM (the caller writes the tree back and asks stats.snapshot)."""
    walked = _walk(tree, kernels, color, tq, ratio, buffers)
    if walked is None:
        return None
    rows, pv, _, lengths, best = walked
    t = tree
    white = color != BLACK
    children = []
    for k, (mv, n, w, m2, prior) in enumerate(zip(
            t.nmove[rows].tolist(), t.visits[rows].tolist(), t.wins[rows].tolist(),
            t.m2[rows].tolist(), t.prior[rows].tolist())):
        if not n:
            children.append(MoveInfo(mv, 0, 0.0, prior, -1e6, [mv]))
            continue
        q = w / n
        winrate = q if not white else 1.0 - q  # UCTNode.raw_eval
        lcb = -1e6 + n if n < 2 else \
            winrate - t_quantile(n - 1) * math.sqrt(m2 / (n - 1) / n)  # UCTNode.lcb
        children.append(MoveInfo(mv, n, winrate, prior, lcb,
                                 [mv] + pv[k, :lengths[k]].tolist()))
    root_visits = int(t.visits[0])
    q = float(t.wins[0]) / root_visits if root_visits else 0.5
    net = float(t.net[0])
    result = SearchResult(color=color, move_num=move_num, move=move, root_visits=root_visits,
                          root_winrate=(1.0 - q if white else q) if root_visits else 0.5,
                          net_winrate=1.0 - net if white else net, playouts=playouts,
                          nodes=nodes, elapsed=elapsed, children=children)
    if best >= 0:
        n = int(t.visits[best])
        result.best_child_visits = n
        if n:  # UCTNode.eval_with_vl
            vl = int(t.vl[best])
            w = float(t.wins[best]) + (vl if white else 0)
            q = w / (n + vl)
            result.best_child_winrate = 1.0 - q if white else q
        else:
            result.best_child_winrate = 0.5
    return result


def root_report(tree, kernels, color: int, tq: np.ndarray, ratio: float = 0.10,
                buffers: dict | None = None) -> tuple | None:
    """search/merge.root_report of the core's `tree` (what a helper search process sends
    the engine at each of its reports, root_parallel/helper.py); None as `snapshot`."""
    walked = _walk(tree, kernels, color, tq, ratio, buffers)
    if walked is None:
        return None
    rows, pv, _, lengths, _ = walked
    t = tree
    visits = t.visits[rows]
    children = tuple(
        (mv, n, w, m2, prior, tuple(pv[k, :lengths[k]].tolist()))
        for k, mv, n, w, m2, prior in zip(
            np.flatnonzero(visits).tolist(), t.nmove[rows][visits > 0].tolist(),
            visits[visits > 0].tolist(), t.wins[rows][visits > 0].tolist(),
            t.m2[rows][visits > 0].tolist(), t.prior[rows][visits > 0].tolist()))
    return int(t.visits[0]), float(t.wins[0]), float(t.m2[0]), children


def rows_read(tree, kernels, color: int, tq: np.ndarray, ratio: float,
              buffers: dict | None = None) -> np.ndarray | None:
    """The node rows whose children the end of a call reads on the UCTNodes (search.py
    `_finish_think` and `ponder`: the statistics' lines, the move choice, the record, the
    explanation): the root, its visited children and each one's principal variation, the
    chain's last node included (its best child was looked for among its children); None
    when a chain is longer than PV_ROOM; `buffers` as `snapshot`'s. Why: GTP's calls write
    back only these and their children's statistics, and carry the rest in the arrays to
    the next call (core/run.py, `partial_write_back`)."""
    walked = _walk(tree, kernels, color, tq, ratio, buffers)
    if walked is None:
        return None
    rows, _, pv_rows, lengths, _ = walked
    t = tree
    visited = rows[t.visits[rows] > 0]
    chains = [pv_rows[k, :n] for k, n in enumerate(lengths[:len(rows)].tolist()) if n]
    return np.concatenate([np.zeros(1, np.int64), visited.astype(np.int64), *chains])
