"""Expanding leaves: their legal points, and the children of a whole batch at once.

Owns: `legal_points` (one position's legal moves, as the search needs them), `children_of`
(one leaf's children: its priors renormalised and sorted, what `UCTNode.create_children`
keeps), `expand_batch` (the children of every leaf of an evaluated batch at once) and
`request_compiled` / `compiled_kernels` (its compiled loops, search/expansion_kernels.py,
loaded in the background where numba is installed). Imports: numpy, game.coords.

Why a batch: expanding one leaf is a dozen small numpy calls (legal points, gather the policy,
renormalise, sort), each costing more in call overhead than in arithmetic. Done for the 32
leaves of a batch together, the same dozen calls serve all of them, and the search's Python
time per playout drops by about a third on small networks, where that time is the limit.
The result is exactly `children_of` on each leaf, the deliberate pair of this module (tested
leaf by leaf in tests/test_expansion.py), so the search does not change; only the
memory-pressure and move-restriction cases still go one leaf at a time.
"""

from __future__ import annotations

import os
import threading
from array import array

import numpy as np

from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, NUM_VERTICES, PASS, STRIDE,
                                SLOT_OF_VERTEX, VERTEX_OF_SLOT)

#: C's FLT_MIN: priors summing below it are replaced by an even spread (as Leela Zero does).
FLT_MIN = 1.17549435e-38

#: A leaf may pass when it has at most this many legal points (LZ: "pass only when few moves
#: are left"), or when it is winning on the board anyway.
FEW_MOVES = 19
#: ... "winning" meaning the network gives the side to move more than this.
PASS_WINRATE = 0.8

#: The legal-point arrays below cover the mailbox rows between the borders.
_INNER = NUM_VERTICES - 2 * STRIDE
#: The inner index of each policy slot's point (its vertex less the top border row).
_INNER_OF_SLOT = np.array(ALL_VERTICES, dtype=np.intp) - STRIDE
_POINTS = len(_INNER_OF_SLOT)  # 361; slot 361 is pass
#: The vertex of each slot, pass last (coords.VERTEX_OF_SLOT).
_VERTEX_OF_SLOT = np.array(VERTEX_OF_SLOT, dtype=np.int16)
#: Ties on the prior go to the higher vertex, and pass is the lowest vertex (-1): a rank per
#: slot that orders them the same way (pass 0, the points 1..361 in vertex order).
_TIE_RANK = np.append(np.arange(1, _POINTS + 1), 0).astype(np.int64)
_RANK_BITS = 9
_RANK_MASK = (1 << _RANK_BITS) - 1
#: The vertex of each rank.
_VERTEX_OF_RANK = np.append(PASS, _VERTEX_OF_SLOT[:_POINTS]).astype(np.int16)


def _legal_inner(boards, colors) -> np.ndarray:
    """bool [n, _INNER]: each board's legal points for its colour, indexed by vertex - STRIDE.

    A point with an empty neighbour is legal unless it is the ko point; only the few points
    without one get the board's own suicide test (hot path: one call per batch)."""
    n = len(boards)
    empty = np.frombuffer(b"".join([b.square for b in boards]), dtype=np.uint8)
    empty = empty.reshape(n, NUM_VERTICES) == EMPTY  # the border is never EMPTY
    inner = empty[:, STRIDE:-STRIDE]
    free = (empty[:, :-2 * STRIDE] | empty[:, 2 * STRIDE:] | empty[:, STRIDE - 1:-STRIDE - 1]
            | empty[:, STRIDE + 1:NUM_VERTICES - STRIDE + 1])
    legal = inner & free
    kos = [b.ko_move for b in boards]
    for row, ko in enumerate(kos):
        if ko:
            legal[row, ko - STRIDE] = False
    rows, points = np.nonzero(inner > free)  # empty, no empty neighbour
    for row, i in zip(rows.tolist(), points.tolist()):
        v = i + STRIDE
        legal[row, i] = v != kos[row] and not boards[row].is_suicide(colors[row], v)
    return legal


def legal_points(state, color: int) -> np.ndarray:
    """GameState.legal_moves(color) as a sorted int16 array (hot path: the root's expansion
    and any leaf expanded on its own)."""
    legal = _legal_inner([state.board], [color])[0]
    return (np.flatnonzero(legal) + STRIDE).astype(np.int16)


