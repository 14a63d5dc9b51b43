"""`leelaz match` for handicap and margin measurements: --handicap N (fixed_handicap sent to
every engine, White first, HA/AB in the SGF, the built-in referee counting komi + N as Leela
Zero does), --engine1-colour, and the mean margin line. Scripted fake engines; scores worked
out by hand in the tests."""

from __future__ import annotations

import textwrap

from leelaz.tools import match

FAKE = textwrap.dedent('''
    import sys
    behaviour = sys.argv[1]
    stones = {"2": "D4 Q16", "3": "D4 Q16 D16"}
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            print("=\\n", flush=True)
            break
        if cmd[0] == "fixed_handicap":
            answer = "A1 B2" if behaviour == "wrong" else stones[cmd[1]]
            print("= " + answer + "\\n", flush=True)
        elif cmd[0] == "genmove":
            print("= pass\\n", flush=True)
        else:
            print("= \\n", flush=True)
''')


def run(fake, tmp_path, one, two, games, extra):
    sgf = tmp_path / "sgf"
    argv = ["--engine1", fake(one), "--engine2", fake(two), "--games", str(games),
            "--sgf-dir", str(sgf), "--timeout", "10", "--move-timeout", "10", *extra]
    code = match.main(argv)
    return code, sorted(p.read_text() for p in sgf.glob("game-*.sgf"))


def test_handicap_games_with_engine1_always_white(fake, tmp_path, capsys):
    code, games = run(fake, tmp_path, "pass", "pass", 2,
                      ["--handicap", "3", "--komi", "0.5", "--engine1-colour", "white"])
    out = capsys.readouterr().out
    assert len(games) == 2
    for g in games:
        assert "PB[engine2]PW[engine1]" in g and "HA[3]AB[pd][dp][dd]" in g
        assert ";W[];B[]" in g  # White moves first
        # Black's 3 stones own all 361 points; White gets komi 0.5 + 3 stones.
        assert "RE[B+357.5]" in g
    assert "engine1: 0/2" in out
    assert "margin of engine1: -357.5 points" in out and "over 2 counted games" in out


def test_an_engine_that_places_other_stones_forfeits(fake, tmp_path, capsys):
    code, games = run(fake, tmp_path, "wrong", "pass", 1,
                      ["--handicap", "2", "--engine1-colour", "black"])
    assert "RE[W+Forfeit]" in games[0] and "fixed_handicap 2" in games[0]


def test_handicap_one_is_refused(fake, capsys):
    code = match.main(["--engine1", fake("pass"), "--engine2", fake("pass"), "--handicap", "1"])
    assert code != 0 and "--handicap must be 2..9" in capsys.readouterr().err


def test_margin_line_by_hand():
    line = match.margin_line("a", [10.0, -2.0, 4.0], 1)
    # mean 4, sample sd sqrt(((6)^2 + (-6)^2 + 0) / 2) = 6, half width 1.96 * 6 / sqrt(3)
    assert line == "margin of a: +4.0 points (95% CI -2.8..+10.8) over 3 counted games; " \
                   "1 ended by resignation"
