"""Input planes (reference doc 4.3), checked against boards written out by hand here."""

from __future__ import annotations

import numpy as np

from leelaz.game.coords import BLACK, PASS, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn.features import input_planes


def idx(text: str) -> int:
    """Plane index of a GTP point: y * 19 + x."""
    x = "ABCDEFGHJKLMNOPQRST".index(text[0])
    return (int(text[1:]) - 1) * 19 + x


def play(state, *moves):
    for i, m in enumerate(moves):
        color = BLACK if state.to_move == BLACK else WHITE
        state.play(color, parse_gtp_vertex(m))


def stones(plane) -> set[int]:
    return set(np.flatnonzero(plane).tolist())


def test_empty_board_black_to_move():
    planes = input_planes(GameState())
    assert planes.shape == (18, 361) and planes.dtype == np.uint8
    assert planes[:16].sum() == 0
    assert planes[16].all() and not planes[17].any()


def test_history_from_the_side_to_move_view():
    s = GameState()
    play(s, "D4", "Q16", "C3")  # White to move
    p = input_planes(s)
    assert not p[16].any() and p[17].all()
    # planes 0-7: White (to move) stones now, 1 move ago, ...; 8-15: Black's
    assert stones(p[0]) == {idx("Q16")}
    assert stones(p[8]) == {idx("D4"), idx("C3")}
    assert stones(p[1]) == {idx("Q16")} and stones(p[9]) == {idx("D4")}
    assert stones(p[2]) == set() and stones(p[10]) == {idx("D4")}
    assert stones(p[3]) == set() and stones(p[11]) == set()  # the empty start
    assert p[4:8].sum() == 0 and p[12:16].sum() == 0  # before the start


def test_only_eight_positions_and_captures_show():
    s = GameState()
    # Black captures a white stone at B1 (A1 ... ) along the way; 10 moves in all.
    play(s, "A2", "A1", "B1", "Q16", "Q4", "D16", "C3", "E5", "F6", "G7")
    p = input_planes(s)  # Black to move (10 moves played)
    assert s.to_move == BLACK
    assert idx("A1") not in stones(p[8]) and idx("A1") not in stones(p[0])
    # 7 moves ago (after move 3, B1 captured A1): Black A2 B1, White nothing
    assert stones(p[7]) == {idx("A2"), idx("B1")} and stones(p[15]) == set()
    assert stones(p[0]) == {idx(v) for v in ("A2", "B1", "Q4", "C3", "F6")}
    assert stones(p[8]) == {idx(v) for v in ("Q16", "D16", "E5", "G7")}


def test_pass_repeats_the_board():
    s = GameState()
    play(s, "D4")
    s.play(WHITE, PASS)
    p = input_planes(s)  # Black to move
    assert stones(p[0]) == stones(p[1]) == {idx("D4")}
    assert stones(p[2]) == set() and p[8:16].sum() == 0
    assert p[16].all()


def test_anchored_start_has_no_history():
    s = GameState()
    for v in ("D4", "Q16", "D16"):
        s.play(BLACK, parse_gtp_vertex(v))
    s.anchor()
    s.play(BLACK, PASS)  # hand the move to White without changing the stones
    s.anchor()
    p = input_planes(s)
    assert p[17].all()
    assert stones(p[8]) == {idx("D4"), idx("Q16"), idx("D16")}
    assert p[1:8].sum() == 0 and p[9:16].sum() == 0
