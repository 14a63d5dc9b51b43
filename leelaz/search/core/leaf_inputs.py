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
#: The kernels' board meta columns.
_KO, _PASSES, _KO_HASH, _PRISONERS = 0, 1, 2, 3
_KO_KEYS = np.array(ZOBRIST_KO, np.uint64)
_PASS_KEYS = np.array(ZOBRIST_PASS, np.uint64)
_PRISONER_KEYS = np.array(ZOBRIST_PRIS, np.uint64)  # [colour, count]
_BLACK_TO_MOVE = np.uint64(BLACK_TO_MOVE)
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


def _terms(ko: np.ndarray, passes: np.ndarray, ko_hash: np.ndarray, black: np.ndarray,
           white: np.ndarray) -> np.ndarray:
    """The ko-point, passes, stones and prisoners terms of boards' full hashes (uint64)."""
    return (_KO_KEYS[ko] ^ _PASS_KEYS[passes] ^ ko_hash.astype(np.uint64)
            ^ _PRISONER_KEYS[BLACK, black] ^ _PRISONER_KEYS[WHITE, white])


def leaf_hashes(root_board, root_color: int, meta: np.ndarray,
                lengths: np.ndarray) -> list[int]:
    """The full hash (Board.hash) of each leaf: `meta` its board's kernel meta row, `lengths`
    its path's nodes (the moves played are one fewer), from the root board `root_board`
    searched for `root_color` (the module docstring's formula)."""
    root = _terms(np.array([root_board.ko_move]), np.array([root_board.passes]),
                  np.array([root_board.ko_hash & ((1 << 64) - 1)], np.uint64),
                  np.array([root_board.prisoners[BLACK]]),
                  np.array([root_board.prisoners[WHITE]]))[0]
    base = np.uint64(root_board.hash) ^ root
    moves = lengths - 1
    toggles = moves - 1 + (1 if root_board.to_move == root_color else 0)
    h = base ^ _terms(meta[:, _KO], meta[:, _PASSES], meta[:, _KO_HASH],
                      meta[:, _PRISONERS + BLACK], meta[:, _PRISONERS + WHITE])
    h ^= np.where(toggles % 2 == 1, _BLACK_TO_MOVE, np.uint64(0))
    return h.tolist()


class LeafInputs:
    """The leaves of a CoreRun's batches as LeafStates (see the module docstring)."""

    def __init__(self, root_state, root_color: int):
        self.root_board = root_state.board
        self.root_color = root_color
        self.move_num = root_state.move_num
        # The root's history as a leaf's sees it (GameState.extended: the pushed position in
        # place of the last), newest first, padded to HISTORY with off-board positions.
        history = list(root_state.history[-HISTORY:])
        if root_state._pushed is not None:
            history[-1] = root_state._pushed
        squares = [bytes(board.square) for board in reversed(history)]
        self.root_squares = squares + [_INVAL_SQUARE] * (HISTORY - len(squares))

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

    def states(self, buf, n: int) -> list[tuple]:
        """The batch's leaves as the run's (path, state, kind) triples (no path: the core
        keeps it in `buf`). Hot path."""
        lengths = buf.lengths[:n]
        hashes = leaf_hashes(self.root_board, self.root_color, buf.meta[:n], lengths)
        root_squares = self.root_squares
        base_move = self.move_num
        leaves = []
        for i, (length, h, to_move) in enumerate(zip(lengths.tolist(), hashes,
                                                     buf.colors[:n].tolist())):
            moves = length - 1
            ring = buf.hist[i].tobytes()
            parts = [ring[(k % HISTORY) * NUM_VERTICES:(k % HISTORY + 1) * NUM_VERTICES]
                     for k in range(moves - 1, max(moves - HISTORY, 0) - 1, -1)]
            if len(parts) < HISTORY:
                parts += root_squares[:HISTORY - len(parts)]
            leaves.append((None, LeafState(h, to_move, base_move + moves, b"".join(parts)),
                           _LEAF))
        return leaves
