"""Self-play that carries more information (KataGo's additions, leelaz/selfplay/targets.py):
playout-cap randomisation, forced playouts with policy-target pruning, checked resignation and
komi randomisation. The chunks are read back with tests/chunk_parser.py, and what they must hold
is computed here independently: which moves were searched fully (the draw's formula, written
out again), the pruned visits (KataGo's formula on the search's own visits and priors), each
game's komi and winner (our board replayed from the SGF)."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import hashlib
import math
import os
import re
import subprocess
import sys

import pytest

import chunk_parser
from conftest import debug_game as _debug_game
from fake_evaluator import HashEvaluator
from paths import REPO
from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, PASS, WHITE, index, vertex
from leelaz.game.sgf import read_first_game
from leelaz.game.sgf_replay import mainline_moves
from leelaz.game.state import GameState
from leelaz.search.params import SearchParams
from leelaz.search.result import MoveInfo, SearchResult
from leelaz.search.search import UCTSearch
from leelaz.selfplay import play_selfplay

ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _sgfs(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "*.sgf")))


def _chunk_of(sgf: str) -> str:
    return sgf[:-len(".sgf")] + ".txt.0.gz"


def _game_seed(sgf: str) -> int:
    return int(re.search(r" -s (\d+)", open(sgf).read()).group(1))


def _uniform(*key) -> float:
    digest = hashlib.sha256(":".join(str(k) for k in key).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


def _replayed(sgf: str, komi: float = 7.5):
    """The states before each SGF move (our board), the moves, RE and the final state."""
    game = read_first_game(sgf)
    state = GameState(komi=komi)
    states, moves = [], mainline_moves(game)
    for color, move in moves:
        states.append(state.copy())
        state.play(color, move)
    return states, moves, game.root.get("RE"), state


def _points():
    return [vertex(i % 19, i // 19) for i in range(NUM_INTERSECTIONS)]


def _same_position(record, state) -> bool:
    to_move = state.to_move
    ours = [int(state.board.square[v] == to_move) for v in _points()]
    theirs = [int(state.board.square[v] == 1 - to_move) for v in _points()]
    return (record.white_to_move == (to_move == WHITE) and record.planes[0] == ours
            and record.planes[8] == theirs)


# ---- playout-cap randomisation ------------------------------------------------------------

def test_a_playout_capped_chunk_holds_the_full_searches_only(tmp_path, random_weights):
    out = tmp_path / "capped"
    play_selfplay(random_weights(1, 8), str(out), 3, visits=16, parallel=3, seed=5,
                  cpu_only=True, progress=False, resignpct=0, no_resign_share=0.0,
                  max_moves=60, full_share=0.25, cheap_visits=2)
    recorded_total = 0
    for sgf in _sgfs(out):
        seed = _game_seed(sgf)
        assert "--full-share 0.25 --cheap-visits 2" in open(sgf).read()
        states, moves, _, _ = _replayed(sgf)
        full = [m for m in range(len(moves)) if _uniform("full-search", seed, m) < 0.25]
        assert 0 < len(full) < len(moves)
        records = chunk_parser.parse_chunk(_chunk_of(sgf))
        assert len(records) == len(full)  # the cheap searches are not in the chunk
        for record, m in zip(records, full):
            assert _same_position(record, states[m]), f"record for move {m}"
        with gzip.open(sgf[:-4] + ".debug.txt.0.gz", "rt") as f:
            debug = f.read().splitlines()
        assert len(debug) == 2 + len(moves)  # the resign analysis still sees every search
        recorded_total += len(records)
    assert recorded_total


def test_a_cheap_search_has_its_visits_and_no_noise(random_weights):
    from leelaz.selfplay.settings import SELFPLAY_DEFAULTS, SelfplaySettings
    settings = SelfplaySettings.build(SELFPLAY_DEFAULTS, visits=800, full_share=0.25)
    full = settings.search_params()
    cheap = settings.cheap_params(full)
    assert (full.noise, full.max_visits) == (True, 800)
    assert (cheap.noise, cheap.max_visits, cheap.timemanage) == (False, 100, "no_pruning")
    assert cheap.max_playouts == 100
    assert dataclasses.replace(cheap, noise=True, max_visits=800, max_playouts=full.max_playouts,
                               timemanage=full.timemanage) == full


# ---- forced playouts and policy-target pruning ---------------------------------------------

def _search(k: float, visits: int = 400, noise: bool = True) -> SearchResult:
    params = SearchParams(max_visits=visits, noise=noise, timemanage="off", batch_size=1,
                          forced_playouts_k=k)
    search = UCTSearch(HashEvaluator(seed=3), params, rng=7, log=lambda _: None)
    return search.think(GameState(), BLACK, time_limit_cs=10**6)


def test_without_forced_playouts_the_search_is_leela_zeros():
    plain = UCTSearch(HashEvaluator(seed=3), SearchParams(max_visits=400, noise=True,
                                                          timemanage="off", batch_size=1),
                      rng=7, log=lambda _: None).think(GameState(), BLACK, time_limit_cs=10**6)
    off = _search(0.0)
    assert [(c.move, c.visits, c.prior) for c in off.children] == \
        [(c.move, c.visits, c.prior) for c in plain.children]
    assert off.move == plain.move


def test_forced_playouts_give_each_visited_child_its_share():
    def lacking(result: SearchResult) -> list[int]:
        total = sum(c.visits for c in result.children)
        best = max(c.visits for c in result.children)
        return [c.move for c in result.children if 0 < c.visits < best
                and c.visits < math.floor(math.sqrt(2 * c.prior * total)) - 1]
    plain = _search(0.0, visits=600)
    forced = _search(2.0, visits=600)
    assert lacking(plain), "the plain search leaves some children short: the test can fail"
    assert not lacking(forced)
    assert sum(c.visits for c in forced.children) == sum(c.visits for c in plain.children)


def test_pruning_removes_exactly_the_forced_visits():
    from leelaz.selfplay.targets import prune_forced
    children = [MoveInfo(vertex(3, 3), 300, 0.5, 0.40, 0.0),
                MoveInfo(vertex(15, 15), 40, 0.5, 0.20, 0.0),
                MoveInfo(vertex(3, 15), 9, 0.5, 0.02, 0.0),
                MoveInfo(vertex(15, 3), 2, 0.5, 0.30, 0.0),
                MoveInfo(vertex(9, 9), 4, 0.5, 0.01, 0.0),
                MoveInfo(vertex(9, 3), 1, 0.5, 0.0001, 0.0),
                MoveInfo(PASS, 0, 0.0, 0.08, 0.0)]
    result = SearchResult(BLACK, 0, move=vertex(3, 3), children=children)
    total = 356
    expected = [300,  # the most visited child keeps its visits
                40 - math.floor(math.sqrt(2 * 0.20 * total)),  # 40 - 11
                9 - math.floor(math.sqrt(2 * 0.02 * total)),  # 9 - 3
                0,  # 2 - 10, not below 0
                2,  # 4 - floor(sqrt(2 * 0.01 * 356) = 2.67)
                0,  # one playout (nothing forced: sqrt(0.07) < 1): pruned outright (KataGo)
                0]
    assert expected == [300, 29, 6, 0, 2, 0, 0]
    assert [c.visits for c in prune_forced(result, 2.0).children] == expected
    children[4] = MoveInfo(vertex(9, 9), 3, 0.5, 0.01, 0.0)  # 3 - 2 leaves one: pruned
    result = SearchResult(BLACK, 0, move=vertex(3, 3), children=children)
    assert [c.visits for c in prune_forced(result, 2.0).children] == [300, 29, 6, 0, 0, 0, 0]
    assert [c.visits for c in prune_forced(result, 0.0).children] == [300, 40, 9, 2, 3, 1, 0]


def test_forced_playout_chunks_record_the_pruned_targets(tmp_path, random_weights,
                                                         monkeypatch):
    """Every search's visits and priors are captured as the search returns them; the chunk's
    targets must be those visits less floor(sqrt(2 P N)) for all but the most visited."""
    finished = []
    real_finish = UCTSearch.finish

    def capture(self, run, *args, **kwargs):
        result = real_finish(self, run, *args, **kwargs)
        finished.append(result)
        return result

    monkeypatch.setattr(UCTSearch, "finish", capture)
    out = tmp_path / "forced"
    play_selfplay(random_weights(1, 8), str(out), 1, visits=48, parallel=1, seed=9,
                  cpu_only=True, progress=False, resignpct=0, no_resign_share=0.0,
                  max_moves=40, forced_k=2.0)
    (sgf,) = _sgfs(out)
    records = chunk_parser.parse_chunk(_chunk_of(sgf))
    assert len(records) == len(finished)
    changed = 0
    for record, result in zip(records, finished):
        total = sum(c.visits for c in result.children)
        best = max(range(len(result.children)),
                   key=lambda i: (result.children[i].visits, -i))
        target = [0.0] * (NUM_INTERSECTIONS + 1)
        for i, c in enumerate(result.children):
            visits = c.visits if i == best else \
                max(0, c.visits - math.floor(math.sqrt(2.0 * c.prior * total)))
            visits = 0 if i != best and visits == 1 else visits  # a single playout: pruned
            target[NUM_INTERSECTIONS if c.move == PASS else index(c.move)] = visits
        kept = sum(target)
        expected = [v / kept for v in target]
        assert max(abs(a - b) for a, b in zip(record.probabilities, expected)) < 1e-5
        plain = [0.0] * (NUM_INTERSECTIONS + 1)
        for c in result.children:
            plain[NUM_INTERSECTIONS if c.move == PASS else index(c.move)] = c.visits / total
        changed += max(abs(a - b) for a, b in zip(plain, expected)) > 1e-3
    assert changed  # pruning changed some targets


# ---- komi randomisation ----------------------------------------------------------------------

def test_each_game_has_its_drawn_komi_and_is_won_by_it(tmp_path, random_weights):
    out = tmp_path / "komi"
    play_selfplay(random_weights(1, 8), str(out), 4, visits=4, parallel=4, seed=3,
                  cpu_only=True, progress=False, resignpct=0, no_resign_share=0.0,
                  max_moves=50, komi_spread=10.0)
    komis = set()
    for sgf in _sgfs(out):
        seed = _game_seed(sgf)
        u1, u2 = max(_uniform("komi-1", seed), 1e-300), _uniform("komi-2", seed)
        komi = 7.5 + round(10.0 * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2))
        text = open(sgf).read()
        assert f"KM[{komi:g}]" in text or f"KM[{komi:.1f}]" in text, (komi, text[:200])
        komis.add(komi)
        states, _, result, final = _replayed(sgf, komi)
        score = final.final_score()
        assert result == (f"B+{score:.1f}" if score > 0 else f"W+{-score:.1f}")
        winner = BLACK if score > 0 else WHITE
        for record, state in zip(chunk_parser.parse_chunk(_chunk_of(sgf)), states):
            assert record.winner_is_to_move == (state.to_move == winner)
    assert len(komis) > 1


# ---- checked resignation -----------------------------------------------------------------------


def test_resignation_waits_for_enough_games_with_few_false_resignations(tmp_path):
    from leelaz.selfplay.resign import resign_allowed
    folder = str(tmp_path)
    losing_white = [0.5] * 92 + [0.5, 0.01] * 10  # White (odd moves) falls under 5% ...
    for i in range(19):  # ... and White lost: right resignations
        _debug_game(folder, f"{i:06d}-aaaaaaaa", 0, losing_white, "B+Resign")
    assert resign_allowed([folder], 5)[0] is False  # 19 games: too few
    _debug_game(folder, "000019-aaaaaaaa", 0, losing_white, "B+Resign")
    allowed, why = resign_allowed([folder], 5)
    assert allowed and why.startswith("0.0% false resignations in 20 no-resign games")
    _debug_game(folder, "000020-aaaaaaaa", 0, losing_white, "W+3.5")  # 1 of 21 wrong: 4.8%
    assert resign_allowed([folder], 5)[0] is True
    _debug_game(folder, "000021-aaaaaaaa", 0, losing_white, "W+3.5")  # 2 of 22: 9.1%
    allowed, why = resign_allowed([folder], 5)
    assert not allowed and "9.1% false resignations in 22" in why
    assert resign_allowed([folder], 1)[0] is True  # never under 1%: no resignation at all
    _debug_game(folder, "000022-aaaaaaaa", 5, losing_white, "W+3.5")  # could resign: no evidence
    assert "in 22 no-resign games" in resign_allowed([folder], 5)[1]


def test_checked_resignation_plays_every_game_out_until_allowed(tmp_path, random_weights):
    out = tmp_path / "checked"
    play_selfplay(random_weights(1, 8), str(out), 3, visits=4, parallel=3, seed=2,
                  cpu_only=True, progress=False, resignpct=50, no_resign_share=0.0,
                  max_moves=120, checked_resign=True)
    for sgf in _sgfs(out):
        text = open(sgf).read()
        assert " -r 0 " in text and "Resign" not in text
    # the same without the check resigns (a random network at 50%: soon after move 90)
    plain = tmp_path / "plain"
    play_selfplay(random_weights(1, 8), str(plain), 3, visits=4, parallel=3, seed=2,
                  cpu_only=True, progress=False, resignpct=50, no_resign_share=0.0,
                  max_moves=120)
    assert any("Resign" in open(s).read() for s in _sgfs(plain))


# ---- bad values ------------------------------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["--full-share", "0"], "--full-share must be above 0 and at most 1, not 0"),
    (["--full-share", "1.5"], "--full-share must be above 0 and at most 1, not 1.5"),
    (["--full-share", "many"], "--full-share must be a number, not 'many'"),
    (["--full-share", "0.25", "--cheap-visits", "16"], "--cheap-visits 16 must be below"),
    (["--full-share", "0.25", "-v", "0"], "--full-share below 1 needs a visit limit"),
    (["--cheap-visits", "2.5"], "--cheap-visits must be a whole number, not '2.5'"),
    (["--cheap-visits", "-1"], "--cheap-visits must be at least 1, not -1"),
    (["--forced-playouts", "-2"], "--forced-playouts must be 0 (off) or more, not -2"),
    (["--forced-playouts", "nan"], "--forced-playouts must be a finite number, not 'nan'"),
    (["--komi-spread", "-1"], "--komi-spread must be 0 to 60 points, not -1"),
    (["--komi-spread", "1e9"], "--komi-spread must be 0 to 60 points, not 1e+09"),
])
def test_bad_values_of_the_new_options_are_one_line(tmp_path, random_weights, args, words):
    out = tmp_path / "bad"
    done = subprocess.run([sys.executable, "-m", "leelaz", "selfplay", "--games", "1",
                           "--out", str(out), "-w", random_weights(1, 8), "-v", "16",
                           "--cpu-only", "-q", *args],
                          capture_output=True, text=True, env=ENV, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("ERROR: ") and words in lines[0], lines[0]
    assert not out.exists()
