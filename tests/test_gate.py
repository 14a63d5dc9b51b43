"""The gate's rules (`leelaz zero --gate`): decisions on made-up scores, a tiny loop gated by a
win rate (its decision recounted from the match's SGFs), and bad values.

The expected decisions are worked out here from the rules as the sources state them: Leela
Zero's server never passes a candidate before game 101 and stops a hopeless one at once;
KataGo's gatekeeper promotes at a score of at least P of N games (ties promote), deciding as
soon as the remaining games cannot change it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leelaz.zero.gate import GateError, GateRule, parse
from conftest import requires
from test_zero import TINY, record, zero

UNGATED = [a for a in TINY if a not in ("--gate", "lz")]  # the tiny run without its rule


def test_rules_parse():
    assert parse("lz") == GateRule("lz")
    assert parse("none") == GateRule("none")
    assert parse("winrate:0.5:200") == GateRule("winrate", 0.5, 200)
    assert parse(" WINRATE:.55:10 ") == GateRule("winrate", 0.55, 10)
    assert parse("winrate:1:1").text == "winrate:1:1"
    for bad in ("", "sprt", "winrate", "winrate:0.5", "winrate:0:10", "winrate:1.5:10",
                "winrate:0.5:0", "winrate:-0.5:10", "winrate:0.5:10:3", "winrate:a:b"):
        with pytest.raises(GateError):
            parse(bad)


def test_winrate_decides_at_p_of_n_and_as_soon_as_it_is_settled():
    rule = parse("winrate:0.5:10")  # needs a score of 5 of 10
    assert rule.decide(5, 5) == "H1"  # a tie at P promotes
    assert rule.decide(4, 6) == "H0"
    assert rule.decide(4, 4, 2) == "H1"  # draws count half: 5 of 10
    assert rule.decide(4, 5, 1) == "H0"  # 4.5 of 10
    assert rule.decide(5, 0) == "H1"  # 5 already: nothing can take it back
    assert rule.decide(4, 5) is None  # 4 + the 1 game left can still reach 5
    assert rule.decide(2, 5) is None  # 2 + 3 left = 5
    assert rule.decide(1, 6) == "H0"  # 1 + 3 left < 5
    assert rule.decide(0, 0) is None
    strict = parse("winrate:0.55:20")  # 11 of 20
    assert strict.decide(10, 10) == "H0" and strict.decide(11, 9) == "H1"
    assert strict.decide(11, 0) == "H1" and strict.decide(10, 0) is None
    assert (rule.match_games(400), strict.match_games(400)) == (10, 20)
    assert not rule.sequential and rule.plays_match


def test_none_promotes_without_games_and_lz_is_the_servers_sprt():
    none = parse("none")
    assert none.decide(0, 0) == "H1" and not none.plays_match
    lz = parse("lz")
    assert lz.sequential and lz.match_games(400) == 400 and lz.match_games(6) == 6
    assert lz.decide(30, 0) is None  # the server passes nobody before game 101
    assert lz.decide(0, 30) == "H0"  # but stops a hopeless candidate at once
    assert lz.decide(220, 180) == "H1"  # 55 % of 400
    assert lz.decide(219, 181) == "H0"  # 400 games and short of 55 %


def _recount(folder: Path) -> tuple[int, int]:
    """The candidate's (A's) wins and losses from the match's SGFs: A has Black in even games."""
    wins = losses = 0
    for sgf in folder.glob("[0-9]*.sgf"):
        index, text = int(sgf.name.split("-")[0]), sgf.read_text()
        black_won = "RE[B+" in text
        assert black_won or "RE[W+" in text, sgf
        if black_won == (index % 2 == 0):
            wins += 1
        else:
            losses += 1
    return wins, losses


def test_loop_gated_by_win_rate_plays_n_games_and_decides_on_their_score(tmp_path):
    requires("torch")  # the run trains
    run = tmp_path / "run"
    args = UNGATED
    done = zero(run, *args, "--gate", "winrate:0.5:4", "--games-per-gen", "2",
                "--generations", "1")
    assert done.returncode == 0, done.stderr
    gate = record(run, 1)["gate"]
    assert gate["rule"] == "winrate:0.5:4" and gate["gated"] and gate["max_games"] == 4
    wins, losses = _recount(run / gate["dir"])
    assert wins + losses == 4  # a fixed-length match: no SPRT stop
    assert (gate["wins"], gate["losses"]) == (wins, losses)
    promoted = wins >= 2
    assert gate["decision"] == ("H1" if promoted else "H0")
    assert record(run, 1)["promoted"] is promoted
    best = (run / "best").read_text().strip()
    assert (best == record(run, 1)["train"]["candidate"]) is promoted


def test_loop_without_gate_promotes_without_a_match(tmp_path):
    requires("torch")  # the run trains
    run = tmp_path / "run"
    args = UNGATED
    done = zero(run, *args, "--gate", "none", "--games-per-gen", "2", "--generations", "1")
    assert done.returncode == 0, done.stderr
    first = record(run, 1)
    assert first["gate"]["rule"] == "none" and not first["gate"]["gated"]
    assert first["promoted"] is True
    assert not (run / "matches").exists() or not any((run / "matches").iterdir())


@pytest.mark.parametrize("args,words", [
    (["--gate", "sprt"], ["--gate", "sprt"]),
    (["--gate", "winrate:2:10"], ["--gate", "winrate:2:10"]),
    (["--gate", "winrate:0.5"], ["--gate"]),
    (["--gate", "lz", "--no-gate"], ["--no-gate", "--gate"]),
])
def test_bad_gate_is_one_line_and_exit_1_before_the_folder_is_made(tmp_path, args, words):
    run = tmp_path / "run"
    result = zero(run, *UNGATED, *args, "--generations", "0")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR:"), result.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in result.stderr
    assert not run.exists()