def pass_allowed(state, legal_count: int, winrate: float, dumbpass: bool) -> bool:
    """May a leaf have pass among its children? Always with --dumbpass; otherwise only when
    few moves are left, or when the side to move (network `winrate`) would win by passing."""
    if dumbpass or legal_count <= FEW_MOVES:
        return True
    if winrate <= PASS_WINRATE:
        return False
    score = state.final_score()
    return (score if state.to_move == BLACK else -score) >= 0


#: coords.SLOT_OF_VERTEX as an index array (PASS, -1, reads slot 361).
_POLICY_SLOT = np.array(SLOT_OF_VERTEX, dtype=np.intp)
_PASS_ONLY = np.array([PASS], dtype=np.int16)


def children_of(candidates, policy, allow_pass: bool) -> tuple[np.ndarray, np.ndarray]:
    """One leaf's children: (moves int16, priors float32), sorted by (prior, vertex)
    descending (equal priors put the higher vertex first, pass last), the priors renormalised
    over the legal `candidates` (vertices, plus pass when `allow_pass`), evenly when they sum
    below FLT_MIN. `expand_batch` computes the same for a whole batch."""
    # The sum runs in float32 in candidate order, as Leela Zero's loop adds them up.
    moves = np.asarray(candidates, dtype=np.int16)
    if allow_pass:
        moves = np.concatenate((moves, _PASS_ONLY))
    pol = np.asarray(policy, dtype=np.float32)
    priors = pol[_POLICY_SLOT[moves]]
    total = np.cumsum(priors, dtype=np.float32)[-1] if len(priors) else np.float32(0.0)
    if total > FLT_MIN:
        priors /= total
    elif len(priors):
        priors[:] = np.float32(1.0 / len(priors))
    order = np.lexsort((moves, priors))[::-1]  # (prior, vertex) descending
    return moves[order], priors[order]


def expand_batch(nodes, states, evals, dumbpass: bool) -> tuple[list[float], int]:
    """Give every leaf `nodes[i]` (position `states[i]`, evaluation `evals[i]`) its children,
    exactly as `children_of` (and `UCTNode.create_children` with no memory pressure) would.
    Returns each leaf's value from Black's side and the number of children made.

    Hot path: one pass over the whole batch. The priors are renormalised with a running
    float32 sum in vertex order, pass last (Leela Zero's loop), and sorted by (prior,
    vertex) descending through one integer key: a non-negative float's bits order as it does.
    The legal points and the keys come from the compiled kernels once they are loaded
    (`request_compiled`), else from NumPy; the two give the same children."""
    n = len(nodes)
    colors = [st.to_move for st in states]
    winrates = [float(ev.winrate) for ev in evals]
    boards = [st.board for st in states]
    kernels = compiled_kernels()
    if kernels is not None:
        mask, counts = _legal_slots_compiled(kernels, boards, colors)
    else:
        legal = _legal_inner(boards, colors)
        mask = np.empty((n, _POINTS + 1), dtype=bool)
        mask[:, :_POINTS] = legal[:, _INNER_OF_SLOT]
        counts = mask[:, :_POINTS].sum(axis=1)
    counts = counts.tolist()
    for i, count in enumerate(counts):
        allow = pass_allowed(states[i], count, winrates[i], dumbpass)
        mask[i, _POINTS] = allow
        counts[i] = count + allow
    policies = np.concatenate([ev.policy for ev in evals]).reshape(n, _POINTS + 1)
    if kernels is not None:
        keys = kernels.child_keys(mask, policies, np.array(counts, dtype=np.int64), _TIE_RANK,
                                  _RANK_BITS, FLT_MIN)
    else:
        keys = _child_keys(mask, policies, counts)
    keys.sort(axis=1)
    keys = keys[:, ::-1]  # descending: the legal entries first
    move_bytes = _VERTEX_OF_RANK[keys & _RANK_MASK].tobytes()
    prior_bytes = ((keys >> _RANK_BITS) - 1).astype(np.int32).view(np.float32).tobytes()
    row_moves = 2 * (_POINTS + 1)
    row_priors = 4 * (_POINTS + 1)
    values = []
    for i, node in enumerate(nodes):
        black = winrates[i] if colors[i] == BLACK else 1.0 - winrates[i]
        start_m = i * row_moves
        start_p = i * row_priors
        node.adopt_children(array("h", move_bytes[start_m:start_m + 2 * counts[i]]),
                            array("f", prior_bytes[start_p:start_p + 4 * counts[i]]), black)
        values.append(black)
    return values, sum(counts)


