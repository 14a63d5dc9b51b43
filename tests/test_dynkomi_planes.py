"""Dynamic komi in the network's input (docs/dynamic-komi.md §2): the colour planes' values as
a function of the komi fed to the network, the per-turn komi on play and undo, scoring without
handicap compensation, the cache key, and the NumPy and OpenCL backends (float planes and the
packed input) agreeing at komi -20, 0, 7.5 and 30.

Expected plane values are the doc's table T1 (0.5 +- k/15), written out here; the winrates are
checked against the naive direct-convolution network of tests/oracle.py fed planes built in
this file.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_helpers import opencl_backend, record_packed_calls
from conftest import position as game
from conftest import requires

import oracle
from leelaz.backends.numpy_backend import NumpyBackend
from leelaz.backends.weights import load_weights
from leelaz.game.coords import BLACK, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn.features import input_planes, input_planes_batch, packed_inputs
from leelaz.nn.network import Network, cache_key

KOMIS = (-20.0, 0.0, 7.5, 30.0)


def float_planes(states) -> np.ndarray:
    out = np.empty((len(states), 18, 361), np.float32)
    return input_planes_batch(states, out)


# ---- T1: the colour planes -------------------------------------------------------------
@pytest.mark.parametrize("to_move,komi,black_plane,white_plane", [
    (BLACK, 7.5, 1.0, 0.0), (WHITE, 7.5, 0.0, 1.0), (BLACK, -7.5, 0.0, 1.0),
    (WHITE, -7.5, 1.0, 0.0), (BLACK, 0.0, 0.5, 0.5), (WHITE, 0.0, 0.5, 0.5),
    (BLACK, 22.5, 2.0, -1.0), (WHITE, 22.5, -1.0, 2.0)])
def test_colour_planes_follow_the_komi(to_move, komi, black_plane, white_plane):
    state = game("d4 q16 c3") if to_move == WHITE else game("d4 q16")
    state.set_net_komi(komi, 3.0)  # the other turn's komi does not show
    planes = float_planes([state])[0]
    assert np.all(planes[16] == np.float32(black_plane))
    assert np.all(planes[17] == np.float32(white_plane))


@pytest.mark.parametrize("moves", ["", "d4", "d4 q16 c3 pass"])
def test_komi_7_5_and_minus_7_5_give_the_standard_planes(moves):
    plain = game(moves)
    standard = input_planes(plain).astype(np.float32)
    told = plain.copy()
    told.set_net_komi(7.5, 7.5)
    assert np.array_equal(float_planes([told])[0], standard)
    # -7.5 for the side to move: the planes of the same stones with the other colour to move
    flipped = plain.copy()
    flipped.set_net_komi(-7.5, -7.5)
    got = float_planes([flipped])[0]
    assert np.array_equal(got[:16], standard[:16])
    assert np.array_equal(got[16], standard[17]) and np.array_equal(got[17], standard[16])


def test_packed_bytes_unchanged_without_komi_and_flagged_with_it():
    states = [game("d4 q16"), game("d4")]
    plain = packed_inputs(states, [0, 3])
    assert len(plain) == 2 * (8 * 441 + 2)
    told = [s.copy() for s in states]
    told[1].set_net_komi(30.0, -20.0)
    packed = packed_inputs(told, [0, 3])
    assert packed[:len(plain) - 4] == plain[:-4]  # the mailboxes
    pairs = packed[2 * 8 * 441:2 * 8 * 441 + 4]
    assert list(pairs) == [BLACK, 0, WHITE, 3 | 8]
    values = np.frombuffer(packed[len(plain):], "<f4").reshape(2, 2)
    assert values[1].tolist() == [np.float32(0.5 + 30 / 15), np.float32(0.5 - 30 / 15)]


# ---- T2, T3: the komi at each turn, scoring ---------------------------------------------
def test_komi_swaps_on_play_and_undo_and_komi_command_leaves_it():
    state = GameState(komi=0.0)
    state.set_net_komi(0.0, 0.0)
    assert (state.komi, state.stm_komi, state.opp_komi) == (0.0, 0.0, 0.0)
    state.play(BLACK, parse_gtp_vertex("q16"))  # White to move
    state.set_net_komi(16.845703, 11.850586)
    state.play(WHITE, parse_gtp_vertex("d4"))
    assert (state.stm_komi, state.opp_komi) == (11.850586, 16.845703)
    state.play(BLACK, parse_gtp_vertex("c3"))
    assert (state.stm_komi, state.opp_komi) == (16.845703, 11.850586)
    state.undo()
    assert (state.stm_komi, state.opp_komi) == (11.850586, 16.845703)
    state.undo()
    assert (state.stm_komi, state.opp_komi) == (16.845703, 11.850586)
    state.play(WHITE, parse_gtp_vertex("pass"))
    assert (state.stm_komi, state.opp_komi) == (11.850586, 16.845703)
    state.komi = 0.5
    assert (state.stm_komi, state.opp_komi) == (11.850586, 16.845703)
    assert state.copy().net_komi == state.net_komi


def test_scoring_without_handicap_compensation_in_the_modes():
    """T3: B_area - W_area = 3, komi 0.5, 4 handicap stones: W+1.5 as LZ, B+2.5 in a mode."""
    state = GameState(komi=0.5)
    for colour, move in ((BLACK, "d4"), (WHITE, "k10"), (BLACK, "d16"), (WHITE, "pass"),
                         (BLACK, "q4"), (WHITE, "pass"), (BLACK, "q16")):
        state.play(colour, parse_gtp_vertex(move))
    assert state.board.area_score(0.0) == 3.0  # 4 stones to 1, the empty region is shared
    state.handicap = 4
    assert state.final_score() == -1.5
    state.score_handicap = False
    assert state.final_score() == 2.5


# ---- the cache ---------------------------------------------------------------------------
def test_cache_key_separates_komis_but_not_7_5():
    plain = game("d4 q16")
    at = {}
    for komi in KOMIS:
        told = plain.copy()
        told.set_net_komi(komi, 0.0)
        at[komi] = cache_key(told)
    assert at[7.5] == cache_key(plain) == plain.board.hash
    assert len(set(at.values())) == len(KOMIS)


# ---- the backends --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def weights(random_weights):
    return load_weights(random_weights(2, 32, seed=11))


def komi_positions() -> list[GameState]:
    out = []
    for moves in ("", "d4", "d4 q16 c3 r4 pass", "q16 d4 d16"):
        for komi in KOMIS:
            state = game(moves)
            state.set_net_komi(komi, -komi)
            out.append(state)
    return out


def test_numpy_winrates_at_komi_match_the_oracle_on_independent_planes(weights):
    states = komi_positions()
    net = Network(weights, NumpyBackend(weights), seed=1)
    got = net.evaluate(states, symmetry=0, read_cache=False)
    for state, ev in zip(states, got):
        planes = input_planes(state).astype(np.float32)  # the standard planes ...
        own = 0.5 + state.stm_komi / 15.0  # ... with the komi written in by hand
        planes[16 + state.to_move] = own
        planes[17 - state.to_move] = 1.0 - own
        _, value = oracle.forward_one(weights, planes.reshape(18, 19, 19))
        assert abs(ev.winrate - value) < 1e-4, state.stm_komi


def test_komi_changes_the_winrate(weights):
    states = komi_positions()[:4]  # the empty board at the four komis
    net = Network(weights, NumpyBackend(weights), seed=1)
    winrates = [ev.winrate for ev in net.evaluate(states, symmetry=0, read_cache=False)]
    assert len(set(winrates)) == 4


@pytest.mark.parametrize("packed", [False, True], ids=["float-planes", "packed"])
def test_opencl_matches_numpy_at_every_komi(weights, packed, monkeypatch):
    """Within 1 per mille, through the float planes (submit) and the packed input."""
    requires("pyopencl")
    backend = opencl_backend(weights, "single", batch_size=8)
    calls = record_packed_calls(backend, monkeypatch) if packed else []
    if not packed:
        monkeypatch.setattr(type(backend), "accepts_packed_inputs", property(lambda s: False))
    device = Network(weights, backend, seed=5)
    host = Network(weights, NumpyBackend(weights), seed=5)
    states = komi_positions()
    for symmetry in (0, 5, None, "average"):
        got = device.evaluate(states, symmetry=symmetry, read_cache=False)
        want = host.evaluate(states, symmetry=symmetry, read_cache=False)
        for state, g, w in zip(states, got, want):
            assert abs(g.winrate - w.winrate) < 1e-3, (state.stm_komi, symmetry)
    assert bool(calls) == packed


def test_packed_komi_7_5_is_bit_identical_to_the_standard_row(weights):
    """The flagged colour-plane section with the values 1 and 0 gives exactly the results of
    the row without it (the kernel's standard path), and the row without komi is unchanged."""
    requires("pyopencl")
    backend = opencl_backend(weights, "single", batch_size=8)
    plain = [game(m) for m in ("", "d4", "d4 q16 c3 r4 pass", "q16 d4 d16")]
    told = []
    for state in plain:
        t = state.copy()
        t.set_net_komi(7.5, 7.5)
        told.append(t)
    syms = [0, 3, 5, 7]
    a = packed_inputs(plain, syms)
    b = packed_inputs(told, syms)
    assert len(b) == len(a) + 8 * len(plain)
    got_a = backend.submit_packed(a, len(plain)).result()
    got_b = backend.submit_packed(b, len(plain)).result()
    assert np.array_equal(got_a[0], got_b[0]) and np.array_equal(got_a[1], got_b[1])


def test_selfplay_round_batch_keeps_the_komi_section_per_row():
    """Two games' packed submits joined into one call: mailboxes, then pairs, then (when
    one has komi) the colour-plane section of every row, zeros where a game had none."""
    from leelaz.backends.mux import RoundBatch

    class Capture:
        accepts_packed_inputs = True
        asynchronous = False
        max_batch = None

        def submit_packed(self, packed, batch):
            self.got = (packed, batch)

    plain = [game("d4")]
    told = [game("d4 q16")]
    told[0].set_net_komi(30.0, 0.0)
    a, b = packed_inputs(plain, [1]), packed_inputs(told, [2])
    backend = Capture()
    batch = RoundBatch(backend)
    batch.park(a, 1)
    batch.park(b, 1)
    batch.send()
    packed, batch = backend.got
    assert batch == 2
    joined = packed_inputs(plain + told, [1, 2])  # the same rows packed together
    assert packed == joined
