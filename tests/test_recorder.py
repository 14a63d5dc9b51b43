"""TrainingRecorder and dump_training: records read back by the independent parser, and the
same game recorded by C++ Leela Zero (planes, side to move, visit shares, outcome)."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

import numpy as np
import pytest

import chunk_parser
from lz_training_oracle import lz_folder, run_lz  # noqa: F401 (fixture)
from leelaz.game.coords import BLACK, PASS, WHITE, parse_gtp_vertex, policy_slot
from leelaz.training.recorder import EmptyTrainingBuffer, TrainingRecorder, visit_distribution

_libc = ctypes.CDLL(None)


def libc_g(value: float) -> str:
    buf = ctypes.create_string_buffer(64)
    _libc.snprintf(buf, 64, b"%g", ctypes.c_double(value))
    return buf.value.decode()


@dataclass
class FakeState:
    to_move: int
    planes: np.ndarray


@dataclass
class FakeChild:
    move: int
    visits: int


@dataclass
class FakeResult:
    children: list


def _fake_planes(state):
    return state.planes


def _state(rng, to_move):
    planes = np.zeros((18, 361), np.uint8)
    planes[:16] = rng.random((16, 361)) < 0.3
    planes[16 + to_move] = 1
    return FakeState(to_move, planes)


def test_records_read_back_with_winner_and_visit_shares(tmp_path):
    rng = np.random.default_rng(11)
    rec = TrainingRecorder(planes_fn=_fake_planes)
    states = [_state(rng, BLACK), _state(rng, WHITE), _state(rng, BLACK)]
    d4, q16 = parse_gtp_vertex("D4"), parse_gtp_vertex("Q16")
    results = [FakeResult([FakeChild(d4, 3), FakeChild(q16, 4), FakeChild(PASS, 0)]),
               {d4: 1, PASS: 2},
               np.arange(362) % 7]
    for s, r in zip(states, results):
        assert rec.record(s, r)
    assert not rec.record(states[0], FakeResult([FakeChild(d4, 0)]))  # terminal root
    assert len(rec) == 3

    path = rec.dump(WHITE, str(tmp_path / "game"))
    assert path == str(tmp_path / "game.0.gz")
    parsed = chunk_parser.parse_chunk(path)
    assert len(parsed) == 3
    for s, p in zip(states, parsed):
        assert p.planes == s.planes[:16].tolist()
        assert p.white_to_move == (s.to_move == WHITE)
        assert p.winner_is_to_move == (s.to_move == WHITE)

    def expected(visits):
        v = np.asarray(visits, np.float32)
        return [libc_g(float(np.float32(x) / np.float32(v.sum()))) for x in v]

    first = np.zeros(362)
    first[policy_slot(d4)], first[policy_slot(q16)] = 3, 4
    assert parsed[0].probability_text == expected(first)
    assert parsed[0].probability_text[policy_slot(q16)] == "0.571429"
    second = np.zeros(362)
    second[policy_slot(d4)], second[361] = 1, 2
    assert parsed[1].probability_text == expected(second)
    assert parsed[2].probability_text == expected(np.arange(362) % 7)

    # the buffer is kept; dumping again with the other winner flips every outcome
    rec.dump(BLACK, str(tmp_path / "game"))
    again = chunk_parser.parse_chunk(path)
    assert [p.winner_is_to_move for p in again] == [not p.winner_is_to_move for p in parsed]
    assert sorted(os.listdir(tmp_path)) == ["game.0.gz"]


def test_empty_buffer_writes_nothing(tmp_path):
    rec = TrainingRecorder(planes_fn=_fake_planes)
    with pytest.raises(EmptyTrainingBuffer):
        rec.dump(BLACK, str(tmp_path / "x"))
    assert os.listdir(tmp_path) == []
    rec.record(_state(np.random.default_rng(1), BLACK), {PASS: 1})
    rec.clear()
    with pytest.raises(EmptyTrainingBuffer):
        rec.dump(BLACK, str(tmp_path / "x"))


def test_visit_distribution_forms():
    d4 = parse_gtp_vertex("D4")
    a = visit_distribution({d4: 5, PASS: 1})
    b = visit_distribution(FakeResult([FakeChild(d4, 5), FakeChild(PASS, 1)]))
    assert np.array_equal(a, b)
    assert a[policy_slot(d4)] == 5 and a[361] == 1 and a.sum() == 6
    with pytest.raises(ValueError):
        visit_distribution(np.ones(361))


# --------------------------------------------------------------------------------------------
# against Leela Zero's own dump_training


def _visit_counts(probabilities: list[float]) -> np.ndarray:
    """The smallest whole visit counts whose shares print as these probabilities."""
    p = np.array(probabilities)
    for total in range(1, 5000):
        visits = np.round(p * total)
        if visits.sum() == total and np.allclose(visits / total, p, rtol=2e-6, atol=0):
            return visits
    raise AssertionError("no visit counts fit")


def test_same_records_as_leela_zeros_dump_training(lz_binary, random_weights, lz_folder):
    """LZ plays a few moves with 8 visits per search (7 child visits: shares like 2/7), with
    a play and a pass between searches, then dumps with White as the winner. Our recorder,
    given our GameState at each searched position and the visit counts behind LZ's shares,
    writes LZ's exact text: planes (our input_planes), side to move, %g shares, outcome."""
    from leelaz.game.state import GameState

    script = ["play b q16", "genmove w", "genmove b", "play w pass", "genmove b", "genmove w",
              "play b d4", "genmove w", f"dump_training w {lz_folder}/lz"]
    code, out, err = run_lz(lz_binary, random_weights(1, 8), script, extra_args=("-v", "8", "-s", "1"))
    assert code == 0, err[-300:]
    replies = [r for r in out.split("\n\n") if r.strip()]
    assert len(replies) == len(script) + 1 and all(r.startswith("=") for r in replies)
    lz_text = chunk_parser.read_text(f"{lz_folder}/lz.0.gz")
    lz_records = chunk_parser.parse_text(lz_text)
    assert len(lz_records) == 5

    state = GameState(komi=7.5)
    rec = TrainingRecorder()
    searched = 0
    for line, reply in zip(script[:-1], replies):
        words = line.split()
        if words[0] == "play":
            state.play(0 if words[1] == "b" else 1, parse_gtp_vertex(words[2]))
            continue
        color = 0 if words[1] == "b" else 1
        assert state.to_move == color
        visits = _visit_counts(lz_records[searched].probabilities)
        assert rec.record(state, visits)
        searched += 1
        state.play(color, parse_gtp_vertex(reply[2:].strip()))
    path = rec.dump(WHITE, f"{lz_folder}/ours")
    assert chunk_parser.read_text(path) == lz_text


