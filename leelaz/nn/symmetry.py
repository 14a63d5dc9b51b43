"""The 8 board symmetries, numbered as Leela Zero numbers them (reference doc 4.5).

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

from leelaz.game.coords import (ALL_VERTICES, BLACK, BOARD_SIZE, EMPTY, NUM_INTERSECTIONS, WHITE,
                               vertex_from_index)
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


# Zobrist keys per symmetry, as arrays: _SYM_KEYS[s][colour][idx] = ZOBRIST[colour][T_s(v)].
#: The mailbox slot of each of the 361 points, in index order.
POINTS = _VERTS = np.array(ALL_VERTICES, dtype=np.intp)
_ZOB = np.array(ZOBRIST, dtype=np.uint64)  # [4, 441]
_ZOB_KO = np.array(ZOBRIST_KO, dtype=np.uint64)
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


_MIRRORS = tuple(range(1, NUM_SYMMETRIES))


def symmetry_hashes(board, symmetries=_MIRRORS) -> list[int]:
    """`symmetry_hash` for several symmetries at once (by default the 7 mirrors)."""
    hashes = symmetry_hashes_batch([board])[0]
    return [hashes[s] for s in symmetries]


# The hashes from the stones alone. XOR is its own inverse, so the hash of the position under s
# is the empty board's (the same for every s: T_s only permutes the points) XOR, per stone,
# ZOBRIST[colour][T_s(v)] ^ ZOBRIST[EMPTY][T_s(v)]: early in the game, when the cache is probed
# with the mirrors, that is a few dozen keys per position instead of 361.
#: Mailbox slots gathered per board: the 361 points, then slot 0 (a border, INVAL, never EMPTY)
#: so that every board has at least one entry and reduceat never meets an empty segment.
_SLOTS = np.append(_VERTS, 0)
_WIDTH = len(_SLOTS)  # 362
#: _STONE_KEYS[colour * 362 + idx][s]: what a stone of that colour at idx adds under s (0 for
#: the border slot).
_STONE_KEYS = np.zeros((4 * _WIDTH, NUM_SYMMETRIES), dtype=np.uint64)
for _c in (BLACK, WHITE):
    _STONE_KEYS[_c * _WIDTH:_c * _WIDTH + NUM_INTERSECTIONS] = \
        (_SYM_KEYS[:, _c] ^ _SYM_KEYS[:, EMPTY]).T
del _c
#: HASH_INIT and every empty point: the hash of an empty position before the other terms.
_EMPTY_POINTS = HASH_INIT ^ int(np.bitwise_xor.reduce(_ZOB[EMPTY, _VERTS]))
#: _KO_KEYS[ko][s]: the ko term of the position under s.
_KO_KEYS = _ZOB_KO[_VERTEX_MAP.T]


def symmetry_hashes_batch(boards) -> list[list[int]]:
    """`symmetry_hash(board, s)` for every board and all 8 s: hashes[i][s].

    Hot path: the cache probes the 7 mirrors of every new leaf early in the game (doc 3.9).
    One join, one gather of the colours, one of the stones' keys and one segmented XOR for
    the whole batch; only each board's prisoner and side terms are looked up in Python."""
    n = len(boards)
    if not n:
        return []
    mailboxes = np.frombuffer(b"".join([b.square for b in boards]), dtype=np.uint8)
    colours = mailboxes.reshape(n, -1)[:, _SLOTS]
    rows, points = np.nonzero(colours != EMPTY)  # stones and the border sentinels
    keys = _STONE_KEYS[colours[rows, points] * np.intp(_WIDTH) + points]
    hashes = np.bitwise_xor.reduceat(keys, np.searchsorted(rows, np.arange(n)), axis=0)
    black, white = ZOBRIST_PRIS
    hashes ^= np.array([_EMPTY_POINTS ^ black[b.prisoners[0]] ^ white[b.prisoners[1]]
                        ^ (BLACK_TO_MOVE if b.to_move == BLACK else 0) for b in boards],
                       dtype=np.uint64)[:, None]
    hashes ^= _KO_KEYS[[b.ko_move for b in boards]]
    return hashes.tolist()


assert all(v == vertex_from_index(i) for i, v in enumerate(ALL_VERTICES))
