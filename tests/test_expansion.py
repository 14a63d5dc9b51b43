"""Expansion: the vectorised legal points against the rules, and a batch's children against
`UCTNode.create_children` leaf by leaf."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import requires

from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, PASS, WHITE
from leelaz.search import expansion
from leelaz.game.state import GameState
from leelaz.search.expansion import expand_batch, legal_points, pass_allowed
from leelaz.search.node import UCTNode


def random_positions(seed: int, games: int, moves: int) -> list[GameState]:
    """Positions of random games, every move, with captures, kos and (late) suicide points."""
    rng = np.random.default_rng(seed)
    positions = []
    for _ in range(games):
        state = GameState()
        for _ in range(moves):
            positions.append(state.copy())
            legal = state.legal_moves(state.to_move)
            if not legal:
                break
            state.play(state.to_move, int(rng.choice(legal)))
    return positions


def test_legal_points_equal_the_rules_legal_moves():
    """The search's vectorised legal points are GameState.legal_moves, over random games
    that reach captures, kos and suicide points (both colours, every move)."""
    checked_ko = 0
    for state in random_positions(5, 3, 400):
        for color in (BLACK, WHITE):
            assert legal_points(state, color).tolist() == state.legal_moves(color)
        checked_ko += bool(state.board.ko_move)
    assert checked_ko > 0


def random_policy(rng, kind: str) -> np.ndarray:
    """A 362-slot policy: smooth, coarse (many equal priors, so ties decide the order),
    or all zero (the priors must then be spread evenly)."""
    if kind == "zero":
        return np.zeros(NUM_INTERSECTIONS + 1, dtype=np.float32)
    p = rng.random(NUM_INTERSECTIONS + 1).astype(np.float32)
    if kind == "coarse":
        p = np.round(p * 3).astype(np.float32)
    return p / p.sum(dtype=np.float32)


def one_at_a_time(state, ev, dumbpass: bool) -> tuple[UCTNode, int]:
    """The reference: create_children on the leaf's legal points, as a lone leaf is expanded."""
    node = UCTNode()
    color = state.to_move
    candidates = legal_points(state, color)
    allow = pass_allowed(state, len(candidates), ev.winrate, dumbpass)
    black = ev.winrate if color == BLACK else 1.0 - ev.winrate
    return node, node.create_children(candidates, ev.policy, allow, black)


@pytest.fixture(params=["numpy", "compiled"])
def batch_path(request, monkeypatch):
    """expand_batch through NumPy, or through the compiled kernels (loaded here and now)."""
    if request.param == "compiled":
        requires("numba")
        monkeypatch.delenv(expansion.COMPILED_VARIABLE, raising=False)
        monkeypatch.setattr(expansion, "_kernels", None)
        expansion._load_kernels()
        assert expansion._kernels is not None
    else:
        monkeypatch.setattr(expansion, "_kernels", None)
    monkeypatch.setattr(expansion, "_loading", object())  # no background load meanwhile
    return request.param


def test_the_kernels_stay_unloaded_when_told(monkeypatch):
    """LEELAZ_COMPILED=0 keeps the NumPy expansion (to compare the two)."""
    monkeypatch.setenv(expansion.COMPILED_VARIABLE, "0")
    monkeypatch.setattr(expansion, "_kernels", None)
    expansion._load_kernels()
    assert expansion._kernels is None


def test_a_batch_gets_exactly_the_children_create_children_gives(batch_path):
    """Moves, priors (bit for bit), order, value and node count of every leaf, over positions
    from the opening to the end of random games, with smooth, tied and all-zero policies and
    winrates on both sides of the pass threshold; through NumPy and through the compiled
    kernels alike (the reference, `children_of`, is NumPy's one leaf at a time)."""
    rng = np.random.default_rng(11)
    positions = random_positions(3, 2, 420)
    kinds = ("smooth", "coarse", "zero")
    for dumbpass in (False, True):
        for start in range(0, len(positions), 37):
            states = positions[start:start + 37]
            evals = [SimpleNamespace(policy=random_policy(rng, kinds[i % 3]),
                                     winrate=float(rng.choice([0.1, 0.5, 0.85, 0.99])))
                     for i in range(len(states))]
            nodes = [UCTNode() for _ in states]
            values, made = expand_batch(nodes, states, evals, dumbpass)
            expected_made = 0
            for node, value, state, ev in zip(nodes, values, states, evals):
                ref, count = one_at_a_time(state, ev, dumbpass)
                expected_made += count
                assert node.children_moves() == ref.children_moves()
                assert node._priors.tobytes() == ref._priors.tobytes()
                assert value == ref.net_eval == node.net_eval
                assert node.expanded and node.psa_ratio == 0.0
            assert made == expected_made


def test_priors_are_renormalised_and_ties_put_the_higher_vertex_first(batch_path):
    """Computed by hand: three legal points with priors 2:1:1 and pass with 0 (allowed, few
    moves). The tie between the two 1s goes to the higher vertex; pass comes last."""
    state = GameState()
    board_moves = state.legal_moves(BLACK)
    a, b, c = board_moves[10], board_moves[20], board_moves[30]
    policy = np.zeros(NUM_INTERSECTIONS + 1, dtype=np.float32)
    for v, p in ((a, 0.25), (b, 0.5), (c, 0.25)):
        y, x = divmod(v, 21)
        policy[(y - 1) * 19 + x - 1] = p
    node = UCTNode()
    expand_batch([node], [state], [SimpleNamespace(policy=policy, winrate=0.5)], True)
    moves = node.children_moves()
    assert moves[:3] == [b, c, a]
    assert list(node._priors[:3]) == [0.5, 0.25, 0.25]
    assert moves[-1] == PASS and node._priors[-1] == 0.0
    assert len(moves) == len(board_moves) + 1
