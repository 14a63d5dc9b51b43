"""Input planes (Network::gather_features), checked against boards written out by hand here."""

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


# ---------------------------------------------------------------------- the batched planes
import random  # noqa: E402

import pytest  # noqa: E402

from leelaz.nn.features import input_planes_batch  # noqa: E402
from leelaz.nn.symmetry import transform_planes  # noqa: E402


def random_positions(seed: int, games: int = 6, moves: int = 40) -> list[GameState]:
    """Copies of every position of a few random games (passes and captures included); some
    games are anchored part-way, so their histories restart and stay shorter than 8."""
    rng = random.Random(seed)
    positions = []
    for g in range(games):
        s = GameState()
        anchor_at = rng.randrange(1, moves) if g % 2 else None
        for m in range(moves):
            legal = s.legal_moves(s.to_move)
            s.play(s.to_move, PASS if rng.random() < 0.08 else rng.choice(legal))
            if m == anchor_at:
                s.anchor()
            positions.append(s.copy())
    return positions


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_batch_equals_one_state_at_a_time(dtype):
    states = random_positions(1)
    assert any(len(s.history) < 8 for s in states) and any(len(s.history) > 8 for s in states)
    out = np.full((len(states), 18, 361), 7, dtype=dtype)
    assert input_planes_batch(states, out) is out
    for state, planes in zip(states, out):
        assert np.array_equal(planes, input_planes(state))


def test_batch_with_a_symmetry_per_row_and_repeated_states():
    rng = random.Random(2)
    states = random_positions(2, games=4, moves=12)
    states = states + states[:5]  # a state may come more than once (averaging)
    syms = [rng.randrange(8) for _ in states]
    out = input_planes_batch(states, np.empty((len(states), 18, 361), np.float32), syms)
    for state, s, planes in zip(states, syms, out):
        assert np.array_equal(planes, transform_planes(input_planes(state), s))
    same = input_planes_batch(states[:3], np.empty((3, 18, 361), np.float32), [5, 5, 5])
    for state, planes in zip(states, same):
        assert np.array_equal(planes, transform_planes(input_planes(state), 5))