def _child_keys(mask, policies, counts) -> np.ndarray:
    """int64 [n, slots]: the sort keys of expand_batch, in NumPy (the reference of
    expansion_kernels.child_keys). The key holds the prior's bits (plus one, so that an
    illegal entry, 0, sorts below a legal prior of 0) and the slot's tie rank: sorting the
    keys themselves (much faster than an argsort) gives the order and, decoded, the moves
    and priors."""
    priors = np.where(mask, policies, np.float32(0.0))
    totals = np.cumsum(priors, axis=1, dtype=np.float32)[:, -1]
    uniform = totals <= FLT_MIN
    if uniform.any():
        for i in np.flatnonzero(uniform).tolist():
            if counts[i]:
                priors[i] = np.where(mask[i], np.float32(1.0 / counts[i]), np.float32(0.0))
        totals[uniform] = 1.0
    priors /= totals[:, None]
    return ((priors.view(np.int32).astype(np.int64) + mask) << _RANK_BITS) | _TIE_RANK


# ------------------------------------------------------------------ the compiled kernels
#: Set LEELAZ_COMPILED=0 to keep the NumPy expansion even where numba is installed (to
#: compare the two).
COMPILED_VARIABLE = "LEELAZ_COMPILED"
#: The vertex of each point's policy slot, as the kernels index boards.
_VERTEX_OF_POINT = np.array(ALL_VERTICES, dtype=np.int64)

_kernels = None  # search/expansion_kernels once compiled, else None
_loading: threading.Thread | None = None


def compiled_kernels():
    """search/expansion_kernels once `request_compiled` has had them compiled (or loaded
    from numba's cache), else None: expand_batch then runs on NumPy."""
    return _kernels


def request_compiled() -> None:
    """Have the compiled kernels loaded, in a background thread (once per process): a search
    whose own Python is the limit asks for them (a GPU's: the search's pipelined runs,
    self-play on an asynchronous backend). The NumPy code serves until they are ready, since
    numba's import and a first compilation take seconds, which neither a start nor a move may
    wait for; on the CPU, where the network is the limit, they would buy nothing for that.
    Nothing happens without numba (the `compiled` extra) or with LEELAZ_COMPILED=0."""
    global _loading
    if _loading is None:
        _loading = threading.Thread(target=_load_kernels, name="leelaz-compile", daemon=True)
        _loading.start()


def wait_compiled() -> None:
    """Request the compiled kernels and wait until they are loaded or known to be missing
    (benchmarks: a timed search must not share the interpreter with numba's import)."""
    request_compiled()
    if _loading is not None:
        _loading.join()


def _load_kernels() -> None:
    global _kernels
    if os.environ.get(COMPILED_VARIABLE, "1") == "0":
        return
    try:
        from leelaz.search import expansion_kernels as kernels

        # Compile (or load) them for exactly the argument types expand_batch passes: a
        # board's arrays come read-only, through frombuffer.
        board = np.frombuffer(bytes(NUM_VERTICES), dtype=np.uint8).reshape(1, NUM_VERTICES)
        strings = np.frombuffer(bytes(2 * NUM_VERTICES), dtype=np.int16).reshape(1, -1)
        mask, counts = kernels.legal_slots(board, strings, strings, np.zeros(1, np.int64),
                                           np.zeros(1, np.int64), _VERTEX_OF_POINT, STRIDE,
                                           EMPTY)
        kernels.child_keys(mask, np.zeros((1, _POINTS + 1), np.float32), counts, _TIE_RANK,
                           _RANK_BITS, FLT_MIN)
    except Exception:  # no numba, or it could not compile here: NumPy serves
        return
    _kernels = kernels


def _legal_slots_compiled(kernels, boards, colors):
    """(bool [n, 362] by policy slot, pass False; int64 [n]): the legal points and their
    number from expansion_kernels.legal_slots."""
    n = len(boards)
    square = np.frombuffer(b"".join([b.square for b in boards]), dtype=np.uint8)
    parent = np.frombuffer(b"".join([b.parent.tobytes() for b in boards]), dtype=np.int16)
    libs = np.frombuffer(b"".join([b.libs.tobytes() for b in boards]), dtype=np.int16)
    return kernels.legal_slots(square.reshape(n, NUM_VERTICES), parent.reshape(n, -1),
                               libs.reshape(n, -1), np.array(colors, dtype=np.int64),
                               np.array([b.ko_move for b in boards], dtype=np.int64),
                               _VERTEX_OF_POINT, STRIDE, EMPTY)
