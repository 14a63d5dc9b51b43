"""The 8 symmetries in Leela Zero's numbering (Network::get_symmetry) and the symmetric hash."""

from __future__ import annotations

import numpy as np
import oracle
import pytest

from leelaz.game.coords import BLACK, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn import symmetry as S

# The doc's list, (x, y) -> image, for the point x=2, y=5 (C6).
EXPECTED = {0: (2, 5), 1: (2, 13), 2: (16, 5), 3: (16, 13), 4: (5, 2), 5: (5, 16),
            6: (13, 2), 7: (13, 16)}


@pytest.mark.parametrize("s", range(8))
def test_table_follows_the_documented_formulas(s):
    x, y = EXPECTED[s]
    assert S.SYMMETRY_TABLE[s][5 * 19 + 2] == y * 19 + x
    assert sorted(S.SYMMETRY_TABLE[s]) == list(range(361))


def test_table_equals_the_oracles():
    """All 8 x 361 entries against Network::get_symmetry written out again (tests/oracle.py)."""
    assert np.array_equal(S.SYMMETRY_TABLE, oracle.symmetry_table())


def test_inverses():
    assert S.INVERSE == (0, 1, 2, 3, 4, 6, 5, 7)
    for s in range(8):
        t = S.SYMMETRY_TABLE
        assert np.array_equal(t[s][t[S.INVERSE[s]]], np.arange(361))


@pytest.mark.parametrize("s", range(8))
def test_planes_and_policy_round_trip_pass_fixed(s):
    rng = np.random.default_rng(s)
    planes = rng.integers(0, 2, size=(18, 361)).astype(np.uint8)
    seen = S.transform_planes(planes, s)
    assert np.array_equal(seen[:, 7], planes[:, S.SYMMETRY_TABLE[s][7]])
    out = rng.random(362)
    policy = S.untransform_policy(out, s)
    assert policy[361] == out[361]
    # The prior the net gives at input index i belongs to the board point it looked at there.
    assert all(policy[S.SYMMETRY_TABLE[s][i]] == out[i] for i in range(361))
    assert np.array_equal(S.remap_cached_policy(S.untransform_policy(out, s), s), out)


def mirrored_game(moves, s):
    g = GameState()
    for color, text in moves:
        v = parse_gtp_vertex(text)
        if s is not None:
            x, y = S.symmetric_xy((v % 21) - 1, (v // 21) - 1, s)
            v = (y + 1) * 21 + x + 1
        g.play(color, v)
    return g


MOVES = [(BLACK, "D4"), (WHITE, "Q16"), (BLACK, "C17"), (WHITE, "R3"), (BLACK, "K10"),
         (WHITE, "A1"), (BLACK, "B1"), (WHITE, "E5"), (BLACK, "A2")]  # A2 captures A1


@pytest.mark.parametrize("s", range(8))
def test_symmetric_hash_is_the_hash_of_the_mirrored_position(s):
    original = mirrored_game(MOVES, None)
    mirror = mirrored_game(MOVES, s)
    assert original.board.prisoners[BLACK] == 1
    assert S.symmetry_hash(original.board, s) == mirror.board.hash
    assert S.symmetry_hash(original.board, 0) == original.board.hash


def test_board_colours_in_index_order():
    g = mirrored_game(MOVES[:2], None)
    colours = S.board_colours(g.board)
    assert colours[3 * 19 + 3] == BLACK and colours[15 * 19 + 15] == WHITE
    assert (colours == 2).sum() == 359


def test_batch_hashes_are_the_mirrored_games_hashes():
    """Over random games (captures, prisoners), every position and every symmetry."""
    import random
    rng = random.Random(4)
    games = []
    for _ in range(3):
        moves, g = [], GameState()
        for _ in range(rng.randrange(60, 140)):
            v = rng.choice(g.legal_moves(g.to_move))
            moves.append((g.to_move, v))
            g.play(g.to_move, v)
        games.append(moves)
    for moves in games:
        for length in range(0, len(moves), 7):
            played = [(c, vertex_name(v)) for c, v in moves[:length]]
            boards = [mirrored_game(played, s).board for s in range(8)]
            hashes = S.symmetry_hashes_batch(boards[:1] * 2)
            assert hashes[0] == hashes[1] == [b.hash for b in boards]
            assert S.symmetry_hashes(boards[0]) == [b.hash for b in boards[1:]]


KO = [(BLACK, "B1"), (WHITE, "C1"), (BLACK, "A2"), (WHITE, "B2"), (BLACK, "B3"),
      (WHITE, "C3"), (BLACK, "Q16"), (WHITE, "D2"), (BLACK, "C2")]  # C2 takes B2: ko at B2


@pytest.mark.parametrize("s", range(8))
def test_batch_hash_moves_the_ko_point(s):
    original, mirror = mirrored_game(KO, None), mirrored_game(KO, s)
    assert original.board.ko_move != 0 and original.board.prisoners[BLACK] == 1
    assert S.symmetry_hashes_batch([original.board, mirror.board])[0][s] == mirror.board.hash
    assert S.symmetry_hashes_batch([]) == []


def test_untransform_policies_row_by_row():
    rng = np.random.default_rng(3)
    out = rng.random((11, 362))
    syms = rng.integers(0, 8, 11).tolist()
    rows = S.untransform_policies(out, syms)
    for r, s in enumerate(syms):
        assert np.array_equal(rows[r], S.untransform_policy(out[r], s))


def vertex_name(v: int) -> str:
    x, y = v % 21 - 1, v // 21 - 1
    return "ABCDEFGHJKLMNOPQRST"[x] + str(y + 1)
