"""GameState: the history contract, ko and superko, undo, anchoring, handicap, scoring, and
whole GTP sessions replayed against the C++ Leela Zero binary (showboard byte for byte)."""

from __future__ import annotations

import subprocess

import pytest

from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, NO_VERTEX, PASS, RESIGN, WHITE,
                                gtp_vertex, parse_gtp_vertex)
from leelaz.game.display import showboard_text
from leelaz.game.handicap import (fixed_pattern, grid_points, place_fixed_handicap,
                                  place_free_handicap, stone_list_text)
from leelaz.game.state import GameState
from leelaz.game.timecontrol import TimeControl
from test_zobrist import GOLDEN, lz_session, random_commands, replay

V = parse_gtp_vertex
KO_GAME = GOLDEN[3][0]  # ... B E10 takes D10, ko at D10, White to move


def play_all(state: GameState, moves: list[str]) -> GameState:
    for m in moves:
        replay(state, "play " + m)
    return state


# ----------------------------------------------------------------------------- contract
def test_new_state_fields():
    s = GameState()
    assert (s.komi, s.handicap, s.move_num, s.to_move, s.passes) == (7.5, 0, 0, BLACK, 0)
    assert (s.ko_move, s.last_move, s.resigned) == (NO_VERTEX, NO_VERTEX, None)
    assert s.history == [s.board] and isinstance(s.time_control, TimeControl)
    assert GameState(komi=0.5).komi == 0.5


def test_history_contract_and_frozen_positions():
    s = GameState()
    snapshots = []
    for i, cmd in enumerate(random_commands(5, 200, any_empty=True)):
        snapshots.append((s.board, bytes(s.board.square), s.board.hash))
        replay(s, cmd)
        assert len(s.history) == s.move_num + 1 == i + 2
        assert s.history[-1] is s.board
    for (board, square, h), kept in zip(snapshots, s.history):
        assert board is kept and bytes(board.square) == square and board.hash == h


def test_copy_is_independent():
    s = play_all(GameState(), ["b d4", "w q16"])
    c = s.copy()
    c.play(BLACK, V("c3"))
    c.komi = 0.5
    assert s.move_num == 2 and c.move_num == 3 and s.board.square[V("c3")] == EMPTY
    assert s.komi == 7.5 and c.history[:3] == s.history
    assert c.undo() and c.board is s.board


def test_play_any_colour_pass_and_resign():
    s = GameState()
    s.play(WHITE, V("d4"))
    s.play(WHITE, V("e4"))
    assert s.to_move == BLACK and s.moves() == [(WHITE, V("d4")), (WHITE, V("e4"))]
    s.play(BLACK, PASS)
    s.play(WHITE, PASS)
    assert s.passes == 2 and s.last_move == PASS
    for _ in range(4):
        s.play(BLACK, PASS)
    assert s.passes == 4  # capped
    n = s.move_num
    s.play(WHITE, RESIGN)
    assert s.resigned == WHITE and s.move_num == n
    s.play(BLACK, V("a1"))
    assert s.passes == 0


@pytest.mark.parametrize("vertex", [V("d4"), 0, 20, 441, -3, 10_000])
def test_play_rejects_occupied_and_off_board(vertex):
    s = play_all(GameState(), ["b d4"])
    with pytest.raises((ValueError, IndexError)):
        s.play(WHITE, vertex)
    assert s.move_num == 1


def test_is_legal_and_legal_moves():
    s = play_all(GameState(), KO_GAME)
    ko = V("d10")
    assert s.ko_move == ko and s.to_move == WHITE
    assert not s.is_legal(WHITE, ko) and s.is_legal(BLACK, ko) is False  # black: suicide
    assert s.is_legal(WHITE, PASS) and s.is_legal(WHITE, RESIGN)
    assert not s.is_legal(WHITE, V("e10"))  # occupied
    brute = [v for v in ALL_VERTICES
             if s.board.square[v] == EMPTY and v != ko and not s.board.is_suicide(WHITE, v)]
    assert s.legal_moves(WHITE) == brute and ko not in brute
    s.play(WHITE, ko)  # GTP play ignores the ko rule, as LZ's does
    assert s.board.square[V("e10")] == EMPTY and s.board.prisoners == [1, 1]


# ----------------------------------------------------------------------------- superko
def test_superko_after_ko_cycle_with_passes():
    s = play_all(GameState(), KO_GAME + ["w pass", "b pass"])
    assert s.superko()  # a pass repeats the position: the search only asks after stones
    probe = s.copy()
    probe.play(WHITE, V("d10"))
    assert probe.superko()
    assert not play_all(s.copy(), ["w a19"]).superko()
    assert not play_all(GameState(), KO_GAME).superko()


