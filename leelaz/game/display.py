"""The text of GTP `showboard`, byte for byte as Leela Zero 0.17 writes it to stderr.

Owns: `showboard_text(state)`. Imports: game.coords, game.state (and the state's clock object,
which supplies its two lines through `display_lines()`).

Layout (FastState.cpp): a blank line; `Passes:` with Black's prisoners; the side to move with
White's prisoners; a blank line; the board with lower-case column letters (no i), rows 19..1
labelled `%2d` on both sides, `+` on the nine star points and the last move in parentheses;
a blank line; `Hash: %llX Ko-Hash: %llX`; a blank line; the two clock lines; a blank line.
"""

from __future__ import annotations

from leelaz.game.coords import BLACK, BOARD_SIZE, STRIDE, WHITE
from leelaz.game.state import GameState

_COLUMNS = "   " + "".join(c + " " for c in "abcdefghjklmnopqrst") + "\n"
_STAR_LINES = (3, 9, 15)


def _cell(color: int, x: int, y: int) -> str:
    if color == WHITE:
        return "O"
    if color == BLACK:
        return "X"
    return "+" if x in _STAR_LINES and y in _STAR_LINES else "."


def board_text(state: GameState) -> str:
    """The board diagram: column letters, 19 rows, column letters (each line ends in \\n)."""
    square = state.board.square
    last = state.last_move
    lines = [_COLUMNS]
    for y in range(BOARD_SIZE - 1, -1, -1):
        row_start = (y + 1) * STRIDE + 1
        parts = [f"{y + 1:2d}", "(" if last == row_start else " "]
        for x in range(BOARD_SIZE):
            v = row_start + x
            parts.append(_cell(square[v], x, y))
            if last == v:
                parts.append(")")
            elif x != BOARD_SIZE - 1 and last == v + 1:
                parts.append("(")
            else:
                parts.append(" ")
        parts.append(f"{y + 1:2d}\n")
        lines.append("".join(parts))
    lines.append(_COLUMNS)
    return "".join(lines)


def _clock_lines(state: GameState) -> list[str]:
    lines = state.time_control.display_lines()
    if isinstance(lines, str):
        lines = lines.splitlines()
    return list(lines)


def showboard_text(state: GameState) -> str:
    """Everything LZ writes to stderr for `showboard`."""
    board = state.board
    mover = "Black (X) to move" if board.to_move == BLACK else "White (O) to move"
    out = [
        "\n",
        f"Passes: {board.passes}            Black (X) Prisoners: {board.prisoners[BLACK]}\n",
        f"{mover}    White (O) Prisoners: {board.prisoners[WHITE]}\n",
        "\n",
        board_text(state),
        "\n",
        f"Hash: {board.hash:X} Ko-Hash: {board.ko_hash:X}\n",
        "\n",
    ]
    out += [line + "\n" for line in _clock_lines(state)]
    out.append("\n")
    return "".join(out)

