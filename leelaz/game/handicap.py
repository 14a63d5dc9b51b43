"""Handicap stones placed the way Leela Zero places them (src/GameState.cpp).

Owns: the fixed patterns for 2..9 stones, the free-handicap grid, and the stone list LZ replies
with. Stones are played as black moves (so they enter the superko history), then White is to
move, the history is anchored (move 0) and `handicap` is set.
Imports: game.coords, game.state.

What the engine chooses itself (place_free_handicap beyond the grid) needs the search, which
game/ may not import: the caller passes `choose_move(state) -> vertex`.
"""

from __future__ import annotations

from typing import Callable

from leelaz.game.coords import (BLACK, BOARD_SIZE, EMPTY, NUM_INTERSECTIONS, WHITE, Vertex,
                                gtp_vertex, vertex)
from leelaz.game.state import GameState

#: Third line from each edge, the middle line (LZ's high/low/mid on 19x19, 0-based).
_NEAR = 3
_MID = BOARD_SIZE // 2
_FAR = BOARD_SIZE - 1 - _NEAR

MIN_FIXED = 2
MAX_FIXED = 9
#: place_free_handicap caps the count at half the board.
MAX_FREE = NUM_INTERSECTIONS // 2


def fixed_pattern(n: int) -> list[Vertex]:
    """The stones of fixed handicap n (2..9) in the order LZ plays them; [] for other n."""
    if not MIN_FIXED <= n <= MAX_FIXED:
        return []
    far, near, mid = _FAR, _NEAR, _MID
    points = [(far, far), (near, near)]            # Q16, D4
    if n >= 3:
        points.append((near, far))                 # D16
    if n >= 4:
        points.append((far, near))                 # Q4
    if n >= 5 and n % 2 == 1:
        points.append((mid, mid))                  # K10
    if n >= 6:
        points += [(far, mid), (near, mid)]        # Q10, D10
    if n >= 8:
        points += [(mid, far), (mid, near)]        # K16, K4
    return [vertex(x, y) for x, y in points]


def _play_black(state: GameState, points: list[Vertex]) -> None:
    square = state.board.square
    if any(square[v] != EMPTY for v in points):
        raise ValueError("a handicap point is occupied")
    for v in points:
        state.play(BLACK, v)


def _finish(state: GameState, stones: int) -> None:
    """White to move (Black if nothing was asked for), anchor, record the handicap."""
    state.set_to_move(WHITE if stones else BLACK)
    state.anchor()
    state.handicap = stones


def place_fixed_handicap(state: GameState, n: int) -> None:
    """GTP fixed_handicap: n must be 2..9 (ValueError otherwise, or if a point of the pattern
    is occupied; then nothing is placed). The board need not be empty."""
    points = fixed_pattern(n)
    if not points:
        raise ValueError("Not a valid number of handicap stones")
    _play_black(state, points)
    _finish(state, n)


def grid_points(state: GameState, n: int) -> list[Vertex]:
    """Up to n grid points for free handicap: x = 3, 6, .., 15 (outer), y likewise, each with
    its whole 3x3 neighbourhood empty at the moment it is chosen."""
    square = bytearray(state.board.square)
    step = (_FAR - _MID) // 2
    chosen: list[Vertex] = []
    while step >= 3:
        for x in range(_NEAR, _FAR + 1, step):
            for y in range(_NEAR, _FAR + 1, step):
                if len(chosen) >= n:
                    return chosen
                v = vertex(x, y)
                if all(square[v + dy * (BOARD_SIZE + 2) + dx] == EMPTY
                       for dx in (-1, 0, 1) for dy in (-1, 0, 1)):
                    square[v] = BLACK
                    chosen.append(v)
        step //= 2
    return chosen


def place_free_handicap(state: GameState, n: int,
                        choose_move: Callable[[GameState], Vertex] | None = None) -> int:
    """GTP place_free_handicap: n capped at MAX_FREE; the fixed pattern for min(9, n) (nothing
    for 1, which still counts), then the grid, then `choose_move` for each remaining stone
    (black to move; skipped if None). Returns the (capped) n, now the handicap."""
    n = min(n, MAX_FREE)
    fixed = min(MAX_FIXED, n)
    points = fixed_pattern(fixed)
    if points:
        _play_black(state, points)
        _finish(state, fixed)
    rest = n - fixed
    grid = grid_points(state, rest)
    for v in grid:
        state.play(BLACK, v)
    rest -= len(grid)
    if choose_move is not None:
        for _ in range(rest):
            probe = state.copy()  # LZ's search works on its own copy, Black to move
            probe.set_to_move(BLACK)
            state.play(BLACK, choose_move(probe))
    _finish(state, n)
    return n


def stone_list(state: GameState) -> list[Vertex]:
    """Every stone on the board (either colour), column A..T and inside a column rows 1..19."""
    square = state.board.square
    return [vertex(x, y) for x in range(BOARD_SIZE) for y in range(BOARD_SIZE)
            if square[vertex(x, y)] != EMPTY]


def stone_list_text(state: GameState) -> str:
    """The reply of fixed_handicap/place_free_handicap/set_free_handicap: `D4 Q16 ...`."""
    return " ".join(gtp_vertex(v) for v in stone_list(state))
