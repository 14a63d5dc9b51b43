"""A measurement, not part of leelaz: what would a compiled descent over array-based nodes
cost, against today's Python descent, on the same trees? (issue 18: the search's own Python
is what a move on the clock waits on.)

For each position (moves 40, 120, 200 of the 9-dan game of `leelaz bench search --at`), the
Python search grows a tree with that verb's instant network (VISITS visits, BATCH leaves a
batch; the whole search's cost a playout there is what `leelaz bench search --at 40,120,200
--batch 16 -v VISITS` prints).
That tree is then copied into flat arrays (one row per node, inflated children and the
compact ones alike, in the same order), and both descend it BATCH times under virtual loss
without expanding anything:

- Python: `SearchRun.collect(BATCH)` then `forget`, as a batch of today's search walks the
  tree (the root's selector, ChildScores at big nodes, the positions played on the way);
- compiled: `descend` below (numba), Leela Zero's PUCT with virtual loss over the arrays,
  which returns the path only (the positions are not played).

The paths are checked move by move against Python's for the first batch (the same choices),
then the time a descent is printed for both, and the time of a backup along a path.

    pip install numba
    PYTHONPATH=$PWD python3 dev/compiled_descent_probe.py [VISITS] [BATCH]
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from numba import njit

from leelaz.nn.cache import NNCache
from leelaz.search.node import backup
from leelaz.search.run import Limits, Progress
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch
from leelaz.tools.bench.search import game_position, make_network


def grown_search(move: int, visits: int, batch: int):
    net = make_network(None, "numpy")
    net.cache = NNCache(200_000)
    state = game_position(move)
    params = SearchParams(max_visits=visits, batch_size=batch, quiet=True, timemanage="off")
    search = UCTSearch(net, params, rng=1)
    search.think(state, state.to_move, use_clock=False)
    return search, state


def to_arrays(root):
    """Every node (inflated or compact) as a row; children of a node are consecutive rows
    in the node's order, inflated ones first."""
    rows = [root]  # UCTNode, or (move, prior) for a compact child
    first, count, inflated = [], [], []
    i = 0
    while i < len(rows):
        node = rows[i]
        i += 1
        if isinstance(node, tuple) or not node.expanded:
            first.append(0)
            count.append(0)
            inflated.append(0)
            continue
        kids = list(node.children)
        done = len(kids)
        kids += [(int(node._moves[j]), float(node._priors[j]))
                 for j in range(len(node.children), len(node._moves))]
        first.append(len(rows))
        count.append(len(kids))
        inflated.append(done)
        rows += kids
    n = len(rows)
    a = {"visits": np.zeros(n, np.int64), "wins": np.zeros(n, np.float64),
         "vl": np.zeros(n, np.int64), "prior": np.zeros(n, np.float64),
         "net": np.full(n, 0.5), "status": np.zeros(n, np.int8),
         "move": np.zeros(n, np.int64), "expanded": np.zeros(n, np.bool_),
         "first": np.array(first, np.int64), "count": np.array(count, np.int64),
         "inflated": np.array(inflated, np.int64)}
    for k, node in enumerate(rows):
        if isinstance(node, tuple):
            a["move"][k], a["prior"][k] = node
            continue
        a["visits"][k], a["wins"][k], a["vl"][k] = node.visits, node.black_wins, node.virtual_loss
        a["prior"][k], a["net"][k], a["status"][k] = node.prior, node.net_eval, node.status
        a["move"][k], a["expanded"][k] = node.move, node.expanded
    return a


@njit(cache=True)
def select(node, color, fpu_reduction, c_puct, log_puct, log_const, visits, wins, vl, prior,
           net, status, first, count, inflated):
    """UCTNode.select_child over the arrays: the inflated prefix, then the next compact
    child if it scores strictly better (then it counts as inflated)."""
    lo = first[node]
    hi = lo + inflated[node]
    parent_visits = 0
    visited_policy = 0.0
    for c in range(lo, hi):
        if status[c] != 2 and visits[c] > 0:
            parent_visits += visits[c]
            visited_policy += prior[c]
    cn = c_puct * math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
    fpu = net[node] if color == 0 else 1.0 - net[node]
    fpu -= fpu_reduction * math.sqrt(visited_policy)
    best = -1
    best_score = -1e300
    for c in range(lo, hi):
        if status[c] != 0:
            continue
        n = visits[c]
        v = vl[c]
        if n > 0:
            q = (wins[c] + (v if color == 1 else 0)) / (n + v)
            if color == 1:
                q = 1.0 - q
        elif v > 0:
            q = -1.0 - fpu_reduction
        else:
            q = fpu
        score = q + cn * prior[c] / (1 + n)
        if score > best_score:
            best_score = score
            best = c
    if inflated[node] < count[node] and fpu + cn * prior[hi] > best_score:
        inflated[node] += 1
        best = hi
    return best


