"""The 8 board symmetries, numbered as Leela Zero numbers them (Network::get_symmetry).

Owns: `SYMMETRY_TABLE`, `transform_planes`, `untransform_policy(ies)`, `symmetry_hash(es)`
and `symmetry_hashes_batch`.
Imports: numpy, game.coords, game.zobrist.

Symmetry s acts on (x, y) in this order: if s & 4 swap x and y; if s & 2 x <- 18 - x; if s & 1
y <- 18 - y. `SYMMETRY_TABLE[s][idx]` is the index of T_s(idx). The network sees, at input index
idx, the board point SYMMETRY_TABLE[s][idx]; its output prior at idx belongs to that same point.
Pass (policy slot 361) is never transformed. All eight are their own inverses except 5 and 6,
which are each other's.
"""

from __future__ import annotations

import numpy as np

from leelaz.game.coords import (ALL_VERTICES, BLACK, BOARD_SIZE, EMPTY, NUM_INTERSECTIONS,
                               symmetric_xy, vertex_from_index)
from leelaz.game.zobrist import BLACK_TO_MOVE, HASH_INIT, ZOBRIST, ZOBRIST_KO, ZOBRIST_PRIS

NUM_SYMMETRIES = 8
IDENTITY = 0


def _table() -> np.ndarray:
    table = np.empty((NUM_SYMMETRIES, NUM_INTERSECTIONS), dtype=np.intp)
    for s in range(NUM_SYMMETRIES):
        for idx in range(NUM_INTERSECTIONS):
            x, y = symmetric_xy(idx % BOARD_SIZE, idx // BOARD_SIZE, s)
            table[s, idx] = y * BOARD_SIZE + x
    table.setflags(write=False)
    return table


#: SYMMETRY_TABLE[s][idx] = index of T_s(idx).
SYMMETRY_TABLE = _table()
#: The same for 362-long policies: pass maps to pass.
POLICY_TABLE = np.concatenate([SYMMETRY_TABLE, np.full((NUM_SYMMETRIES, 1), NUM_INTERSECTIONS)],
                              axis=1)
POLICY_TABLE.setflags(write=False)
#: INVERSE[s] is the symmetry that undoes s.
INVERSE = tuple(next(t for t in range(NUM_SYMMETRIES)
                     if np.array_equal(SYMMETRY_TABLE[t][SYMMETRY_TABLE[s]],
                                       np.arange(NUM_INTERSECTIONS)))
                for s in range(NUM_SYMMETRIES))


def transform_planes(planes: np.ndarray, s: int) -> np.ndarray:
    """Input planes [..., 361] as the network sees them under symmetry s: out[idx] = in[T_s(idx)]."""
    return planes[..., SYMMETRY_TABLE[s]]


def untransform_policy(out: np.ndarray, s: int) -> np.ndarray:
    """Network output [..., 362] under symmetry s -> policy in board order (pass stays).

    result[T_s(idx)] = out[idx], as LZ's get_output_internal writes it.
    """
    result = np.empty_like(out)
    result[..., POLICY_TABLE[s]] = out
    return result


#: UNDO_POLICY[s]: the gather that undoes s, untransform_policy(out, s) == out[UNDO_POLICY[s]].
UNDO_POLICY = POLICY_TABLE[list(INVERSE)]
UNDO_POLICY.setflags(write=False)


def untransform_policies(out: np.ndarray, symmetries) -> np.ndarray:
    """`untransform_policy` of each row of out [n, 362] under its own symmetry.

    Hot path (every evaluated leaf): one flat gather for the whole batch (each row's undo
    indices offset to that row), which beats take_along_axis's broadcast fancy index."""
    width = out.shape[-1]
    index = UNDO_POLICY[np.asarray(symmetries, dtype=np.intp)]
    index += np.arange(0, len(index) * width, width)[:, None]
    return np.ascontiguousarray(out).take(index)


def remap_cached_policy(cached: np.ndarray, s: int) -> np.ndarray:
    """A policy cached for the position T_s(P), read for P: policy[idx] = cached[T_s(idx)]."""
    return cached[..., POLICY_TABLE[s]]


# Zobrist keys as arrays, and where each vertex goes under each symmetry (for the ko term).
#: The mailbox slot of each of the 361 points, in index order.
POINTS = _VERTS = np.array(ALL_VERTICES, dtype=np.intp)
_ZOB = np.array(ZOBRIST, dtype=np.uint64)  # [4, 441]
_ZOB_KO = np.array(ZOBRIST_KO, dtype=np.uint64)
_VERTEX_MAP = np.zeros((NUM_SYMMETRIES, len(ZOBRIST_KO)), dtype=np.intp)
for _s in range(NUM_SYMMETRIES):
    _VERTEX_MAP[_s, _VERTS] = _VERTS[SYMMETRY_TABLE[_s]]  # NO_VERTEX (0) stays 0
del _s


def board_colours(board) -> np.ndarray:
    """Colours of the 361 points in index order, uint8, from Board.square (441 mailbox slots)."""
    square = board.square
    if isinstance(square, (bytes, bytearray, memoryview)):
        arr = np.frombuffer(square, dtype=np.uint8)
    else:
        arr = np.asarray(square, dtype=np.uint8)
    return arr[_VERTS]


def symmetry_hash(board, s: int) -> int:
    """LZ's calc_symmetry_hash: the full hash with every stone and the ko point moved by T_s.

    Like LZ, it has no pass term, so symmetry 0 equals `board.hash` only without passes.
    The cache key of the mirrored position, used for symmetric cache look-ups (src/NNCache.cpp).
    """
    return symmetry_hashes(board, (s,))[0]


_MIRRORS = tuple(range(1, NUM_SYMMETRIES))


def symmetry_hashes(board, symmetries=_MIRRORS) -> list[int]:
    """`symmetry_hash` for several symmetries at once (by default the 7 mirrors)."""
    hashes = symmetry_hashes_batch([board])[0]
    return [hashes[s] for s in symmetries]


# The hashes from the stones alone. XOR is its own inverse, so the hash of the position under s
# is the empty board's (the same for every s: T_s only permutes the points) XOR, per stone,
# ZOBRIST[colour][T_s(v)] ^ ZOBRIST[EMPTY][T_s(v)]. Each board keeps the XOR of those stone
# terms for all 8 s as it plays (Board.sym_stones, packed 64 bits per symmetry).
#: HASH_INIT and every empty point: the hash of an empty position before the other terms.
_EMPTY_POINTS = HASH_INIT ^ int(np.bitwise_xor.reduce(_ZOB[EMPTY, _VERTS]))
#: _KO_KEYS[ko][s]: the ko term of the position under s.
_KO_KEYS = _ZOB_KO[_VERTEX_MAP.T]


def symmetry_hashes_batch(boards) -> list[list[int]]:
    """`symmetry_hash(board, s)` for every board and all 8 s: hashes[i][s].

    Hot path: the cache probes the 7 mirrors of every new leaf early in the game (src/NNCache.cpp).
    The stones' terms come packed from each board (`sym_stones`), so the batch is one join
    of their bytes and three XORs: the empty points and side terms, and the ko point's."""
    n = len(boards)
    if not n:
        return []
    width = 8 * NUM_SYMMETRIES
    hashes = np.frombuffer(b"".join([b.sym_stones.to_bytes(width, "little") for b in boards]),
                           dtype="<u8").reshape(n, NUM_SYMMETRIES)
    black, white = ZOBRIST_PRIS
    hashes = hashes ^ np.array([_EMPTY_POINTS ^ black[b.prisoners[0]] ^ white[b.prisoners[1]]
                                ^ (BLACK_TO_MOVE if b.to_move == BLACK else 0) for b in boards],
                               dtype=np.uint64)[:, None]
    hashes ^= _KO_KEYS[[b.ko_move for b in boards]]
    return hashes.tolist()


assert all(v == vertex_from_index(i) for i, v in enumerate(ALL_VERTICES))
