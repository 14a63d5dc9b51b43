"""backends/mux.py: the Networks of several games park their rows in one RoundBatch
and get, from ONE backend call, what each would get from the backend alone (planes, and the
packed positions a device builds its planes from, joined in the packed layout)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from leelaz.backends.base import PACKED_ROW, Backend
from leelaz.game.coords import BLACK, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn.network import Network
from leelaz.backends.mux import RoundBatch, SharedBackend


class KeyedBackend(Backend):
    """Answers each position from its own input bytes; records the rows of every call."""

    name = "keyed"

    def __init__(self, packed: bool):
        self.packed = packed
        self.calls: list[int] = []

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.packed

    def forward(self, planes):
        self.calls.append(len(planes))
        return _answer([row.tobytes() for row in planes])

    def submit_packed(self, packed: bytes, batch: int):
        self.calls.append(batch)
        boxes, pairs = packed[:batch * PACKED_ROW], packed[batch * PACKED_ROW:]
        assert len(pairs) == 2 * batch
        keys = [boxes[i * PACKED_ROW:(i + 1) * PACKED_ROW] + pairs[2 * i:2 * i + 2]
                for i in range(batch)]
        return _Now(_answer(keys))


class _Now:
    def __init__(self, answer):
        self.answer = answer

    def result(self):
        return self.answer


def _answer(keys):
    rngs = [np.random.default_rng(zlib.crc32(k)) for k in keys]
    return (np.array([r.standard_normal(362) for r in rngs], dtype=np.float32),
            np.array([r.uniform(0.1, 0.9) for r in rngs], dtype=np.float32))


def _positions(moves: str, count: int) -> list[GameState]:
    out, state, color = [], GameState(), BLACK
    for move in moves.split()[:count]:
        state.play(color, parse_gtp_vertex(move))
        color = 1 - color
        out.append(state.copy())
    return out


GAMES = [_positions("D4 Q16 Q4 D16 C3 R17", 5), _positions("K10 C3 R17 Q4", 3),
         _positions("Q16 D4 C16 R4 F3 O17", 6)]


def _answers(evaluations):
    return [(ev.policy.tolist(), ev.winrate) for ev in evaluations]


@pytest.mark.parametrize("packed", [False, True], ids=["planes", "packed"])
def test_games_sharing_one_call_get_what_the_backend_alone_gives_each(packed):
    alone = []
    for seed, states in enumerate(GAMES):
        net = Network(None, KeyedBackend(packed), seed=seed, symmetric_lookups=False)
        alone.append(_answers(net.evaluate(states)))
    device = KeyedBackend(packed)
    batch = RoundBatch(device)
    nets = [Network(None, SharedBackend(batch), seed=seed, symmetric_lookups=False)
            for seed in range(len(GAMES))]
    pending = [net.submit(states) for net, states in zip(nets, GAMES)]
    assert device.calls == []  # parked until the round's call
    batch.send()
    assert device.calls == [sum(len(states) for states in GAMES)]
    assert [_answers(p.result()) for p in pending] == alone
    assert (batch.calls, batch.rows) == (1, sum(len(states) for states in GAMES))


def test_an_answer_asked_before_the_round_ends_sends_the_call_then():
    device = KeyedBackend(True)
    batch = RoundBatch(device)
    first = Network(None, SharedBackend(batch), seed=0, symmetric_lookups=False)
    second = Network(None, SharedBackend(batch), seed=1, symmetric_lookups=False)
    waiting = second.submit(GAMES[1])
    got = first.evaluate(GAMES[0])  # evaluate = submit + result: sends both games' rows
    assert device.calls == [len(GAMES[0]) + len(GAMES[1])]
    assert len(got) == len(GAMES[0]) and len(waiting.result()) == len(GAMES[1])
    batch.send()  # nothing left: no call
    assert device.calls == [len(GAMES[0]) + len(GAMES[1])]


def test_max_rows_sends_a_full_call_early_and_keeps_a_games_rows_together():
    device = KeyedBackend(False)
    batch = RoundBatch(device, max_rows=8)
    nets = [Network(None, SharedBackend(batch), seed=seed, symmetric_lookups=False)
            for seed in range(len(GAMES))]
    pending = [net.submit(states) for net, states in zip(nets, GAMES)]  # 5 + 3, then 6
    batch.send()
    assert device.calls == [8, 6]
    alone = [_answers(Network(None, KeyedBackend(False), seed=seed,
                              symmetric_lookups=False).evaluate(states))
             for seed, states in enumerate(GAMES)]
    assert [_answers(p.result()) for p in pending] == alone


def test_planes_parked_beside_packed_positions_go_in_a_call_of_their_own():
    """A call holds one kind of rows: planes between packed positions (a network server's
    client whose own backend takes planes) close the packed call and open their own; each
    part gets what the backend alone gives it."""
    from leelaz.nn.features import input_planes, packed_inputs

    states = GAMES[0]
    packed = packed_inputs(states, [0] * len(states))
    planes = np.stack([input_planes(s) for s in states]).astype(np.float32)
    planes = planes.reshape(len(states), 18, 19, 19)
    device = KeyedBackend(True)
    batch = RoundBatch(device)
    shares = [batch.park(packed, len(states)), batch.park(planes, len(states)),
              batch.park(packed, len(states))]
    batch.send()
    assert device.calls == [len(states)] * 3
    alone = KeyedBackend(True)
    want = [alone.submit_packed(packed, len(states)).result(), alone.forward(planes),
            alone.submit_packed(packed, len(states)).result()]
    for share, (policy, value) in zip(shares, want):
        got = share.result()
        np.testing.assert_array_equal(got[0], policy)
        np.testing.assert_array_equal(got[1], value)