def test_superko_history_survives_anchoring():
    s = play_all(GameState(), KO_GAME)
    s.anchor()
    assert s.move_num == 0 and not s.undo()
    play_all(s, ["w pass", "b pass", "w d10"])
    assert s.superko()


def test_superko_history_follows_undo():
    s = play_all(GameState(), KO_GAME + ["w pass", "b pass", "w d10"])
    assert s.superko()
    s.undo()
    s.play(WHITE, V("a19"))
    assert not s.superko()


def _boards_after(state: GameState, moves: list[str]) -> list:
    """The boards a search would keep: each a copy of the one before, with one move played."""
    boards, board = [], state.board
    for text in moves:
        color, where = text.split()
        board = board.copy()
        board.play_move(BLACK if color == "b" else WHITE, PASS if where == "pass" else V(where))
        boards.append(board)
    return boards


@pytest.mark.parametrize("pushed", [False, True])
def test_extended_equals_playing_the_moves(pushed):
    """GameState.extended (the search's leaf state) is `play` move by move: the same
    positions, move list, side to move and superko history; the original is unchanged."""
    start = play_all(GameState(), ["b d4", "w q16"])
    if pushed:
        start.set_to_move(WHITE)  # genmove for the side not to move
    tail = KO_GAME + ["w pass", "b pass"]
    played = play_all(start.copy(), [m for m in tail])
    extended = start.extended(_boards_after(start, tail))
    assert [b.hash for b in extended.history] == [b.hash for b in played.history]
    assert extended.moves() == played.moves()
    assert (extended.move_num, extended.to_move, extended.passes) == \
        (played.move_num, played.to_move, played.passes)
    assert extended.superko() and played.superko()
    for probe in (extended, played):
        probe.play(WHITE, V("d10"))
    assert extended.superko() == played.superko()
    assert start.move_num == 2 and start.extended([]).board is start.board
    assert start.seen_positions() == frozenset(b.ko_hash for b in start.history)


# ----------------------------------------------------------------------------- undo etc.
def test_undo_restores_previous_positions():
    s = GameState()
    boards = [s.board]
    for cmd in random_commands(8, 60, any_empty=True):
        replay(s, cmd)
        boards.append(s.board)
    s.play(BLACK, RESIGN)
    while s.undo():
        assert s.board is boards[s.move_num]
    assert s.move_num == 0 and s.board is boards[0] and s.resigned == BLACK


def test_set_to_move_changes_live_position_only():
    s = play_all(GameState(), ["b d4"])
    pushed = s.board
    s.set_to_move(BLACK)
    assert s.board is not pushed and s.history[-1] is s.board and pushed.to_move == WHITE
    s.play(BLACK, V("q16"))
    assert s.history[-2] is pushed
    assert s.moves() == [(BLACK, V("d4")), (BLACK, V("q16"))]
    s.undo()
    assert s.board is pushed and s.to_move == WHITE


def test_reset_keeps_komi_clock_settings():
    s = play_all(GameState(komi=6.5), ["b d4", "w resign"])
    s.handicap = 3
    s.reset()
    assert (s.komi, s.handicap, s.move_num, s.resigned) == (6.5, 0, 0, None)
    assert s.board.hash == GameState().board.hash
    s.reset(0.5)
    assert s.komi == 0.5


# ----------------------------------------------------------------------------- scoring
def test_final_score_adds_handicap_to_komi():
    s = GameState(komi=7.5)
    place_fixed_handicap(s, 2)
    assert s.final_score() == 361 - 7.5 - 2  # FastBoard::area_score: B+351.5
    s = play_all(GameState(komi=0.5), ["b d4", "w q16"])
    assert s.final_score() == -0.5


# ----------------------------------------------------------------------------- handicap
def test_fixed_patterns():
    text = {}
    for n in range(2, 10):
        state = GameState()
        place_fixed_handicap(state, n)
        text[n] = stone_list_text(state)
        assert {gtp_vertex(v) for v in fixed_pattern(n)} == set(text[n].split())
    assert text[2] == "D4 Q16"
    assert text[3] == "D4 D16 Q16"
    assert text[4] == "D4 D16 Q4 Q16"
    assert text[5] == "D4 D16 K10 Q4 Q16"
    assert text[6] == "D4 D10 D16 Q4 Q10 Q16"
    assert text[9] == "D4 D10 D16 K4 K10 K16 Q4 Q10 Q16"
    assert fixed_pattern(1) == [] and fixed_pattern(10) == []


