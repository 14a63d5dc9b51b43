"""Parsed SGF games onto the board and back: loadsgf's GameState, dump_supervised's main line,
and the printsgf text of a GameState.

Owns: the rules by which Leela Zero 0.17 turns an SGF root and its main line into a game
(src/GTP.cpp loadsgf, Training::dump_supervised, src/SGFTree.cpp), checked against the binary:
- GM other than 1, SZ other than 19 (a missing SZ is 19), a bad point anywhere on the main
  line, a setup stone or a move on a point held by the *other* colour: SgfError (the binary's
  "cannot load file"). Komi is 7.5 without KM, and 0 when KM is not a number, as in the binary.
- Root setup: HA is the handicap; AB stones (or, when HA > 0 and the root has none, the first
  child's AB) are played as black moves, then AW as white moves, a stone already of that
  colour being skipped; PL sets the side to move; the position is then anchored. The clock
  comes from TM/OT/BL/WL/OB/OW, else the default (1 hour absolute).
- Moves take their colour from their node (B or W). `state_from_sgf(game, n)` stops before
  node n (the root is node 0, nodes without a move count); n <= 0 means the whole main line.
  A move on a point already holding its own colour ends the replay there, as in the binary.
  The whole main line is checked even when n stops early, because the binary does too.
Differences from the binary, on purpose: setup and moves of variations are not checked
(the binary rejects a file whose *variation* has a bad point); setup values `tt`/empty are
ignored instead of played as passes; compressed point lists (`AB[aa:cc]`) are expanded
instead of reading only `aa`; PL[b]/PL[w] are accepted in lower case.
Imports: game.coords, game.numbers, game.outcome, game.sgf, game.state, game.timecontrol.
"""

from __future__ import annotations

import time
from pathlib import Path

from leelaz.game.coords import (BLACK, BOARD_SIZE, EMPTY, PASS, WHITE, Color, Vertex,
                                parse_sgf_vertex, sgf_vertex, vertex, xy)
from leelaz.game.sgf import (SgfError, SgfGame, SgfNode, format_printsgf, read_first_game,
                             result_text)
from leelaz.game.numbers import cpp_float, cpp_int
from leelaz.game.outcome import lz_winner
from leelaz.game.state import GameState
from leelaz.game.timecontrol import TimeControl



# ---- reading -----------------------------------------------------------------------------

def state_from_sgf(game: SgfGame | str | Path, move_limit: int = 999) -> GameState:
    """The GameState that `loadsgf FILE move_limit` leaves (see the module docstring).

    game is a parsed game or the path of a file, whose game 0 is used. Raises SgfError.
    """
    if not isinstance(game, SgfGame):
        game = read_first_game(game)
    state = start_state(game)
    nodes = game.mainline()
    stop = len(nodes) if move_limit <= 0 else min(move_limit, len(nodes))
    result: GameState | None = None
    for i in range(1, len(nodes)):
        if i == stop and result is None:
            result = state.copy()
        move = _node_move(game, nodes[i], i)
        if move is None:
            continue
        color, v = move
        if v != PASS:
            held = state.board.square[v]
            if held == 1 - color:
                raise game.error(f"node {i}: {'BW'[color]}[{nodes[i].move()[1]}] is on a "
                                 f"{'white' if color == BLACK else 'black'} stone")
            if held == color:
                if result is None:     # the binary's replay stops at the first such move
                    result = state.copy()
                continue
        state.play(color, v)
    return result if result is not None else state


def start_state(game: SgfGame) -> GameState:
    """The anchored start position of a game: root rules, setup stones, side to move, clock."""
    root = game.root
    _check_root(game)
    km = root.get("KM")
    state = GameState(komi=7.5 if km is None else cpp_float(km))
    clock = _clock(game)
    if clock is not None:
        state.time_control = clock
    handicap = int(cpp_float(root.get("HA")))
    state.handicap = handicap
    for color, values in _setup_lists(game, handicap > 0):
        for v in values:
            held = state.board.square[v]
            if held == 1 - color:
                raise game.error(f"setup stone {'BW'[color]} at {sgf_vertex(v)} is on a "
                                 f"{'white' if color == BLACK else 'black'} stone")
            if held == EMPTY:
                state.play(color, v)
    to_move = (root.get("PL") or "").strip().upper()
    if to_move in ("B", "W"):
        state.set_to_move(BLACK if to_move == "B" else WHITE)
    state.anchor()
    return state


def mainline_moves(game: SgfGame, lz_turns: bool = True) -> list[tuple[Color, Vertex]]:
    """The main line's moves as (colour, vertex), for dump_supervised.

    With lz_turns (Leela Zero's SGFTree::get_mainline), colours follow the turn: starting with
    the side to move of the start position, each node after the root flips the turn, and a
    node is taken only if it has a move of the colour whose turn it is (a node with no move,
    or a move of the wrong colour, is skipped but still flips the turn). Without lz_turns,
    every move node is taken with its own colour. Raises SgfError for a bad point.
    """
    nodes = game.mainline()
    out: list[tuple[Color, Vertex]] = []
    if not lz_turns:
        for i in range(1, len(nodes)):
            move = _node_move(game, nodes[i], i)
            if move is not None:
                out.append(move)
        return out
    turn = _start_to_move(game)
    for i in range(1, len(nodes)):
        text = nodes[i].get("B" if turn == BLACK else "W")
        if text is not None:
            out.append((turn, _point(game, text, f"node {i}")))
        turn = 1 - turn
    return out