# --------------------------------------------------------------------------------------------
# through the whole program


def test_genmove_then_dump_training_through_the_engine(tmp_path, random_weights):
    """Searches record, dump_training writes them with the winner, clear_board empties the
    buffer (then a `?` reply, where Leela Zero aborts), and nothing goes to stdout but GTP."""
    import io
    from leelaz import cli

    out_prefix = tmp_path / "Game"
    script = (f"genmove b\ngenmove w\nplay b pass\ngenmove w\n"
              f"dump_training b {out_prefix}\nclear_board\ndump_training w {tmp_path}/x\n"
              f"dump_training purple {tmp_path}/x\nquit\n")
    stdout, stderr = io.StringIO(), io.StringIO()
    code = cli.run(["-w", random_weights(1, 8), "-v", "8", "--noponder", "-t", "1", "-g"],
                   stdin=io.StringIO(script), stdout=stdout, stderr=stderr)
    assert code == 0
    replies = [r for r in stdout.getvalue().split("\n\n") if r.strip()]
    assert replies[4:] == ["= ", "= ", "? no training data recorded",
                           "? syntax not understood", "= "]
    assert "Writing chunk 0" in stderr.getvalue()
    assert sorted(os.listdir(tmp_path)) == ["Game.0.gz"]

    records = chunk_parser.parse_chunk(str(out_prefix) + ".0.gz")
    assert [r.white_to_move for r in records] == [False, True, True]
    assert [r.winner_is_to_move for r in records] == [True, False, False]
    for r in records:
        assert abs(sum(r.probabilities) - 1) < 1e-4
        assert all(p == 0 or abs(p * 7 - round(p * 7)) < 1e-5 for p in r.probabilities)
    first, _, third = records
    assert not any(map(any, first.planes))  # empty board, Black to move
    # third: White to move after B, W, B pass: two stones, the last board repeated
    assert sum(third.planes[0]) == 1 and sum(third.planes[8]) == 1
    assert third.planes[0] == third.planes[1] and third.planes[8] == third.planes[9]
    assert sum(third.planes[2]) == 0 and sum(third.planes[10]) == 1