def test_fixed_handicap_anchors_with_white_to_move():
    s = GameState()
    place_fixed_handicap(s, 5)
    assert (s.move_num, s.handicap, s.to_move, s.last_move) == (0, 5, WHITE, V("k10"))
    assert stone_list_text(s) == "D4 D16 K10 Q4 Q16" and s.moves() == []
    with pytest.raises(ValueError):
        place_fixed_handicap(GameState(), 1)
    occupied = play_all(GameState(), ["w q16"])
    with pytest.raises(ValueError):
        place_fixed_handicap(occupied, 2)
    assert occupied.move_num == 1


def test_free_handicap_grid():
    s = GameState()
    assert place_free_handicap(s, 12) == 12
    assert stone_list_text(s) == "D4 D7 D10 D13 D16 G4 K4 K10 K16 Q4 Q10 Q16"  # place_free_handicap
    assert (s.handicap, s.move_num, s.to_move) == (12, 0, WHITE)

    def choose(probe: GameState) -> int:  # stands in for the search
        assert probe.to_move == BLACK
        return probe.legal_moves(BLACK)[0]

    t = GameState()
    place_free_handicap(t, 30, choose_move=choose)
    assert len(stone_list_text(t).split()) == 30 and t.board.square[V("a1")] != EMPTY
    assert (t.handicap, t.move_num, t.to_move) == (30, 0, WHITE)
    assert place_free_handicap(GameState(), 500) == 180
    assert len(grid_points(GameState(), 100)) == 25


# ----------------------------------------------------------------------------- live oracle
# Separate processes: the reference's assert build sometimes aborts in clear_board after a
# genmove (`UCTNodePointer::get_tree_size() == 0`), a race in its tree deletion.
SESSIONS = [
    ["play b d4", "genmove b", "showboard", "undo", "showboard", "undo", "undo", "showboard",
     "play w q16", "play b pass", "showboard", "kgs-genmove_cleanup w", "showboard", "undo",
     "showboard"],
    ["fixed_handicap 3", "showboard", "final_score", "undo", "genmove w", "showboard",
     "genmove w", "showboard", "undo", "undo", "showboard"],
    ["komi 0.5", "place_free_handicap 14", "showboard", "final_score",
     "clear_board", "place_free_handicap 1", "showboard", "play b k10", "showboard",
     "clear_board", "place_free_handicap 0", "showboard",
     "clear_board", "place_free_handicap 25", "showboard"],
]


def without_clock(text: str) -> str:
    return "".join(line for line in text.splitlines(True)
                   if not line.startswith(("Black time:", "White time:")))


@pytest.mark.parametrize("session", SESSIONS, ids=["genmove-undo", "fixed", "free"])
def test_session_equals_reference(lz_binary, random_weights, session):
    """Undo after genmove for the other side, kgs-genmove_cleanup's pass reset, handicaps,
    final_score: every showboard byte for byte (bar the clock), every undo's success, the
    handicap replies."""
    replies, boards = lz_session(lz_binary, random_weights(1, 8), session)
    assert len(replies) == len(session) and len(boards) == session.count("showboard")
    state = GameState()
    shown = iter(boards)
    for command, reply in zip(session, replies):
        name = command.split()[0]
        if name == "undo":
            assert state.undo() == (reply == "")
        elif name == "kgs-genmove_cleanup":
            state.set_passes(0)
            replay(state, "genmove w", reply)
        elif name == "showboard":
            # The reference's clock runs during genmove; ours is not charged here.
            assert without_clock(showboard_text(state)) == without_clock(next(shown))
        elif name == "final_score":
            score = state.final_score()
            assert reply == (f"B+{score:.1f}" if score > 0.1 else f"W+{-score:.1f}")
        else:
            replay(state, command, reply)
            if "handicap" in name:
                assert reply == stone_list_text(state)


def test_ko_point_closed_to_both_colours_like_reference(lz_binary, random_weights):
    """Right after B E10 takes the ko, LZ's search may not even let Black fill D10 (allowed
    only D10, it passes); one pass later it may. Our is_legal says the same."""
    allow = "lz-genmove_analyze b 0 allow b d10 1"
    commands = ["play " + m for m in KO_GAME] + [allow, allow]
    proc = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-v", "5",
                           "-w", random_weights(1, 8)], input="\n".join(commands) + "\n",
                          capture_output=True, text=True, timeout=120, check=True)
    played = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("play ")]
    assert played == ["pass", "D10"]
    state = play_all(GameState(), KO_GAME)
    assert not state.is_legal(BLACK, V("d10"))
    state.play(BLACK, PASS)
    assert state.is_legal(BLACK, V("d10"))
