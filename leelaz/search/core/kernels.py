"""The compiled search core's loops (numba): a batch's descents with their board play, and
the expansion and backup of its evaluated leaves, over the array tree of core/arrays.py.

Owns: `collect` (Leela Zero's UCTSearch::play_simulation descents under virtual loss, with
UCTNode::uct_select_child's PUCT, FPU reduction and virtual loss, the moves played on a
mailbox board with captures and the positional-superko test), `expansion_keys` and `attach`
(each leaf's legal moves, pass rule, renormalised priors; its children in Leela Zero's order,
sorted by NumPy in between; then the backups), `subtree_order` and `copy_subtrees` (a reused
tree's rows) and the board helpers they share. Imports: numpy and numba only.

Each is the deliberate compiled copy of the Python reference, which stays the authority:
- selection: `UCTNode.select_child` (search/node.py; src/UCTNode.cpp uct_select_child),
  `RootSelector.select` and `forced_child` (search/select.py);
- the board: `Board.play_move` / `_place` / `_merge` / `_remove_string` (game/board.py;
  src/FullBoard.cpp, src/FastBoard.cpp), with the stones-only ko hash and the prisoners
  (the leaf's full hash, the network cache's key, is put together from them in
  core/leaf_inputs.py),
  and each path position's mailbox for the leaf's input planes;
- area scoring: `Board.area_counts` (src/FastBoard.cpp calc_reach_color);
- a progress report's reading of the tree: `UCTNode.best_child`, `node_less` and
  `stats.principal_variation` (`best_child`, `principal_variations`; core/report.py);
- expansion: `expansion.expand_batch` / `children_of` and `pass_allowed` (src/UCTNode.cpp
  create_children);
- a reused tree into new arrays: `CoreTree.from_root`'s numbering, copied from the last
  call's arrays (`subtree_order`, `copy_subtrees`; core/arrays.py `from_kept`);
- the collection loop and backup: `SearchRun.collect` / `_descend` and `node.backup`.
tests/test_search_core.py grows the same trees with both, move for move.

The tree: children are rows of a compact child tier (move, float32 prior, node index or -1
while not inflated: Leela Zero's UCTNodePointer), nodes rows of a node tier (statistics).
A node's children are consecutive child rows, sorted by (prior, vertex) descending; the
inflated ones are always a prefix (see node.py's docstring: the best uninflated child is the
first), so selection scores the prefix and the next compact child only.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaWarning

warnings.filterwarnings("ignore", category=NumbaWarning)


def _probe():
    return 0


def _can_cache() -> bool:
    """Whether numba can keep the compiled kernels on disk for later processes: beside this
    file (a writable checkout or site-packages), else under the user's cache directory
    (~/.cache/numba; NUMBA_CACHE_DIR chooses another). Where neither is writable, numba
    refuses `cache=True` when a function is decorated; the kernels are then compiled
    in every process instead of failing to load."""
    try:
        njit(cache=True)(_probe)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return False
    return True


#: numba's on-disk cache is used (see `_can_cache`).
CACHE = _can_cache()

STRIDE = 21
NUM_VERTICES = 441
BLACK = 0
WHITE = 1
EMPTY = 2
INVAL = 3
PASS = -1
ACTIVE = 0
PRUNED = 1
INVALID = 2
MAX_PASSES = 4
M2_START = 1e-4
FLT_MIN = 1.17549435e-38
FEW_MOVES = 19
PASS_WINRATE = 0.8
POINTS = 361

# What a descent ended in (run.py's _LEAF, _VALUE, _NOVALUE, _COLLISION).
LEAF = 0
VALUE = 1
NOVALUE = 2
COLLISION = 3

# meta columns of a board: ko point, consecutive passes, stones-only hash.
KO = 0
PASSES = 1
KO_HASH = 2
PRISONERS = 3  # Black's prisoners; White's at PRISONERS + 1 (the full hash's terms)
#: The positions a leaf's input planes need: its own and the 7 before it.
HISTORY = 8


# ------------------------------------------------------------------ the board
@njit(cache=CACHE, nogil=True, inline="always")
def _copy_board(sq, par, nxt, libs, stn, meta, s, dsq, dpar, dnxt, dlibs, dstn, dmeta, d):
    # element loops: numba's slice copies cost several times these few hundred bytes
    for v in range(sq.shape[1]):
        dsq[d, v] = sq[s, v]
        dpar[d, v] = par[s, v]
        dnxt[d, v] = nxt[s, v]
        dlibs[d, v] = libs[s, v]
        dstn[d, v] = stn[s, v]
    for k in range(meta.shape[1]):
        dmeta[d, k] = meta[s, k]


@njit(cache=CACHE, nogil=True)
def _remove_string(sq, par, libs, nxt, b, start, delta):
    color = sq[b, start]
    other = 1 - color
    h = np.int64(0)
    removed = 0
    pos = start
    while True:
        sq[b, pos] = EMPTY
        par[b, pos] = 0
        h ^= delta[color, pos]
        removed += 1
        seen0 = -1
        seen1 = -1
        seen2 = -1
        for k in range(4):
            n = pos - STRIDE if k == 0 else pos + 1 if k == 1 else pos + STRIDE if k == 2 \
                else pos - 1
            if sq[b, n] == other:
                r = par[b, n]
                if r != seen0 and r != seen1 and r != seen2:
                    libs[b, r] += 1
                    if seen0 < 0:
                        seen0 = r
                    elif seen1 < 0:
                        seen1 = r
                    else:
                        seen2 = r
        pos = nxt[b, pos]
        if pos == start:
            break
    return removed, h


@njit(cache=CACHE, nogil=True)
def _merge(sq, par, libs, nxt, stn, b, ip, aip):
    stn[b, ip] += stn[b, aip]
    lib = libs[b, ip]
    pos = aip
    while True:
        for k in range(4):
            n = pos - STRIDE if k == 0 else pos + 1 if k == 1 else pos + STRIDE if k == 2 \
                else pos - 1
            if (sq[b, n] == EMPTY and par[b, n - STRIDE] != ip and par[b, n + 1] != ip
                    and par[b, n + STRIDE] != ip and par[b, n - 1] != ip):
                lib += 1
        par[b, pos] = ip
        pos = nxt[b, pos]
        if pos == aip:
            break
    libs[b, ip] = lib
    t = nxt[b, aip]
    nxt[b, aip] = nxt[b, ip]
    nxt[b, ip] = t


@njit(cache=CACHE, nogil=True)
def play(sq, par, nxt, libs, stn, meta, b, color, v, delta):
    """Board.play_move on board row b, keeping the ko point, the passes, the ko hash and
    the prisoners."""
    if v == PASS:
        meta[b, KO] = 0
        p = meta[b, PASSES]
        meta[b, PASSES] = p + 1 if p < MAX_PASSES else MAX_PASSES
        return
    meta[b, PASSES] = 0
    kh = meta[b, KO_HASH] ^ delta[color, v]
    sq[b, v] = color
    par[b, v] = v
    nxt[b, v] = v
    stn[b, v] = 1
    own = 0
    lib = 0
    seen0 = -1
    seen1 = -1
    seen2 = -1
    for k in range(4):
        n = v - STRIDE if k == 0 else v + 1 if k == 1 else v + STRIDE if k == 2 else v - 1
        s = sq[b, n]
        if s == EMPTY:
            lib += 1
        elif s != INVAL:
            if s == color:
                own = 1
            r = par[b, n]
            if r != seen0 and r != seen1 and r != seen2:
                libs[b, r] -= 1
                if seen0 < 0:
                    seen0 = r
                elif seen1 < 0:
                    seen1 = r
                else:
                    seen2 = r
    libs[b, v] = lib
    if seen0 < 0:
        meta[b, KO] = 0
        meta[b, KO_HASH] = kh
        return
    opp = 1 - color
    captured = 0
    captured_at = 0
    for k in range(4):
        n = v - STRIDE if k == 0 else v + 1 if k == 1 else v + STRIDE if k == 2 else v - 1
        s = sq[b, n]
        if s == opp:
            if libs[b, par[b, n]] <= 0:
                got, h = _remove_string(sq, par, libs, nxt, b, n, delta)
                captured += got
                kh ^= h
                captured_at = n
        elif s == color:
            ip = par[b, v]
            aip = par[b, n]
            if ip != aip:
                if stn[b, ip] >= stn[b, aip]:
                    _merge(sq, par, libs, nxt, stn, b, ip, aip)
                else:
                    _merge(sq, par, libs, nxt, stn, b, aip, ip)
    ko = 0
    if captured > 0:
        meta[b, PRISONERS + color] += captured
    if captured == 0 and libs[b, par[b, v]] == 0:
        got, h = _remove_string(sq, par, libs, nxt, b, v, delta)  # suicide
        kh ^= h
    elif captured == 1 and lib == 0 and own == 0:
        ko = captured_at
    meta[b, KO] = ko
    meta[b, KO_HASH] = kh


@njit(cache=CACHE, nogil=True)
def area_score(sq, b, komi):
    """Board.area_score: Black's stones and reach minus White's, minus komi."""
    counts = np.zeros(2, np.int64)
    reach = np.zeros(NUM_VERTICES, np.bool_)
    stack = np.empty(NUM_VERTICES, np.int64)
    for color in range(2):
        reach[:] = False
        top = 0
        for v in range(NUM_VERTICES):
            if sq[b, v] == color:
                reach[v] = True
                stack[top] = v
                top += 1
        while top > 0:
            top -= 1
            v = stack[top]
            for k in range(4):
                n = v - STRIDE if k == 0 else v + 1 if k == 1 else v + STRIDE if k == 2 \
                    else v - 1
                if not reach[n] and sq[b, n] == EMPTY:
                    reach[n] = True
                    stack[top] = n
                    top += 1
        c = 0
        for v in range(NUM_VERTICES):
            if reach[v]:
                c += 1
        counts[color] = c
    return counts[0] - counts[1] - komi


# ------------------------------------------------------------------ selection
@njit(cache=CACHE, nogil=True)
def select_child(node, color, fpu_reduction, c_puct, log_puct, log_const, visits, wins, vl,
                 prior, net, status, first, count, inflated, cnode, cmove, cprior, nodes_used,
                 nmove, m2, expanded):
    """UCTNode.select_child over the arrays; returns the chosen child row (inflating the next
    compact child when it wins, into node row nodes_used[0]) or -1 when no child is ACTIVE."""
    lo = first[node]
    hi = lo + inflated[node]
    parent_visits = 0
    visited_policy = 0.0
    for c in range(lo, hi):
        nd = cnode[c]
        if status[nd] != INVALID:
            n = visits[nd]
            if n:
                parent_visits += n
                visited_policy += prior[nd]
    cn = c_puct * math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
    base = net[node]
    fpu = base if color == BLACK else 1.0 - base
    fpu -= fpu_reduction * math.sqrt(visited_policy)
    white = color == WHITE
    best = -1
    best_score = -1e300
    for c in range(lo, hi):
        nd = cnode[c]
        if status[nd] != ACTIVE:
            continue
        n = visits[nd]
        v = vl[nd]
        if n:
            q = (wins[nd] + (v if white else 0)) / (n + v)
            if white:
                q = 1.0 - q
        elif v:
            q = -1.0 - fpu_reduction
        else:
            q = fpu
        score = q + cn * prior[nd] / (1 + n)
        if score > best_score:
            best_score = score
            best = c
    if inflated[node] < count[node] and fpu + cn * np.float64(cprior[hi]) > best_score:
        nd = nodes_used[0]
        nodes_used[0] = nd + 1
        _fresh_node(nd, np.float64(cprior[hi]), visits, wins, vl, prior, net, status)
        nmove[nd] = cmove[hi]
        m2[nd] = M2_START
        expanded[nd] = False
        cnode[hi] = nd
        inflated[node] += 1
        best = hi
    return best


@njit(cache=CACHE, nogil=True)
def root_select(color, fpu_reduction, c_puct, log_puct, log_const, visits, wins, vl, prior,
                net, status, first, inflated, cnode, touched):
    """node.RootSelector.select over the arrays (the root's children are all inflated):
    select_child's scores for the children selected before in this run (`touched`, or with
    visits, virtual loss or INVALID when the run began), the first best in child order; the
    others are represented by the one with the highest fresh score (the earliest in child
    order on a tie: all of them while no child has a visit, whatever root noise did to the
    priors), which wins if it scores higher, or as high and comes earlier: select_child's
    choice, as RootSelector makes it."""
    lo = first[0]
    hi = lo + inflated[0]
    parent_visits = 0
    visited_policy = 0.0
    for c in range(lo, hi):
        nd = cnode[c]
        if status[nd] != INVALID:
            n = visits[nd]
            if n:
                parent_visits += n
                visited_policy += prior[nd]
    cn = c_puct * math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
    base = net[0]
    fpu = base if color == BLACK else 1.0 - base
    fpu -= fpu_reduction * math.sqrt(visited_policy)
    white = color == WHITE
    best = -1
    best_score = -1e300
    fresh = -1
    fresh_best = -1e300
    for c in range(lo, hi):
        nd = cnode[c]
        if not touched[c - lo]:
            if status[nd] == ACTIVE:
                fs = fpu + cn * prior[nd]  # select.fresh_score
                if fs > fresh_best:  # strictly: the earliest of equal scores
                    fresh_best = fs
                    fresh = c
            continue
        if status[nd] != ACTIVE:
            continue
        n = visits[nd]
        v = vl[nd]
        if n:
            q = (wins[nd] + (v if white else 0)) / (n + v)
            if white:
                q = 1.0 - q
        elif v:
            q = -1.0 - fpu_reduction
        else:
            q = fpu
        score = q + cn * prior[nd] / (1 + n)
        if score > best_score:
            best_score = score
            best = c
    if fresh >= 0:
        score = fresh_best
        if score > best_score or (score == best_score and fresh < best):
            touched[fresh - lo] = True
            best = fresh
    return best


@njit(cache=CACHE, nogil=True)
def forced_child(forced_k, vlw, visits, vl, prior, status, first, inflated, cnode):
    """node.RootSelector.forced_child over the arrays (self-play's forced playouts): the
    first visited, ACTIVE root child in child order whose visits, pending ones counted, are
    below select.forced_visits of its prior; -1 when none is owed any."""
    lo = first[0]
    hi = lo + inflated[0]
    total = 0
    for c in range(lo, hi):
        nd = cnode[c]
        if status[nd] != INVALID:
            total += visits[nd]
    for c in range(lo, hi):
        nd = cnode[c]
        n = visits[nd]
        if n and status[nd] == ACTIVE:
            pending = vl[nd] / max(1, vlw)
            if n + pending < math.sqrt(forced_k * prior[nd] * total):
                return c
    return -1


@njit(cache=CACHE, nogil=True, inline="always")
def _fresh_node(nd, p, visits, wins, vl, prior, net, status):
    visits[nd] = 0
    wins[nd] = 0.0
    vl[nd] = 0
    prior[nd] = p
    net[nd] = 0.5
    status[nd] = ACTIVE


@njit(cache=CACHE, nogil=True)
def _repeats(kh, seen, hashes, depth):
    """Positional superko below the root: the game's positions (`seen`, sorted) or the
    path's."""
    i = np.searchsorted(seen, kh)
    if i < seen.shape[0] and seen[i] == kh:
        return True
    for j in range(depth):
        if hashes[j] == kh:
            return True
    return False


@njit(cache=CACHE, nogil=True)
def _backup(path, length, value, vlw, visits, wins, m2, vl):
    for k in range(length):
        nd = path[k]
        n = visits[nd]
        w = wins[nd]
        old_delta = value - w / n if n > 0 else 0.0
        n += 1
        w += value
        visits[nd] = n
        wins[nd] = w
        m2[nd] += old_delta * (value - w / n)
        vl[nd] -= vlw


# ------------------------------------------------------------------ one batch
@njit(cache=CACHE, nogil=True)
def collect(limit, root_color, root_fpu, fpu_reduction, c_puct, log_puct, log_const, vlw,
            forced_k, komi, seen, delta,
            visits, wins, m2, vl, prior, net, status, expanded, first, count, inflated,
            cnode, cmove, cprior, nodes_used, nmove,
            rsq, rpar, rnxt, rlibs, rstn, rmeta,
            lsq, lpar, lnxt, llibs, lstn, lmeta,
            paths, lengths, colors, hashes, counters, touched, lhist):
    """SearchRun.collect: up to `limit` descents from the root (node 0) under virtual loss,
    the root's child forced first where `forced_k` > 0 (`forced_child`).
    Leaves are left in paths/lengths/colors and their positions in the l* board rows;
    terminal playouts are backed up at once. counters: [leaves, done (terminal playouts)].
    lhist[leaf, k % HISTORY] is the mailbox after the path's k-th move (k from 0): the
    last HISTORY of them are the positions of the leaf's input planes.
    A path longer than paths' width ends as a repetition would (never in a real game)."""
    maxd = paths.shape[1]
    leaves = 0
    attempts = 0
    done = 0
    while leaves < limit and attempts < 2 * limit:
        attempts += 1
        b = leaves  # the descent's board: the leaf's row if it ends in a leaf
        _copy_board(rsq, rpar, rnxt, rlibs, rstn, rmeta, 0, lsq, lpar, lnxt, llibs, lstn,
                    lmeta, b)
        node = 0
        vl[0] += vlw
        paths[b, 0] = 0
        length = 1
        color = root_color
        fpu = root_fpu
        kind = NOVALUE
        value = 0.0
        while True:
            if not expanded[node]:
                if lmeta[b, PASSES] >= 2:
                    score = area_score(lsq, b, komi)
                    value = 1.0 if score > 0 else 0.0 if score < 0 else 0.5
                    kind = VALUE
                elif vl[node] > vlw:
                    kind = COLLISION
                else:
                    kind = LEAF
                break
            if count[node] == 0:
                kind = NOVALUE
                break
            if node == 0:
                c = -1
                if forced_k > 0.0:  # self-play's forced playouts (off in every other search)
                    c = forced_child(forced_k, vlw, visits, vl, prior, status, first,
                                     inflated, cnode)
                if c < 0:
                    c = root_select(color, fpu, c_puct, log_puct, log_const, visits, wins,
                                    vl, prior, net, status, first, inflated, cnode, touched)
            else:
                c = select_child(node, color, fpu, c_puct, log_puct, log_const, visits, wins,
                                 vl, prior, net, status, first, count, inflated, cnode, cmove,
                                 cprior, nodes_used, nmove, m2, expanded)
            if c < 0:
                kind = NOVALUE
                break
            child = cnode[c]
            move = cmove[c]
            play(lsq, lpar, lnxt, llibs, lstn, lmeta, b, color, move, delta)
            r = (length - 1) % HISTORY
            for j in range(NUM_VERTICES):  # a plain loop: LLVM makes it a vector copy
                lhist[b, r, j] = lsq[b, j]
            kh = lmeta[b, KO_HASH]
            if move != PASS and _repeats(kh, seen, hashes, length - 1):
                status[child] = INVALID
                kind = NOVALUE
                break
            if length >= maxd:
                kind = NOVALUE
                break
            hashes[length - 1] = kh
            vl[child] += vlw
            paths[b, length] = child
            length += 1
            node = child
            color = 1 - color
            fpu = fpu_reduction
        if kind == LEAF:
            lengths[b] = length
            colors[b] = color
            leaves += 1
            continue
        if kind == VALUE:
            _backup(paths[b], length, value, vlw, visits, wins, m2, vl)
            done += 1
            limit -= 1
            continue
        for k in range(length):
            vl[paths[b, k]] -= vlw
        if kind == COLLISION:
            break
    counters[0] = leaves
    counters[1] = done


@njit(cache=CACHE, nogil=True)
def expansion_keys(n, policies, winrates, dumbpass, komi, lsq, lpar, llibs, lmeta, colors,
                   allowed, allowed_row, vertex_of_slot, tie_rank, keys):
    """The first half of expansion.expand_batch for n evaluated leaves: each leaf's legal
    points (expansion_kernels.legal_slots) that its move restrictions allow (lz-analyze's
    avoid/allow: row allowed_row[i] of `allowed`, by slot; SearchRun.expand filters the
    candidates so), the pass rule (expansion.pass_allowed, counting those points), its
    policy renormalised over them in float32, slot order (expansion_kernels.child_keys),
    as one sortable key per child in keys[i] ((prior bits + 1) << 9 | tie rank; 0 for the
    slots that are no child). NumPy then sorts the rows (much faster than numba's sort on
    these rows, as expand_batch found) and `attach` makes the children."""
    slots = POINTS + 1
    mask = np.zeros(slots, np.bool_)
    row = np.empty(slots, np.float32)
    bits = row.view(np.int32)
    zero = np.float32(0.0)
    for i in range(n):
        color = colors[i]
        other = 1 - color
        legal = 0
        ko = lmeta[i, KO]
        arow = allowed_row[i]
        for s in range(POINTS):
            v = vertex_of_slot[s]
            mask[s] = False
            if lsq[i, v] != EMPTY or v == ko or not allowed[arow, s]:
                continue
            for k in range(4):
                w = v - STRIDE if k == 0 else v + 1 if k == 1 else v + STRIDE if k == 2 \
                    else v - 1
                q = lsq[i, w]
                if (q == EMPTY or (q == color and llibs[i, lpar[i, w]] > 1)
                        or (q == other and llibs[i, lpar[i, w]] <= 1)):
                    mask[s] = True
                    legal += 1
                    break
        wr = winrates[i]
        if dumbpass or legal <= FEW_MOVES:
            allow = True
        elif wr <= PASS_WINRATE:
            allow = False
        else:
            score = area_score(lsq, i, komi)
            allow = (score if color == BLACK else -score) >= 0
        mask[POINTS] = allow
        total_count = legal + (1 if allow else 0)
        total = np.float32(0.0)
        for s in range(slots):
            p = policies[i, s] if mask[s] else zero
            row[s] = p
            total += p
        if total <= FLT_MIN:
            if total_count:
                even = np.float32(1.0 / total_count)
                for s in range(slots):
                    row[s] = even if mask[s] else zero
            total = np.float32(1.0)
        for s in range(slots):
            row[s] = row[s] / total
        for s in range(slots):
            keys[i, s] = (((np.int64(bits[s]) + 1) << 9) | tie_rank[s]) if mask[s] else 0


@njit(cache=CACHE, nogil=True)
def attach(n, keys, winrates, vlw, visits, wins, m2, vl, net, expanded, first, count,
           inflated, cnode, cmove, cprior, children_used, paths, lengths, colors,
           vertex_of_slot, values):
    """The second half: each leaf's children from its sorted keys (the largest first),
    appended to the child tier from children_used[0], its value (Black's) in values, then
    SearchRun._backup_leaves: every value backed up along its path. Returns the number of
    children made."""
    slots = keys.shape[1]
    made = 0
    prior_bits = np.empty(1, np.int32)
    prior = prior_bits.view(np.float32)
    for i in range(n):
        start = children_used[0]
        k = 0
        for j in range(slots - 1, -1, -1):
            key = keys[i, j]
            if key == 0:
                break
            rank = key & 511
            c = start + k
            slot = POINTS if rank == 0 else rank - 1
            cmove[c] = PASS if rank == 0 else vertex_of_slot[slot]
            prior_bits[0] = np.int32((key >> 9) - 1)
            cprior[c] = prior[0]
            cnode[c] = -1
            k += 1
        children_used[0] = start + k
        made += k
        leaf = paths[i, lengths[i] - 1]
        wr = winrates[i]
        black = wr if colors[i] == BLACK else 1.0 - wr
        net[leaf] = black
        expanded[leaf] = True
        first[leaf] = start
        count[leaf] = k
        inflated[leaf] = 0
        values[i] = black
    for i in range(n):
        _backup(paths[i], lengths[i], values[i], vlw, visits, wins, m2, vl)
    return made


@njit(cache=CACHE, nogil=True)
def subtree_order(starts, expanded, first, count, inflated, cnode, order):
    """The rows under `starts` (old node rows; -1 for none) breadth first, as
    CoreTree.from_root numbers a tree's nodes: `order` [: n] gets `starts`, then each row's
    inflated children in turn. Returns (n, the child rows of the rows with an old row)."""
    n = len(starts)
    children = 0
    for i in range(n):
        order[i] = starts[i]
    i = 0
    while i < n:
        r = order[i]
        i += 1
        if r < 0 or not expanded[r]:
            continue
        children += count[r]
        for j in range(first[r], first[r] + inflated[r]):
            order[n] = cnode[j]
            n += 1
    return n, children


@njit(cache=CACHE, nogil=True)
def copy_subtrees(order, n, k, row0, m0, visits, wins, m2, vl, prior, net, status, expanded,
                  first, count, inflated, nmove, cnode, cmove, cprior, nvisits, nwins, nm2,
                  nvl, nprior, nnet, nstatus, nexpanded, nfirst, ncount, ninflated, nnmove,
                  ncnode, ncmove, ncprior):
    """The rows `order` [: n] (subtree_order's, its first `k` the starts) copied to the new
    tree's rows row0 .. row0 + n - 1 and their children to the child rows from m0 on, as
    from_root writes them: an inflated child's node index renumbered to its new row, an
    uninflated one's -1. A row without an old one (-1) is left unexpanded and childless
    (its statistics are the caller's). Returns the child rows used."""
    m = m0
    below = k  # where in `order` the next copied row's inflated children are
    for i in range(n):
        r = order[i]
        d = row0 + i
        if r < 0:
            nexpanded[d] = False
            nfirst[d] = 0
            ncount[d] = 0
            ninflated[d] = 0
            continue
        nvisits[d] = visits[r]
        nwins[d] = wins[r]
        nm2[d] = m2[r]
        nvl[d] = vl[r]
        nprior[d] = prior[r]
        nnet[d] = net[r]
        nstatus[d] = status[r]
        nnmove[d] = nmove[r]
        if not expanded[r]:
            nexpanded[d] = False
            nfirst[d] = 0
            ncount[d] = 0
            ninflated[d] = 0
            continue
        nexpanded[d] = True
        c = count[r]
        inf = inflated[r]
        lo = first[r]
        nfirst[d] = m
        ncount[d] = c
        ninflated[d] = inf
        for j in range(c):
            ncmove[m + j] = cmove[lo + j]
            ncprior[m + j] = cprior[lo + j]
            ncnode[m + j] = row0 + below + j if j < inf else -1
        below += inf
        m += c
    return m


@njit(cache=CACHE, nogil=True)
def tree_stats(n, visits, expanded, first, count, inflated, cnode):
    """search/stats.tree_stats_counts on the arrays (node 0 the root, `n` node rows): the
    child slots counted as nodes, the nodes with more than one visit, the sum and maximum
    of the slots' depths, the visited children. tests/test_search_core.py checks it
    against the walk over the UCTNodes."""
    stack = np.empty(max(n, 1), np.int64)
    depths = np.empty(max(n, 1), np.int64)
    stack[0] = 0
    depths[0] = 0
    sp = 1
    nodes = 0
    non_leaf = 0
    depth_sum = 0
    max_depth = 0
    children = 0
    while sp > 0:
        sp -= 1
        nd = stack[sp]
        d = depths[sp]
        nodes += 1
        if visits[nd] > 1:
            non_leaf += 1
        depth_sum += d
        if d > max_depth:
            max_depth = d
        if not expanded[nd]:
            continue
        unvisited = count[nd] - inflated[nd]
        for j in range(first[nd], first[nd] + inflated[nd]):
            c = cnode[j]
            if visits[c] > 0:
                children += 1
                stack[sp] = c
                depths[sp] = d + 1
                sp += 1
            else:
                unvisited += 1
        if unvisited > 0:
            nodes += unvisited
            depth_sum += unvisited * (d + 1)
            if d + 1 > max_depth:
                max_depth = d + 1
    return nodes, non_leaf, depth_sum, max_depth, children


@njit(cache=CACHE, nogil=True)
def root_contention(white, left, prune, lo, inflated, cnode, visits, wins, m2, status, tq):
    """search/timemanage.prune_noncontenders on the arrays: the root's inflated children
    (node rows cnode[lo:lo + inflated]), `white` the side searched for, `tq[df]` the
    t quantile of search/lcb.py for df = 0..len(tq) - 1 (the last for all larger). Returns
    the number of non-contenders and, when `prune`, marks them PRUNED and the others ACTIVE
    (INVALID children are left alone). The same comparisons in the same float64
    arithmetic; tests/test_search_core.py checks it against the Python function."""
    top = len(tq) - 1
    n_first = 0
    lcb_max = 0.0
    for j in range(lo, lo + inflated):
        nd = cnode[j]
        if status[nd] == INVALID:
            continue
        n = visits[nd]
        if n:
            if n > n_first:
                n_first = n
            if n >= 2:
                q = wins[nd] / n
                if white:
                    q = 1.0 - q
                df = n - 1 if n - 1 < top else top
                lcb = q - tq[df] * math.sqrt(m2[nd] / (n - 1) / n)
                if lcb > lcb_max:
                    lcb_max = lcb
    min_required = n_first - left
    pruned = 0
    for j in range(lo, lo + inflated):
        nd = cnode[j]
        st = status[nd]
        if st == INVALID:
            continue
        n = visits[nd]
        if n >= min_required:
            contender = True
        elif n:
            q = wins[nd] / n
            contender = (1.0 - q if white else q) >= lcb_max
        else:
            contender = False
        if not contender:
            pruned += 1
        if prune:
            new = ACTIVE if contender else PRUNED
            if new != st:
                status[nd] = new
    return pruned


@njit(cache=CACHE, nogil=True, inline="always")
def _worse(a, b, white, threshold, visits, wins, m2, vl, prior, tq):
    """search/node.node_less (src/UCTNode.cpp NodeComp): is node row `a` worse than `b`
    for the side `white` says? The same comparisons in the same float64 arithmetic."""
    na = visits[a]
    nb = visits[b]
    if na > threshold and nb > threshold:
        top = len(tq) - 1
        qa = wins[a] / na
        qb = wins[b] / nb
        if white:
            qa = 1.0 - qa
            qb = 1.0 - qb
        la = qa - tq[na - 1 if na - 1 < top else top] * math.sqrt(m2[a] / (na - 1) / na)
        lb = qb - tq[nb - 1 if nb - 1 < top else top] * math.sqrt(m2[b] / (nb - 1) / nb)
        if la != lb:
            return la < lb
    if na != nb:
        return na < nb
    if na == 0:
        return prior[a] < prior[b]
    ta = na + vl[a]
    tb = nb + vl[b]
    if white:
        ea = 1.0 - (wins[a] + vl[a]) / ta
        eb = 1.0 - (wins[b] + vl[b]) / tb
    else:
        ea = wins[a] / ta
        eb = wins[b] / tb
    return ea < eb


@njit(cache=CACHE, nogil=True)
def best_child(nd, white, ratio, expanded, first, inflated, cnode, visits, wins, m2, vl,
               prior, tq):
    """search/node.UCTNode.best_child on the arrays: the node row of node `nd`'s best
    inflated child for the side `white` says (the first maximum of NodeComp among the
    visited ones, or among all when none is visited), -1 without inflated children."""
    if not expanded[nd] or inflated[nd] == 0:
        return -1
    lo = first[nd]
    hi = lo + inflated[nd]
    max_visits = 0
    for j in range(lo, hi):
        v = visits[cnode[j]]
        if v > max_visits:
            max_visits = v
    threshold = max(2.0, ratio * max_visits)
    best = -1
    for j in range(lo, hi):
        c = cnode[j]
        if max_visits > 0 and visits[c] == 0:
            continue
        if best < 0:
            best = c
        elif _worse(best, c, white, threshold, visits, wins, m2, vl, prior, tq):
            best = c
    return best


@njit(cache=CACHE, nogil=True)
def principal_variations(white, ratio, expanded, first, inflated, cnode, visits, wins, m2,
                         vl, prior, nmove, tq, pv, pv_rows, lengths):
    """search/stats.principal_variation below each of the root's inflated children (the
    root is node row 0 and `white` its side to move): row k of `pv` gets the moves of the
    best-child chain below child k, the same row of `pv_rows` their node rows, `lengths[k]`
    how many (0 for an unvisited child). Returns the root's best child (its node row; -1
    without one), or -2 when a chain is longer than `pv` has room for (the caller then
    reads the tree the slow way)."""
    lo = first[0]
    room = pv.shape[1]
    for k in range(inflated[0]):
        nd = cnode[lo + k]
        length = 0
        if visits[nd] > 0:
            side = not white
            while True:
                b = best_child(nd, side, ratio, expanded, first, inflated, cnode, visits,
                               wins, m2, vl, prior, tq)
                if b < 0 or visits[b] == 0:
                    break
                if length == room:
                    return -2
                pv[k, length] = nmove[b]
                pv_rows[k, length] = b
                length += 1
                nd = b
                side = not side
        lengths[k] = length
    return best_child(0, white, ratio, expanded, first, inflated, cnode, visits, wins, m2,
                      vl, prior, tq)


@njit(cache=CACHE, nogil=True)
def leaf_histories(n, hist, lengths, root_rows, out):
    """core/leaf_inputs.LeafInputs.states: each of the batch's `n` leaves' input history into
    `out[i]` (HISTORY mailboxes, newest first): the path's moves from its descent's ring
    `hist[i]` (move k at slot k % HISTORY) while the path has them, then the root's own
    history `root_rows` from its newest. tests/test_search_core.py checks it against the
    history spelled out leaf by leaf."""
    width = out.shape[2]
    for i in range(n):
        moves = lengths[i] - 1
        count = moves if moves < HISTORY else HISTORY
        for j in range(HISTORY):
            # element loops: numba's slice copies cost far more than these 441 bytes
            if j < count:
                r = (moves - 1 - j) % HISTORY
                for v in range(width):
                    out[i, j, v] = hist[i, r, v]
            else:
                r = j - count
                for v in range(width):
                    out[i, j, v] = root_rows[r, v]


@njit(cache=CACHE, nogil=True)
def leaf_hashes(n, meta, lengths, base, first_flip, ko_terms, pass_terms, black_prisoners,
                white_prisoners, black_to_move, out):
    """core/leaf_inputs.leaf_hashes' formula for the batch's `n` leaves into `out` (uint64):
    the root's hash less its own terms (`base`), then each leaf's ko point, passes,
    stones-only hash and prisoners terms, and Black-to-move once per flip of the side."""
    for i in range(n):
        h = (base ^ ko_terms[meta[i, KO]] ^ pass_terms[meta[i, PASSES]]
             ^ np.uint64(meta[i, KO_HASH]) ^ black_prisoners[meta[i, PRISONERS]]
             ^ white_prisoners[meta[i, PRISONERS + 1]])
        if (lengths[i] - 2 + first_flip) & 1:
            h ^= black_to_move
        out[i] = h