@njit(cache=True)
def descend(root, color, root_fpu, fpu_reduction, c_puct, log_puct, log_const, vlw, visits,
            wins, vl, prior, net, status, first, count, inflated, expanded, path):
    """One descent under virtual loss to an unexpanded node; returns the path's length."""
    node = root
    vl[node] += vlw
    path[0] = node
    n = 1
    fpu = root_fpu
    while expanded[node] and count[node] > 0:
        child = select(node, color, fpu, c_puct, log_puct, log_const, visits, wins, vl, prior,
                       net, status, first, count, inflated)
        if child < 0:
            break
        vl[child] += vlw
        path[n] = child
        n += 1
        node = child
        color = 1 - color
        fpu = fpu_reduction
        if vl[node] > vlw and not expanded[node]:
            break  # a collision: the leaf already waits in this batch
    return n


@njit(cache=True)
def backup_path(path, n, value, vlw, visits, wins, vl):
    for k in range(n):
        node = path[k]
        visits[node] += 1
        wins[node] += value
        vl[node] -= vlw


@njit(cache=True)
def undo(path, n, vlw, vl):
    for k in range(n):
        vl[path[k]] -= vlw


@njit(cache=True)
def descend_batch(batch, color, root_fpu, fpu_reduction, c_puct, log_puct, log_const, vlw,
                  visits, wins, vl, prior, net, status, first, count, inflated, expanded, paths,
                  lengths):
    """A batch's descents in one call (one Python-to-numba crossing a batch)."""
    for b in range(batch):
        lengths[b] = descend(0, color, root_fpu, fpu_reduction, c_puct, log_puct, log_const,
                             vlw, visits, wins, vl, prior, net, status, first, count, inflated,
                             expanded, paths[b])


def compiled_batch(a, color, p, batch, paths, lengths):
    descend_batch(batch, color, p.root_fpu_reduction(), p.fpu_reduction, p.c_puct, p.log_puct,
                  p.log_const, p.virtual_loss, a["visits"], a["wins"], a["vl"], a["prior"],
                  a["net"], a["status"], a["first"], a["count"], a["inflated"], a["expanded"],
                  paths, lengths)


def main() -> None:
    visits = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    print(f"{visits} visits grown by the Python search, then batches of {batch} descents")
    for move in (40, 120, 200):
        search, state = grown_search(move, visits, batch)
        color = state.to_move
        a = to_arrays(search.root)
        p = search.params
        run = search.start(state, color)
        run.prepare()
        run.begin(Limits(10**9, 10**9, 10**9), Progress())
        # The same choices: the first batch's paths, move by move.
        py = run.collect(batch)
        paths = np.zeros((batch, 400), np.int64)
        lengths = np.zeros(batch, np.int64)
        inflated0 = a["inflated"].copy()
        compiled_batch(a, color, p, len(py.leaves), paths, lengths)
        same = 0
        for k, (path, _, _) in enumerate(py.leaves):
            ours = [int(a["move"][paths[k, j]]) for j in range(1, lengths[k])]
            same += ours == [node.move for node in path[1:]]
        run.forget(py)
        for k in range(len(py.leaves)):
            undo(paths[k], lengths[k], p.virtual_loss, a["vl"])
        a["inflated"][:] = inflated0
        # Time: Python's collect + forget against the compiled descents + undo.
        rounds = 200
        began = time.perf_counter()
        for _ in range(rounds):
            run.forget(run.collect(batch))
        py_us = (time.perf_counter() - began) / (rounds * batch) * 1e6
        began = time.perf_counter()
        for _ in range(rounds):
            compiled_batch(a, color, p, batch, paths, lengths)
            for k in range(batch):
                undo(paths[k], lengths[k], p.virtual_loss, a["vl"])
        c_us = (time.perf_counter() - began) / (rounds * batch) * 1e6
        depth = float(np.mean(lengths))
        # Backups: Python's along a node path, the compiled one along an index path.
        nodes = py.leaves[0][0]
        for node in nodes:
            node.virtual_loss += p.virtual_loss
        began = time.perf_counter()
        for _ in range(2000):
            backup(nodes, 0.5, 0)
        py_b = (time.perf_counter() - began) / 2000 * 1e6
        backup_path(paths[0], lengths[0], 0.5, 0, a["visits"], a["wins"], a["vl"])  # compiled
        began = time.perf_counter()
        for _ in range(2000):
            backup_path(paths[0], lengths[0], 0.5, 0, a["visits"], a["wins"], a["vl"])
        c_b = (time.perf_counter() - began) / 2000 * 1e6
        print(f"move {move}: {len(a['move'])} rows; first batch: {same} of {len(py.leaves)} "
              f"paths the same; descent {py_us:.1f} us Python, {c_us:.2f} us compiled "
              f"(depth {depth:.1f}); backup {py_b:.2f} us Python, {c_b:.2f} us compiled")


if __name__ == "__main__":
    main()
