"""play_match (the gating match, games batched in one process) with the lz-gate settings.

The shipped network against itself must not be promoted (no decision, or H0, within the cap);
against a random network it must pass H1 as soon as the server's rule allows (101 games).
To keep 101 games cheap on two cores, the random network's policy bias on pass is +50, so it
passes at every move, and games stop after 10 moves, where Tromp-Taylor scores them: the
shipped net's few stones own the board. The match, colours, scoring and SPRT are the real ones.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest

from paths import REPO
from leelaz.backends.random_weights import random_tensors
from leelaz.backends.weights_writer import write_weights
from leelaz.selfplay import sprt
from leelaz.selfplay.network_match import a_is_black, play_match, sequential_decision, tally
from leelaz.selfplay.runner import SelfplayError
from leelaz.tools import run_verb

SHIPPED = str(REPO / "weights" / "leelaz-6x128.txt.gz")


#: Index of the policy FC bias among a 1-block network's tensors (file order): input conv (4),
#: the block's two convs (8), the policy conv (4), the policy FC weights, then its bias.
POLICY_FC_BIAS = 4 + 8 + 4 + 1


@pytest.fixture(scope="module")
def passing_net(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("nets") / "passer-1x8.txt")
    tensors = random_tensors(1, 8, 7)
    assert tensors[POLICY_FC_BIAS].shape == (362,)
    tensors[POLICY_FC_BIAS][361] = 50.0  # pass, always
    write_weights(path, tensors, 1)
    return path


def _result_json(folder):
    with open(os.path.join(folder, "result.json")) as f:
        return json.load(f)


def test_shipped_net_against_itself_is_not_promoted(tmp_path, capsys):
    """Through the verb: `leelaz match --preset lz-gate --sprt ... --json`."""
    out = str(tmp_path / "self")
    code = run_verb(["match", "--preset", "lz-gate", "--weights1", SHIPPED, "--weights2",
                     SHIPPED, "--out", out, "--games", "4", "--sprt", "-v", "2", "--parallel",
                     "4", "-s", "1", "--cpu-only", "--max-moves", "40", "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["games"] == 4 and printed["wins"] + printed["losses"] == 4
    assert printed["draws"] == 0
    assert printed["decision"] in (None, sprt.H0)
    saved = _result_json(out)
    assert saved["games"] == 4 and saved["wins"] == printed["wins"]
    assert saved["decision"] == printed["decision"]
    assert saved["llr"] == pytest.approx(sprt.llr(printed["wins"], printed["losses"]))
    result = play_match(SHIPPED, SHIPPED, out, max_games=4, visits=2, parallel=4, seed=1,
                        cpu_only=True, progress=False, max_moves=40)  # nothing left to play
    assert (result.wins, result.losses) == (printed["wins"], printed["losses"])
    # colours alternate: A is Black in games 0 and 2
    sgfs = sorted(n for n in os.listdir(out) if n.endswith(".sgf"))
    assert [a_is_black(int(n.split("-")[0])) for n in sgfs] == [True, False, True, False]
    assert tally(out) == (result.wins, result.losses)
    assert result.moves == 0  # the rerun resumed: the cap was reached, nothing was played


def test_a_failed_start_does_not_bind_the_folder(tmp_path, passing_net, capsys):
    """A candidate that does not load: one line, and no match.json, so once the user fixes
    the file the same command plays the match instead of refusing the folder."""
    import hashlib
    import shutil

    out, candidate = tmp_path / "gate", tmp_path / "candidate.txt"
    candidate.write_text("2\nnot a network\n")
    argv = ["match", "--preset", "lz-gate", "--weights1", str(candidate), "--weights2",
            passing_net, "--out", str(out), "--games", "2", "-v", "1", "--parallel", "2",
            "--cpu-only", "--max-moves", "4"]
    assert run_verb(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(candidate) in err[0], err
    assert not (out / "match.json").exists()
    shutil.copy(passing_net, candidate)
    assert run_verb(argv) == 0, capsys.readouterr().err
    identity = json.loads((out / "match.json").read_text())
    assert identity["a_sha256"] == hashlib.sha256(candidate.read_bytes()).hexdigest()
    # Each game's line names the network and the colour it won with, the SGF result's
    # letter being the colour.
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("game ")]
    assert len(lines) == 2
    for line in lines:
        found = re.search(r"network ([AB]) won with (Black|White) \(([BW])\+", line)
        assert found and found.group(2)[0] == found.group(3), line


def test_the_game_line_names_network_and_colour():
    from leelaz.game.coords import BLACK, WHITE
    from leelaz.selfplay.network_match import game_line

    assert game_line(False, WHITE, "W+104.5") == "network B won with White (W+104.5)"
    assert game_line(True, BLACK, "B+R") == "network A won with Black (B+R)"


def test_a_folder_of_another_match_is_refused(tmp_path, passing_net):
    out = str(tmp_path / "m")
    play_match(SHIPPED, passing_net, out, max_games=1, visits=2, parallel=1, seed=1,
               cpu_only=True, progress=False, max_moves=4)
    with pytest.raises(SelfplayError, match="another match"):
        play_match(passing_net, SHIPPED, out, max_games=2, visits=2, parallel=1,
                   cpu_only=True, progress=False, max_moves=4)


def test_shipped_net_against_a_random_net_passes_h1(tmp_path, passing_net):
    out = str(tmp_path / "gate")
    result = play_match(SHIPPED, passing_net, out, max_games=400, visits=1, parallel=2,
                        seed=2, cpu_only=True, progress=False, max_moves=10)
    assert result.decision == sprt.H1
    # the server passes on the LLR only after more than 100 games: read in index order, an
    # unbroken run of wins decides at game 101; the games in flight then finish and are kept
    assert (result.games, result.wins) == (101, 101)
    assert _result_json(out)["decision"] == "H1"
    sgfs = [n for n in os.listdir(out) if n.endswith(".sgf")]
    assert len(sgfs) == result.played <= 101 + 2
    # the shipped net won with either colour
    for n in sgfs:
        text = open(os.path.join(out, n)).read()
        assert ("RE[B+" in text) == a_is_black(int(n.split("-")[0])), text


# ---- one match played by several processes (the Zero loop's gating match) -----------------

def test_shards_deal_every_game_once_with_both_colours_equally():
    from leelaz.selfplay.network_match import shard_indices

    for shards in range(1, 6):
        for max_games in (1, 2, 7, 8, 20, 250, 251):
            sets = [shard_indices(s, shards, max_games) for s in range(shards)]
            everything = [i for indices in sets for i in indices]
            assert sorted(everything) == list(range(max_games))  # each game exactly once
            for indices in sets:
                black = sum(1 for i in indices if i % 2 == 0)  # A is Black in even games
                white = len(indices) - black
                if max_games % 2 == 0:
                    assert black == white, (shards, max_games, indices)
                else:  # the last game has no partner
                    assert 0 <= black - white <= 1
            sizes = [len(indices) for indices in sets]
            assert max(sizes) - min(sizes) <= 2  # the pairs are dealt evenly


def _net(path, seed, pass_bias=None):
    tensors = random_tensors(1, 8, seed)
    if pass_bias is not None:
        tensors[POLICY_FC_BIAS][361] = pass_bias
    write_weights(str(path), tensors, 1)
    return str(path)


def _play_shards(a, b, out, shards, **kwargs):
    """The shards as concurrent processes (as the loop's jobs run), each as `play_match`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = []
    for shard in range(shards):
        code = ("import sys, json; from leelaz.selfplay.network_match import play_match; "
                f"play_match({a!r}, {b!r}, {out!r}, shard=({shard}, {shards}), "
                f"cpu_only=True, progress=False, **{kwargs!r})")
        procs.append(subprocess.Popen([sys.executable, "-c", code], env=env,
                                      stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err


def _recount(folder):
    """{index: (token, A won)} from the SGFs, read here: name, RE[] and the colour rule."""
    games = {}
    for name in os.listdir(folder):
        if not name.endswith(".sgf") or name.startswith("."):
            continue
        index, token = int(name.split("-")[0]), name.split("-")[1].split(".")[0]
        text = open(os.path.join(folder, name)).read()
        black_won = "RE[B+" in text
        assert black_won or "RE[W+" in text, name
        assert index not in games, f"game {index} twice"
        games[index] = (token, black_won == (index % 2 == 0))
    return games


def test_three_shards_play_one_match_into_one_folder(tmp_path):
    a, b = _net(tmp_path / "a.txt", 3), _net(tmp_path / "b.txt", 4)
    out = str(tmp_path / "m")
    # 8 games can never decide the SPRT (no 11 straight losses): every game is played.
    _play_shards(a, b, out, 3, max_games=8, visits=2, parallel=2, seed=5, max_moves=20)
    games = _recount(out)
    assert sorted(games) == list(range(8))
    by_token = {}
    for index, (token, _) in games.items():
        by_token.setdefault(token, set()).add(index)
    # each process played one shard: pairs of games dealt round robin to the three
    assert sorted(map(sorted, by_token.values())) == [[0, 1, 6, 7], [2, 3], [4, 5]]
    wins = sum(1 for _, a_won in games.values() if a_won)
    saved = _result_json(out)
    assert (saved["wins"], saved["losses"], saved["games"]) == (wins, 8 - wins, 8)
    assert saved["llr"] == pytest.approx(sprt.llr(wins, 8 - wins))
    # a rerun of any shard finds its games there and plays none
    again = play_match(a, b, out, max_games=8, visits=2, parallel=2, seed=5, cpu_only=True,
                       progress=False, max_moves=20, shard=(1, 3))
    assert (again.wins, again.games, again.moves) == (wins, 8, 0)


def test_the_sprt_stop_is_the_whole_match(tmp_path):
    """A passes at every move, B never does: B's stones own the board when the game is scored
    after 10 moves, so A loses every game and the SPRT says H0 after a dozen. Three shards of
    two games at once must stop together, the decision falling at the same game in index
    order as a one-process match's: a few games beyond it (those in flight, and those a shard
    started while an earlier game was still out), where shards deciding alone would play
    until each had a dozen (33 or more)."""
    a = _net(tmp_path / "passer.txt", 7, pass_bias=50.0)
    b = _net(tmp_path / "player.txt", 8, pass_bias=-50.0)
    out = str(tmp_path / "m")
    decided_at = next(n for n in range(1, 400) if sprt.decide(0, n) is not None)
    _play_shards(a, b, out, 3, max_games=60, visits=1, parallel=2, seed=6, max_moves=10,
                 resignpct=0)
    games = _recount(out)
    assert all(not a_won for _, a_won in games.values())
    assert decided_at <= len(games) <= decided_at + 2 * 3 * 2, sorted(games)
    assert set(range(decided_at)) <= set(games)
    saved = _result_json(out)
    assert saved["decision"] == sprt.H0
    assert (saved["wins"], saved["losses"], saved["games"]) == (0, decided_at, decided_at)
    assert saved["played"] == len(games)
    for index in games:  # A (the passer) placed no stone with either colour
        text = open(next(os.path.join(out, n) for n in os.listdir(out)
                         if n.startswith(f"{index:06d}-") and n.endswith(".sgf"))).read()
        own = "B" if index % 2 == 0 else "W"
        placed = [m for m in re.findall(rf";{own}\[([a-s]{{2}})\]", text)]
        assert not placed, (index, own, text)


def _independent_llr(wins: int, losses: int) -> float:
    """The server's LLR (classes/utilities.js), written out here: no win or loss counts as 1."""
    w, l = max(wins, 1), max(losses, 1)
    n, s = w + l, max(wins, 1) / (max(wins, 1) + max(losses, 1))
    s0, s1 = 0.5, 1 / (1 + 10 ** (-35 / 400))
    return (s1 - s0) * (2 * s - s0 - s1) / (2 * s * (1 - s) / n)


def test_sequential_decision_reads_games_in_index_order():
    """The decision is the SPRT's along games 0, 1, 2, ... whatever order they finished in:
    fast losses at high indices decide nothing while an earlier game is out."""
    low = math.log(0.05 / 0.95)
    first_h0 = next(n for n in range(1, 100) if _independent_llr(0, n) < low)
    losses = {i: False for i in range(40)}
    assert sequential_decision(losses) == (0, first_h0, sprt.H0)
    # the same losses with game 3 still in flight: only 0..2 count
    holed = {i: a for i, a in losses.items() if i != 3}
    assert sequential_decision(holed) == (0, 3, None)
    # wins first, then the losses that finished early: no decision on their count
    mixed = {i: True for i in range(6)} | {i: False for i in range(7, 40)}
    assert sequential_decision(mixed) == (6, 0, None)
    # a game without a result is skipped, not a hole
    assert sequential_decision({0: None, 1: False}) == (0, 1, None)


def _moves(folder):
    """{index: the SGF's moves} of a match folder, read here."""
    out = {}
    for name in os.listdir(folder):
        if name.endswith(".sgf") and not name.startswith("."):
            text = open(os.path.join(folder, name)).read()
            out[int(name.split("-")[0])] = re.findall(r";[BW]\[[a-s]*\]", text)
    return out


def test_the_verb_plays_a_match_in_several_processes_as_one(tmp_path, capsys):
    """`--preset lz-gate --jobs 3`: three spawned processes (one per GPU on a machine of
    several) play one match into one folder: the same games, move for move, and the same
    result as one process, each game once, the shards dealt to different processes."""
    a, b = _net(tmp_path / "a.txt", 3), _net(tmp_path / "b.txt", 4)
    common = ["match", "--preset", "lz-gate", "--weights1", a, "--weights2", b, "--games",
              "8", "-v", "2", "--parallel", "2", "-s", "5", "--cpu-only", "--max-moves", "20",
              "--json"]
    results = {}
    for jobs in (1, 3):
        out = str(tmp_path / f"jobs{jobs}")
        assert run_verb(common + ["--out", out, "--jobs", str(jobs)]) == 0
        results[jobs] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert _moves(str(tmp_path / "jobs3")) == _moves(str(tmp_path / "jobs1"))
    assert sorted(_moves(str(tmp_path / "jobs3"))) == list(range(8))
    for key in ("wins", "losses", "games", "decision"):
        assert results[3][key] == results[1][key], key
    tokens = {token for token, _ in _recount(str(tmp_path / "jobs3")).values()}
    assert len(tokens) == 3  # three writers


def test_a_bad_network_with_several_processes_is_one_line(tmp_path, passing_net, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("2\nnot a network\n")
    code = run_verb(["match", "--preset", "lz-gate", "--weights1", str(bad), "--weights2",
                     passing_net, "--out", str(tmp_path / "m"), "--games", "4", "-v", "1",
                     "--cpu-only", "--jobs", "2"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0], err
