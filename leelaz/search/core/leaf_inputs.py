"""The compiled core's leaves as the network sees them, made from the kernels' arrays.

Owns: `LeafInputs` (a batch's leaf states for the evaluator), `leaf_hashes` (each leaf's
full board hash, the network cache's key) and `LeafState`. Imports: numpy, game (the Zobrist
keys, colours), search.run (the kind of a leaf); the evaluator says when it needs whole
boards (`reads_boards_before`, nn/network.py).

Why: the Python search makes a leaf's GameState by copying its parent's Board and playing
the leaf's move (game/board.py), then `GameState.extended`; the network reads only three
things of it: the last 8 positions' mailboxes (its input planes), the side to move and the
full hash (its cache key). The descent in core/kernels.py has played every move of the path
on array boards already, so it also leaves each path position's mailbox behind (`lhist`) and
the prisoners, and here each leaf gets:
- its input history: the path's last 8 mailboxes, newest first, then the root's own
  history (Leela Zero's 8 input positions), joined once into the bytes that
  nn/features.py's packed inputs and planes take (`LeafState.joined_history`);
- its full hash from the root's and the leaf's terms: a move changes Board.hash by the
  stones' terms (exactly what it changes the stones-only ko hash by), the ko point's,
  the prisoners', the passes' and Black-to-move (game/board.py `play_move`), and each of
  these telescopes along the path, so that
  hash(leaf) = hash(root) ^ ko_hash(root) ^ ko_hash(leaf) ^ KO[root ko] ^ KO[leaf ko]
               ^ PASS[root passes] ^ PASS[leaf passes] ^ PRIS terms of both ^ BLACK_TO_MOVE
               once per move played by the side to move (every move of a descent but the
               first when the root's board has the other colour to move).
No Python Board is made, copied or played for a leaf: that was most of a playout's host time
on a GPU. Where the network needs more of a leaf (whole boards for its mirrored cache
lookups early in the game, or a network komi), `for_root` gives None and run.py makes the
GameStates as the Python search does. tests/test_search_core.py checks
the hashes and inputs against the Python boards' and the trees against the Python search.
"""

from __future__ import annotations

import numpy as np

from leelaz.game.coords import BLACK, INVAL, NUM_VERTICES, WHITE
from leelaz.game.zobrist import BLACK_TO_MOVE, ZOBRIST_KO, ZOBRIST_PASS, ZOBRIST_PRIS
from leelaz.search.run import _LEAF

#: The positions of a leaf's input planes (kernels.HISTORY, nn/features.HISTORY).
HISTORY = 8
_INVAL_SQUARE = bytes([INVAL]) * NUM_VERTICES


class _Hashed:
    """A leaf's board as the network reads it: its full hash only."""

    __slots__ = ("hash",)

    def __init__(self, h: int):
        self.hash = h


class LeafState:
    """What nn/network.py and nn/features.py read of a leaf's GameState: the side to move,
    the full hash (`board.hash`), the joined input history, no network komi."""

    __slots__ = ("board", "to_move", "move_num", "joined_history")
    net_komi = None
    stm_komi = None

    def __init__(self, h: int, to_move: int, move_num: int, joined_history: bytes):
        self.board = _Hashed(h)
        self.to_move = to_move
        self.move_num = move_num
        self.joined_history = joined_history


_MASK64 = (1 << 64) - 1


def _terms(ko: int, passes: int, ko_hash: int, black: int, white: int) -> int:
    """The ko-point, passes, stones and prisoners terms of a board's full hash."""
    return (ZOBRIST_KO[ko] ^ ZOBRIST_PASS[passes] ^ (ko_hash & _MASK64)
            ^ ZOBRIST_PRIS[BLACK][black] ^ ZOBRIST_PRIS[WHITE][white])


def _root_terms(root_board, root_color: int) -> tuple[int, int]:
    """(the root's hash less its own terms, 1 when a descent's first move flips the side to
    move term): what every leaf's hash starts from."""
    b = root_board
    base = b.hash ^ _terms(b.ko_move, b.passes, b.ko_hash, b.prisoners[BLACK],
                           b.prisoners[WHITE])
    return base, 1 if b.to_move == root_color else 0


