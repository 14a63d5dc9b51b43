"""A game in progress: the current position, the positions before it, and the game's settings.

Owns: `GameState` (Leela Zero's KoState + GameState): komi, handicap, the history of positions
since the anchored start (for undo and the network's 8 history planes), positional superko over
every position of the game (anchored handicap stones included), resignation, and the clock
object. Imports: game.board, game.coords, game.timecontrol.

Positions are immutable once pushed onto `history`: `play` copies the current Board and plays on
the copy. So `copy()` only copies two lists of references, and any number of search threads of
thought can branch from one state. The hot path is `copy()` + `play()` (once per playout step).

LZ details kept on purpose (src/FastState.cpp, KoState.cpp, GameState.cpp):
- `play` plays for any colour, ignores ko and superko, and removes a suicided string without
  prisoners; `play(c, RESIGN)` only sets `resigned`.
- `set_to_move` and `set_passes` change the live position only; the position pushed by the last
  move is what `undo` goes back to and what `moves()` reports, as LZ's game_history snapshots
  are. (After `play b D4`, `genmove b`, `undo`, White is to move again, as in LZ.)
- The ko-hash history survives `anchor()`, so handicap stones count for superko.
- The ko point is closed to both colours for one move (LZ's is_move_legal), checked against
  the binary in tests/test_state.py.

LZ quirks *not* copied: LZ's undo restores a whole snapshot, komi and handicap included, so
`komi 6.5`, `play b d4`, `undo` brings back the komi of before, and `fixed_handicap 2`,
`play w a1`, `undo` forgets the handicap (final_score B+353.5 instead of B+351.5). Here komi
and handicap belong to the game and undo leaves them alone.

Dynamic komi (docs/dynamic-komi.md §2.2): `net_komi` is None for Leela Zero 0.17's standard
colour planes (the network is told 7.5 for the side to move), or the komi fed to the network
at Black's turns and at White's turns. The fork keeps `stm_komi` and `opp_komi` and swaps them
on every move; storing them per colour is the same under alternation (the doc's suggestion),
so play and undo "swap" them by changing the side to move. Like `komi`, they belong to the
game: undo does not bring back a komi from before an adjustment (the fork's snapshot would).
`score_handicap` False scores without the per-stone handicap compensation (the modes).
"""

from __future__ import annotations

from leelaz.game.board import Board
from leelaz.game.coords import EMPTY, NUM_VERTICES, PASS, RESIGN, Color, Vertex
from leelaz.game.timecontrol import TimeControl


