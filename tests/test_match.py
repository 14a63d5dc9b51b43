"""leelaz match (leelaz/tools/match.py): statistics by hand, and short matches between scripted fake engines
(resigning, passing, crashing, illegal moves)."""

from __future__ import annotations

import math
import textwrap

import pytest

from leelaz.tools import match

FAKE = textwrap.dedent('''
    import sys
    behaviour = sys.argv[1]
    moves = iter(["D4", "Q16", "D16", "Q4", "K10"] * 10)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            print("=\\n", flush=True)
            break
        if cmd[0] == "genmove":
            if behaviour == "crash":
                sys.exit(3)
            answer = {"resign": "resign", "pass": "pass", "same": "D4"}.get(behaviour)
            print("= " + (answer or next(moves)) + "\\n", flush=True)
        elif cmd[0] == "final_score":
            print("= B+1.5\\n", flush=True)
        else:
            print("= \\n", flush=True)
''')


def run(fake, tmp_path, one, two, games=2, extra=()):
    sgf = tmp_path / "sgf"
    argv = ["--engine1", fake(one), "--engine2", fake(two), "--games", str(games),
            "--sgf-dir", str(sgf), "--timeout", "10", "--move-timeout", "10", *extra]
    match.main(argv)
    return sorted(p.read_text() for p in sgf.glob("game-*.sgf"))


def test_elo_and_interval_by_hand():
    assert match.elo(0.5) == 0.0
    assert match.elo(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    p, lo, hi = match.score_interval(30, 40)
    assert p == 0.75
    # Wilson's interval: the roots in q of (q - p)^2 = z^2 q (1 - q) / n.
    z2, n = 1.96 ** 2, 40
    a, b, c = 1 + z2 / n, -(2 * 0.75 + z2 / n), 0.75 ** 2
    roots = sorted((-b + s * math.sqrt(b * b - 4 * a * c)) / (2 * a) for s in (-1, 1))
    assert (lo, hi) == pytest.approx(roots)


def test_sprt_llr_and_bounds():
    low, high = match.sprt_bounds(0.05, 0.05)
    assert (low, high) == pytest.approx((-2.944439, 2.944439))
    p1 = 1 / (1 + 10 ** (-35 / 400))  # 0.55030
    assert match.sprt_llr(1, 0) == pytest.approx(math.log(p1 / 0.5))
    assert match.sprt_llr(0, 1) == pytest.approx(math.log((1 - p1) / 0.5))
    # 60 straight wins are decisive, a 50/50 record leans to H0.
    assert match.sprt_llr(60, 0) > high
    assert match.sprt_llr(100, 100) < 0


def test_resigning_engine_loses_with_either_colour(fake, tmp_path, capsys):
    games = run(fake, tmp_path, "play", "resign")
    out = capsys.readouterr().out
    assert "engine1: 2/2 = 100.0%" in out
    assert any("RE[W+Resign]" in g for g in games) and any("RE[B+Resign]" in g for g in games)


def test_two_passes_are_scored_by_tromp_taylor(fake, tmp_path, capsys):
    games = run(fake, tmp_path, "pass", "pass", games=1)
    # Empty board, komi 7.5: White wins by 7.5.
    assert "RE[W+7.5]" in games[0] and ";B[];W[]" in games[0]


def test_engine1_can_be_the_referee(fake, tmp_path):
    games = run(fake, tmp_path, "pass", "pass", games=1, extra=("--referee", "engine1"))
    assert "RE[B+1.5]" in games[0]


def test_crash_and_illegal_moves_forfeit(fake, tmp_path, capsys):
    games = run(fake, tmp_path, "play", "crash")
    assert "engine1: 2/2" in capsys.readouterr().out
    assert all("+Forfeit" in g for g in games)
    games = run(fake, tmp_path, "same", "same", games=1)  # White repeats D4: occupied
    assert "RE[B+Forfeit]" in games[0] and "illegal D4" in games[0]


def test_parallel_jobs_play_every_game_with_alternating_colours(fake, tmp_path, capsys):
    # "play" never resigns against "resign": engine 1 wins all four, whatever its colour.
    games = run(fake, tmp_path, "play", "resign", games=4, extra=("--jobs", "2"))
    out = capsys.readouterr().out
    assert len(games) == 4
    names = sorted(p.name for p in (tmp_path / "sgf").glob("game-*.sgf"))
    assert names == ["game-001.sgf", "game-002.sgf", "game-003.sgf", "game-004.sgf"]
    for i, name in enumerate(names):
        text = (tmp_path / "sgf" / name).read_text()
        black = "engine1" if i % 2 == 0 else "engine2"
        assert f"PB[{black}]" in text
        assert ("RE[B+Resign]" if i % 2 == 0 else "RE[W+Resign]") in text
    assert out.count("game ") == 4
    assert out.strip().splitlines()[-1].startswith("engine1: 4/4 = 100.0%")


def test_first_game_continues_numbering_and_colours(fake, tmp_path, capsys):
    run(fake, tmp_path, "play", "resign", games=2, extra=("--first-game", "5"))
    sgf = tmp_path / "sgf"
    assert sorted(p.name for p in sgf.glob("game-*.sgf")) == ["game-006.sgf", "game-007.sgf"]
    assert "PB[engine2]" in (sgf / "game-006.sgf").read_text()  # game 5 is odd: engine 2 Black
    assert "PB[engine1]" in (sgf / "game-007.sgf").read_text()
    assert "game 6:" in capsys.readouterr().out


def test_tally_of_two_runs_equals_one_match(fake, tmp_path, capsys):
    # Engine 1 loses by crashing in one run and wins by resignation in the other; played as
    # one match the record is 2/4 with two crash forfeits for engine 1.
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    run(fake, first, "crash", "play", games=2, extra=("--jobs", "2"))
    capsys.readouterr()
    run(fake, second, "play", "resign", games=2, extra=("--first-game", "2", "--sprt"))
    run_summary = capsys.readouterr().out.strip().splitlines()
    assert run_summary[-1].startswith("engine1: 2/2")
    match.main(["--tally", str(first / "sgf"), str(second / "sgf"), "--sprt"])
    out = capsys.readouterr().out.strip().splitlines()
    expected = match.summary("engine1", 2, 4, True)
    assert expected.startswith("engine1: 2/4 = 50.0%")
    assert out[-2] == expected
    assert out[-1] == "forfeits: engine1 2 (crash 2); engine2 0"


def test_tally_equals_the_runs_final_summary(fake, tmp_path, capsys):
    # "play" repeats D4 after 5 moves each and forfeits; "pass" never does.
    run(fake, tmp_path, "play", "pass", games=3, extra=("--jobs", "3", "--sprt"))
    played = capsys.readouterr().out.strip().splitlines()
    assert played[-1] == "forfeits: engine1 3 (illegal 3); engine2 0"
    match.main(["--tally", str(tmp_path / "sgf"), "--sprt"])
    tallied = capsys.readouterr().out.strip().splitlines()
    assert tallied[-2:] == played[-2:]
    assert tallied[-2].startswith("engine1: 0/3")


def test_time_limit_starts_no_game_after_it(fake, tmp_path, capsys):
    games = run(fake, tmp_path, "play", "resign", games=4, extra=("--time-limit", "0.001"))
    assert len(games) <= 1
