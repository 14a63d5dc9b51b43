"""The 8 board symmetries, numbered as Leela Zero numbers them (reference doc 4.5).

Owns: `SYMMETRY_TABLE`, `transform_planes`, `untransform_policy`, `symmetry_hash(es)`.
Imports: numpy, game.coords, game.zobrist.

Symmetry s acts on (x, y) in this order: if s & 4 swap x and y; if s & 2 x <- 18 - x; if s & 1
y <- 18 - y. `SYMMETRY_TABLE[s][idx]` is the index of T_s(idx). The network sees, at input index
idx, the board point SYMMETRY_TABLE[s][idx]; its output prior at idx belongs to that same point.
Pass (policy slot 361) is never transformed. All eight are their own inverses except 5 and 6,
which are each other's.
"""

from __future__ import annotations

import numpy as np

from leelaz.game.coords import ALL_VERTICES, BOARD_SIZE, NUM_INTERSECTIONS, vertex_from_index
from leelaz.game.zobrist import BLACK_TO_MOVE, HASH_INIT, ZOBRIST, ZOBRIST_KO, ZOBRIST_PRIS

NUM_SYMMETRIES = 8
IDENTITY = 0


def symmetric_xy(x: int, y: int, s: int) -> tuple[int, int]:
    """(x, y) under symmetry s (LZ's Network::get_symmetry)."""
    if s & 4:
        x, y = y, x
    if s & 2:
        x = BOARD_SIZE - 1 - x
    if s & 1:
        y = BOARD_SIZE - 1 - y
    return x, y


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


def remap_cached_policy(cached: np.ndarray, s: int) -> np.ndarray:
    """A policy cached for the position T_s(P), read for P: policy[idx] = cached[T_s(idx)]."""
    return cached[..., POLICY_TABLE[s]]


# Zobrist keys per symmetry, as arrays: _SYM_KEYS[s][colour][idx] = ZOBRIST[colour][T_s(v)].
#: The mailbox slot of each of the 361 points, in index order.
POINTS = _VERTS = np.array(ALL_VERTICES, dtype=np.intp)
_ZOB = np.array(ZOBRIST, dtype=np.uint64)  # [4, 441]
_SYM_KEYS = np.stack([_ZOB[:, _VERTS[SYMMETRY_TABLE[s]]] for s in range(NUM_SYMMETRIES)])
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
    The cache key of the mirrored position, used for symmetric cache look-ups (doc 3.9).
    """
    return symmetry_hashes(board, (s,))[0]


_POINTS = np.arange(NUM_INTERSECTIONS)
_MIRRORS = tuple(range(1, NUM_SYMMETRIES))


def symmetry_hashes(board, symmetries=_MIRRORS) -> list[int]:
    """`symmetry_hash` for several symmetries at once (hot path: the cache probes the 7
    mirrors of every new leaf early in the game; one gather and one XOR-reduce for all)."""
    colours = board_colours(board)
    sym = list(symmetries)
    keys = _SYM_KEYS[sym][:, colours, _POINTS]  # [len(sym), 361]
    stones = np.bitwise_xor.reduce(keys, axis=1)
    common = HASH_INIT ^ ZOBRIST_PRIS[0][board.prisoners[0]] ^ ZOBRIST_PRIS[1][board.prisoners[1]]
    if board.to_move == 0:
        common ^= BLACK_TO_MOVE
    ko = board.ko_move
    return [int(h) ^ common ^ ZOBRIST_KO[int(_VERTEX_MAP[s][ko])]
            for h, s in zip(stones.tolist(), sym)]


assert all(v == vertex_from_index(i) for i, v in enumerate(ALL_VERTICES))