def winner(game: SgfGame) -> Color | None:
    """BLACK or WHITE from RE as dump_supervised reads it: None without RE, when RE contains
    `Time`, or when it starts with neither `B+` nor `W+` (draws, void, unknown)."""
    return lz_winner(game.root.get("RE"))


def _check_root(game: SgfGame) -> None:
    root = game.root
    gm = root.get("GM")
    if gm is not None and gm != "1":
        raise game.error(f"not a game of Go (GM[{gm}])")
    sz = root.get("SZ")
    if sz is not None:
        size = cpp_int(sz)
        if size != BOARD_SIZE:
            raise game.error(f"board size SZ[{sz}] is not supported (only 19)")


def _clock(game: SgfGame) -> TimeControl | None:
    root = game.root
    try:
        return TimeControl.from_sgf(root.get("TM"), root.get("OT"), root.get("BL"),
                                    root.get("WL"), root.get("OB"), root.get("OW"))
    except ValueError as exc:
        raise game.error(f"bad time setting: {exc}") from None


def _setup_lists(game: SgfGame, has_handicap: bool) -> list[tuple[Color, list[Vertex]]]:
    """[(BLACK, AB points), (WHITE, AW points)], AB taken from the first child when the root
    has a handicap but no AB (a bug of some programs that the binary works around)."""
    root = game.root
    ab = root.values("AB")
    if has_handicap and not ab and root.children:
        ab = root.children[0].values("AB")
    return [(BLACK, _point_list(game, ab, "AB")),
            (WHITE, _point_list(game, root.values("AW"), "AW"))]


def _start_to_move(game: SgfGame) -> Color:
    """Side to move of the start position, without building it: each setup stone played
    flips the turn (duplicates are skipped), then PL."""
    root = game.root
    pl = (root.get("PL") or "").strip().upper()
    if pl in ("B", "W"):
        return BLACK if pl == "B" else WHITE
    turn = BLACK
    seen: set[Vertex] = set()
    for color, values in _setup_lists(game, int(cpp_float(root.get("HA"))) > 0):
        for v in values:
            if v not in seen:
                seen.add(v)
                turn = 1 - color
    return turn


def _node_move(game: SgfGame, node: SgfNode, i: int) -> tuple[Color, Vertex] | None:
    move = node.move()
    if move is None:
        return None
    return move[0], _point(game, move[1], f"node {i}")


def _point(game: SgfGame, text: str, where: str) -> Vertex:
    try:
        return parse_sgf_vertex(text.strip())
    except ValueError:
        raise game.error(f"{where}: bad point [{text}]") from None


def _point_list(game: SgfGame, values: list[str], name: str) -> list[Vertex]:
    """Points of a setup list; `aa:cc` rectangles expanded; passes dropped."""
    out: list[Vertex] = []
    for text in values:
        text = text.strip()
        if ":" in text:
            first, _, last = text.partition(":")
            a, b = _point(game, first, name), _point(game, last, name)
            if PASS in (a, b):
                raise game.error(f"{name}: bad point list [{text}]")
            (x0, y0), (x1, y1) = xy(a), xy(b)
            for x in range(min(x0, x1), max(x0, x1) + 1):
                for y in range(min(y0, y1), max(y0, y1) + 1):
                    out.append(vertex(x, y))
            continue
        v = _point(game, text, name)
        if v != PASS:
            out.append(v)
    return out


# ---- writing -------------------------------------------------------------------------------

def setup_black_stones(state: GameState) -> list[Vertex]:
    """Black stones of the anchored start position in printsgf's order: column by column from
    A, each column from row 1 up (the binary writes white setup stones nowhere)."""
    start = state.history[0]
    return [vertex(x, y) for x in range(BOARD_SIZE) for y in range(BOARD_SIZE)
            if start.square[vertex(x, y)] == BLACK]


def sgf_result(state: GameState) -> str:
    """RE for printsgf: `B+Resign`/`W+Resign`, else the final score (`B+3.5`, `W+0.5`, `0`).

    The score is state.final_score() (komi plus handicap). The binary sometimes leaves the
    handicap out (right after fixed_handicap with no move played, src/SGFTree.cpp); a caller
    that wants that quirk passes its own result to sgf_from_state.
    """
    if state.resigned is not None:
        return "B+Resign" if state.resigned == WHITE else "W+Resign"
    return result_text(state.final_score())


def sgf_from_state(state: GameState, weights_path: str = "", options: str = "",
                   result: str | None = None, date: str | None = None) -> str:
    """printsgf's text for a game (src/SGFTree.cpp), final (its `\\n\\n` already collapsed).

    weights_path: the -w argument; options: the text after `Leela Zero options:` (each
    argument preceded by a space, ` --seed N` appended by the caller when LZ would);
    result: RE, by default sgf_result(state); date: DT, by default today (local time).
    """
    return format_printsgf(
        komi=state.komi, clock_sgf=state.time_control.to_sgf(), weights_path=weights_path,
        result=sgf_result(state) if result is None else result, options=options,
        date=time.strftime("%Y-%m-%d") if date is None else date,
        setup_black=setup_black_stones(state), moves=state.moves())


__all__ = ["SgfError", "mainline_moves", "setup_black_stones", "sgf_from_state", "sgf_result",
           "start_state", "state_from_sgf", "winner"]