def leaf_hashes(kernels, root_board, root_color: int, meta: np.ndarray,
                lengths: np.ndarray) -> list[int]:
    """The full hash (Board.hash) of each leaf: `meta` its board's kernel meta rows, `lengths`
    its path's nodes (the moves played are one fewer), from the root board `root_board`
    searched for `root_color` (the module docstring's formula), by the core's `kernels`."""
    base, first_flip = _root_terms(root_board, root_color)
    out = np.empty(len(lengths), np.uint64)
    _hash_leaves(kernels, len(lengths), meta, lengths, base, first_flip, out)
    return out.tolist()


def _hash_leaves(kernels, n, meta, lengths, base, first_flip, out) -> None:
    kernels.leaf_hashes(n, meta, lengths, np.uint64(base), first_flip, _KO_TERMS, _PASS_TERMS,
                        _PRISONER_TERMS[0], _PRISONER_TERMS[1], np.uint64(BLACK_TO_MOVE), out)


class LeafInputs:
    """The leaves of a CoreRun's batches as LeafStates (see the module docstring)."""

    def __init__(self, root_state, root_color: int):
        self.base, self.first_flip = _root_terms(root_state.board, root_color)
        self.move_num = root_state.move_num
        # The root's history as a leaf's sees it (GameState.extended: the pushed position in
        # place of the last), newest first, padded to HISTORY with off-board positions.
        history = list(root_state.history[-HISTORY:])
        if root_state._pushed is not None:
            history[-1] = root_state._pushed
        squares = [bytes(board.square) for board in reversed(history)]
        squares += [_INVAL_SQUARE] * (HISTORY - len(squares))
        self.root_rows = np.frombuffer(b"".join(squares),
                                       dtype=np.uint8).reshape(HISTORY, NUM_VERTICES)
        self._hashes_out = np.empty(32, np.uint64)

    @classmethod
    def for_root(cls, root_state, root_color: int, evaluator) -> LeafInputs | None:
        """LeafInputs for a search from `root_state`, or None where the evaluator may need
        more of a leaf than they carry: a network komi; a leaf before the move number its
        `reads_boards_before` names (nn/network.py: the mirrored cache lookups read whole
        boards); an evaluator that does not say."""
        before = getattr(evaluator, "reads_boards_before", None)
        if (root_state.net_komi is not None or before is None
                or root_state.move_num + 1 < before):
            return None
        return cls(root_state, root_color)

    def histories(self, buf, n: int, kernels) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The batch's `n` leaves as arrays: (full hashes, side to move uint8 [n], input
        histories uint8 [n, 8, 441], newest first), what an evaluator's `submit_histories`
        takes (nn/network.py). Hot path: made for the whole batch by the core's `kernels`
        (kernels.leaf_hashes, leaf_histories: a self-play game's batch is a handful of
        leaves, too few for NumPy's calls to pay)."""
        out = self._hashes_out
        if len(out) < n:
            out = self._hashes_out = np.empty(max(n, 2 * len(out)), np.uint64)
        _hash_leaves(kernels, n, buf.meta, buf.lengths, self.base, self.first_flip, out)
        rows = np.empty((n, HISTORY, NUM_VERTICES), np.uint8)
        kernels.leaf_histories(n, buf.hist, buf.lengths, self.root_rows, rows)
        return out[:n].tolist(), buf.colors[:n].astype(np.uint8), rows

    def states(self, buf, n: int, kernels) -> list[tuple]:
        """The batch's leaves as the run's (path, state, kind) triples (no path: the core
        keeps it in `buf`), for an evaluator that takes GameStates only: `histories` made
        into one LeafState a leaf."""
        return self.as_states(self.histories(buf, n, kernels), buf.lengths[:n])

    def as_states(self, histories, lengths) -> list[tuple]:
        """`histories`' leaves as (None, LeafState, kind) triples, `lengths` their paths'."""
        hashes, to_move, rows = histories
        base_move = self.move_num - 1  # a leaf's moves are its path's nodes less one
        return [(None, LeafState(h, side, base_move + length, row.tobytes()), _LEAF)
                for h, side, length, row in zip(hashes, to_move.tolist(), lengths.tolist(),
                                                rows)]


#: The Zobrist tables as arrays, for kernels.leaf_hashes (the same 64-bit values).
_KO_TERMS = np.array(ZOBRIST_KO, dtype=np.uint64)
_PASS_TERMS = np.array(ZOBRIST_PASS, dtype=np.uint64)
_PRISONER_TERMS = (np.array(ZOBRIST_PRIS[BLACK], dtype=np.uint64),
                   np.array(ZOBRIST_PRIS[WHITE], dtype=np.uint64))