class GameState:
    """The state of one game. `board` is `history[-1]` and must not be mutated by callers."""

    __slots__ = ("komi", "handicap", "resigned", "time_control", "history", "board",
                 "_ko_hashes", "_pushed", "net_komi", "score_handicap")
    #: A state's input history joined already: only the compiled search's leaves have one
    #: (search/core/leaf_inputs.LeafState; nn/features.py reads it), a GameState never.
    joined_history = None

    def __init__(self, komi: float = 7.5) -> None:
        self.time_control = TimeControl()  # shared by copies; replaced by time_settings
        self.net_komi: tuple[float, float] | None = None  # (at Black's turns, at White's)
        self.score_handicap = True  # False in the dynamic-komi modes
        self.reset(komi)

    def reset(self, komi: float | None = None) -> None:
        """A new game on an empty board (clear_board); the clock settings are kept, the clocks
        restart."""
        if komi is not None:
            self.komi = komi
        self.handicap = 0
        self.resigned: Color | None = None
        self.board = Board()
        self.history: list[Board] = [self.board]
        self._ko_hashes = [self.board.ko_hash]   # every position of the game, for superko
        self._pushed: Board | None = None       # history[-1] as pushed, if changed since
        self.time_control.reset_clocks()

    def copy(self) -> GameState:
        """A state that can move on independently; positions and clock are shared (hot path)."""
        s = _new_state(GameState)
        s.komi = self.komi
        s.handicap = self.handicap
        s.resigned = self.resigned
        s.time_control = self.time_control
        s.history = self.history[:]
        s.board = self.board
        s._ko_hashes = self._ko_hashes[:]
        s._pushed = self._pushed
        s.net_komi = self.net_komi
        s.score_handicap = self.score_handicap
        return s

    # ------------------------------------------------------------------ position fields
    @property
    def move_num(self) -> int:
        return len(self.history) - 1

    @property
    def to_move(self) -> Color:
        return self.board.to_move

    @property
    def passes(self) -> int:
        return self.board.passes

    @property
    def ko_move(self) -> Vertex:
        return self.board.ko_move

    @property
    def last_move(self) -> Vertex:
        """The last move played (PASS possible), NO_VERTEX at the start of a game. Survives
        anchoring, as in LZ (after fixed_handicap it is the last handicap stone)."""
        return self.board.last_move

    # ------------------------------------------------------------------ network komi
    @property
    def stm_komi(self) -> float:
        """The komi the network is told in this position (7.5 with the standard planes)."""
        net = self.net_komi
        return 7.5 if net is None else net[self.board.to_move]

    @property
    def opp_komi(self) -> float:
        """The komi the network is told at the other side's turns."""
        net = self.net_komi
        return 7.5 if net is None else net[1 - self.board.to_move]

    def set_net_komi(self, stm_komi: float, opp_komi: float) -> None:
        """Tell the network `stm_komi` at the side to move's turns and `opp_komi` at the
        other side's (dynamic komi; `net_komi = None` goes back to the standard planes)."""
        pair = [0.0, 0.0]
        pair[self.board.to_move] = stm_komi
        pair[1 - self.board.to_move] = opp_komi
        self.net_komi = (pair[0], pair[1])

    # ------------------------------------------------------------------ moves
    def play(self, color: Color, vertex: Vertex) -> None:
        """Play for `color` whoever is to move: a stone, PASS, or RESIGN (only sets `resigned`).

        Raises ValueError for an occupied or off-board point; ko, suicide and superko are not
        checked (GTP `play` accepts them, like LZ). Hot path.
        """
        if vertex < 0:
            if vertex == RESIGN:
                self.resigned = color
                self._pushed = None  # LZ re-snapshots the live state here
                return
            if vertex != PASS:
                raise ValueError(f"not a move: {vertex}")
        elif vertex >= NUM_VERTICES or self.board.square[vertex] != EMPTY:
            raise ValueError(f"point not empty or off the board: {vertex}")
        board = self.board.copy()
        board.play_move(color, vertex)
        history = self.history
        if self._pushed is not None:
            history[-1] = self._pushed
            self._pushed = None
        history.append(board)
        self.board = board
        self._ko_hashes.append(board.ko_hash)

    def extended(self, boards: list[Board]) -> GameState:
        """The state reached by the moves that made `boards`, without replaying them.

        Each board must have been made from the one before it (the first from this state's
        board) by `Board.copy()` + `play_move`, as `play` would have done: the search keeps
        such boards in its tree, so a playout only plays the one new move at its leaf (hot
        path). The boards are shared, not copied; like every position in a history, they
        must not be changed afterwards."""
        s = self.copy()
        if boards:
            if s._pushed is not None:
                s.history[-1] = s._pushed
                s._pushed = None
            s.history.extend(boards)
            s.board = boards[-1]
            s._ko_hashes.extend([b.ko_hash for b in boards])
        return s

    def delta_since(self, earlier: GameState) -> tuple | None:
        """What `earlier.with_delta(delta)` needs to equal this state: the positions after
        the history the two share, and every small field; None when they share no start.

        Why: a helper search process (root_parallel/helper.py) keeps the state it was last
        sent; a whole game's positions are about a megabyte to pickle, a move's few are not.
        Positions are shared between copies (`copy`), so the common history is found by
        identity; the live position, which `set_to_move` may replace, is always sent."""
        old, new = earlier.history, self.history
        shared = 0
        limit = min(len(old), len(new)) - 1
        while shared < limit and old[shared] is new[shared]:
            shared += 1
        if shared == 0 and not (old and new and old[0] is new[0]):
            return None
        return (shared, new[shared:], self._ko_hashes[:], self._pushed, self.komi,
                self.handicap, self.resigned, self.net_komi, self.score_handicap)

    def with_delta(self, delta: tuple) -> GameState:
        """A copy of this state moved to the one `delta_since` described."""
        (shared, boards, hashes, pushed, s_komi, handicap, resigned, net_komi,
         score_handicap) = delta
        s = self.copy()
        s.history = self.history[:shared] + list(boards)
        s.board = s.history[-1]
        s._ko_hashes = hashes
        s._pushed = pushed
        s.komi, s.handicap, s.resigned = s_komi, handicap, resigned
        s.net_komi, s.score_handicap = net_komi, score_handicap
        return s

    def seen_positions(self) -> frozenset[int]:
        """The stones-only hashes of every position of the game so far, for the search's
        superko test of positions beyond this one (see `extended`)."""
        return frozenset(self._ko_hashes)

    def is_legal(self, color: Color, vertex: Vertex) -> bool:
        """Engine legality (LZ's is_move_legal): pass and resign, or an empty point that is not
        the ko point and not suicide. Superko is not checked here (see `superko`)."""
        if vertex == RESIGN:
            return True
        return self.board.is_legal(color, vertex)

    def legal_moves(self, color: Color) -> list[Vertex]:
        """The legal points for `color`, in index order (A1, B1, ..., T19); pass, always legal,
        is not listed. Called once per search expansion: a point with an empty neighbour is
        accepted without the full suicide test."""
        b = self.board
        ko = b.ko_move
        square = b.square
        suicide = b.is_suicide
        empties = b.empty[:b.empty_cnt].tolist()
        empties.sort()
        return [v for v in empties
                if v != ko and (square[v - 21] == EMPTY or square[v + 1] == EMPTY
                                or square[v + 21] == EMPTY or square[v - 1] == EMPTY
                                or not suicide(color, v))]

    def superko(self) -> bool:
        """The current stones repeat an earlier position of the game (positional superko).
        After a pass this is always true; the search asks only after a stone."""
        return self._ko_hashes.count(self.board.ko_hash) > 1

    def undo(self) -> bool:
        """Go back one move; False at move 0 (also right after anchoring). `resigned` stays."""
        if len(self.history) <= 1:
            return False
        self.history.pop()
        self._ko_hashes.pop()
        self.board = self.history[-1]
        self._pushed = None
        return True

    def anchor(self) -> None:
        """Make the current position the start of the game (move 0): handicap and SGF setup
        stones stay out of the move list and the network's history, but count for superko."""
        self.history = [self.board]
        self._pushed = None

    def set_to_move(self, color: Color) -> None:
        """Change the side to move of the live position, updating its hash like LZ."""
        if color != self.board.to_move:
            board = self.board.copy()
            board.set_to_move(color)
            self._replace_live(board)

    def set_passes(self, passes: int) -> None:
        """Set the pass counter without touching the hash (LZ's set_passes, used by
        kgs-genmove_cleanup)."""
        if passes != self.board.passes:
            board = self.board.copy()
            board.passes = passes
            self._replace_live(board)

    def _replace_live(self, board: Board) -> None:
        if self._pushed is None:
            self._pushed = self.history[-1]
        self.history[-1] = board
        self.board = board

    # ------------------------------------------------------------------ results
    @property
    def scoring_komi(self) -> float:
        """What White receives at the count: komi plus one point per handicap stone, as LZ
        scores, or komi alone in the dynamic-komi modes (score_handicap False)."""
        return self.komi + self.handicap if self.score_handicap else self.komi

    def final_score(self) -> float:
        """Black minus White minus komi minus handicap, by area (LZ's final_score)."""
        return self.board.area_score(self.scoring_komi)

    def moves(self) -> list[tuple[Color, Vertex]]:
        """(colour, vertex) of every move since the anchored start, oldest first. The colour
        is the opposite of the side to move after the move, as LZ's move_history reports it."""
        positions = self.history[1:]
        if positions and self._pushed is not None:
            positions[-1] = self._pushed
        return [(1 - b.to_move, b.last_move) for b in positions]

    def __repr__(self) -> str:
        return (f"GameState(move_num={self.move_num}, to_move={self.to_move}, komi={self.komi}, "
                f"handicap={self.handicap})")


_new_state = object.__new__
