"""The batch expansion's two loops, compiled (numba): the deliberate fast copy of the NumPy
code in search/expansion.py, which stays the reference (tests/test_expansion.py keeps the
two equal on random positions and policies).

Owns: `legal_slots` (each leaf's legal points, by policy slot) and `child_keys` (each leaf's
priors renormalised and packed with their tie ranks into sortable keys). Imports: numpy and
numba only; loaded in the background by expansion.py when numba is installed (the
`compiled` extra), never at start-up.

Why: in mid-game the NumPy expansion is about a quarter of the search's own time a playout
(docs/performance.md), most of it in two dozen calls on small arrays and a Python loop over
the points without an empty neighbour, where a GPU's search waits on that Python. These two
loops run in a few microseconds a leaf; the sort stays NumPy's (faster than numba's on these
rows). Hot path: one call of each per batch.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaWarning

# A read-only install cannot keep the compiled code: numba then compiles at each start and
# says so; the engine's stderr is read by GUIs, and the code is just as correct.
warnings.filterwarnings("ignore", category=NumbaWarning)


@njit(cache=True, nogil=True)
def legal_slots(square, parent, libs, colors, kos, vertex_of_slot, stride, empty):
    """(bool [n, points + 1], int64 [n]): each row's legal points by policy slot (the last
    slot, pass, left False) and their number, as expansion._legal_inner decides them: an
    empty point that is not the ko point and has an empty neighbour, an own neighbour
    string with more than one liberty, or an opponent neighbour string with one."""
    n = square.shape[0]
    points = vertex_of_slot.shape[0]
    legal = np.zeros((n, points + 1), dtype=np.bool_)
    counts = np.zeros(n, dtype=np.int64)
    for r in range(n):
        color = colors[r]
        other = 1 - color
        ko = kos[r]
        count = 0
        for i in range(points):
            v = vertex_of_slot[i]
            if square[r, v] != empty or v == ko:
                continue
            for step in (-stride, 1, stride, -1):
                w = v + step
                s = square[r, w]
                if (s == empty or (s == color and libs[r, parent[r, w]] > 1)
                        or (s == other and libs[r, parent[r, w]] <= 1)):
                    legal[r, i] = True
                    count += 1
                    break
        counts[r] = count
    return legal, counts


@njit(cache=True, nogil=True)
def child_keys(mask, policies, counts, tie_rank, rank_bits, flt_min):
    """int64 [n, slots]: expand_batch's sort keys. Each row's policy on its legal slots is
    renormalised by its float32 sum taken in slot order (an even spread when that sum is
    at most FLT_MIN), then each slot's key is (the prior's bits + legal) << rank_bits |
    its tie rank, so that sorting a row orders its children as Leela Zero does."""
    n, slots = mask.shape
    keys = np.empty((n, slots), dtype=np.int64)
    row = np.empty(slots, dtype=np.float32)
    bits = row.view(np.int32)
    zero = np.float32(0.0)
    for r in range(n):
        total = np.float32(0.0)
        for i in range(slots):
            p = policies[r, i] if mask[r, i] else zero
            row[i] = p
            total += p
        if total <= flt_min:
            if counts[r]:
                even = np.float32(1.0 / counts[r])
                for i in range(slots):
                    row[i] = even if mask[r, i] else zero
            total = np.float32(1.0)
        for i in range(slots):
            row[i] = row[i] / total
        for i in range(slots):
            legal = 1 if mask[r, i] else 0
            keys[r, i] = ((np.int64(bits[i]) + legal) << rank_bits) | tie_rank[i]
    return keys
