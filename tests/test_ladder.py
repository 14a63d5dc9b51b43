"""The fixed ladder (`leelaz zero DIR --ladder`): its Elo fit against computations of the test's
own, a ladder killed with SIGKILL that resumes without losing or repeating a game, GNU Go rungs
played by GNU Go, and bad input.

The fit's model is stated in leelaz/zero/ladder.py: Bradley-Terry by maximum likelihood, one
virtual drawn game per pair, the anchor at 0, a 95 % Wald interval from the likelihood's
curvature. The test computes the same quantities by other means: a closed form for two
players, and for many the minorisation-maximisation iteration of Hunter (2004, "MM algorithms
for generalized Bradley-Terry models") with the curvature taken by finite differences.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from leelaz.zero.ladder import PairResult, fit
from conftest import requires
from test_zero import TINY, ZERO, _env, zero

LADDER = ["--ladder", "--ladder-visits", "2", "--max-moves", "40", "--cpu-only",
          "--parallel", "2", "--ladder-jobs", "2", "--ladder-every", "2",
          "--ladder-random-moves", "4"]


# ---- the fit, against independent computations ---------------------------------------------

def test_two_players_closed_form():
    """One pair: the maximum of the likelihood with one virtual draw is the score share
    p = (W + D/2 + 1/2) / (N + 1); its curvature gives the interval
    1.96 / sqrt((N + 1) p (1 - p)) in log-odds."""
    for wins, losses, draws in ((7, 3, 0), (10, 0, 0), (0, 4, 0), (13, 20, 3), (50, 50, 0)):
        ratings = fit([PairResult("net", "anchor", wins, losses, draws)], "anchor")
        n = wins + losses + draws + 1
        p = (wins + draws / 2 + 0.5) / n
        elo = 400 * math.log10(p / (1 - p))
        half = 1.959964 / math.sqrt(n * p * (1 - p)) * 400 / math.log(10)
        assert ratings["anchor"].elo == 0 and ratings["anchor"].half_width == 0
        assert ratings["net"].elo == pytest.approx(elo, abs=1e-6)
        assert ratings["net"].half_width == pytest.approx(half, rel=1e-5)
        assert ratings["net"].games == n - 1


def _mm_fit(pairs: dict[tuple[str, str], tuple[float, float]], anchor: str):
    """Hunter's MM iteration for Bradley-Terry: gamma_i <- W_i / sum_j n_ij / (gamma_i +
    gamma_j), W_i the score of i (with the pair's virtual draw: half a point each way, one
    game), scaled so that the anchor's gamma is 1. Then Elo = 400 log10(gamma)."""
    cells = {}
    for (a, b), (score_a, games) in pairs.items():
        cells[(a, b)] = (score_a + 0.5, games + 1.0)
    players = sorted({p for ab in cells for p in ab})
    gamma = {p: 1.0 for p in players}
    for _ in range(20000):
        new = {}
        for i in players:
            won = denominator = 0.0
            for (a, b), (s, n) in cells.items():
                if i == a:
                    won += s
                    denominator += n / (gamma[a] + gamma[b])
                elif i == b:
                    won += n - s
                    denominator += n / (gamma[a] + gamma[b])
            new[i] = won / denominator
        scale = new[anchor]
        new = {p: g / scale for p, g in new.items()}
        change = max(abs(math.log(new[p] / gamma[p])) for p in players)
        gamma = new
        if change < 1e-13:
            break
    elo = {p: 400 * math.log10(g) for p, g in gamma.items()}

    def loglik(values: dict[str, float]) -> float:
        total = 0.0
        for (a, b), (s, n) in cells.items():
            p = 1 / (1 + 10 ** ((values[b] - values[a]) / 400))
            total += s * math.log(p) + (n - s) * math.log(1 - p)
        return total

    free = [p for p in players if p != anchor]
    h = 1.0  # Elo
    hessian = np.zeros((len(free), len(free)))
    for x, px in enumerate(free):
        for y, py in enumerate(free):
            def at(dx, dy):
                values = dict(elo)
                values[px] += dx
                values[py] += dy
                return loglik(values)
            hessian[x, y] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    cov = np.linalg.inv(-hessian)
    half = {p: 1.959964 * math.sqrt(cov[x, x]) for x, p in enumerate(free)}
    half[anchor] = 0.0
    return elo, half


def test_many_players_against_mm_and_finite_differences():
    """Made-up results of a ladder: three networks, two GNU Go levels, a shut-out among them;
    the anchor (gnugo-l10) is fixed at 0."""
    results = [PairResult("n1", "gnugo-l1", 2, 8), PairResult("n1", "gnugo-l10", 0, 10),
               PairResult("n2", "n1", 9, 3), PairResult("n2", "gnugo-l1", 7, 5, 2),
               PairResult("n2", "gnugo-l10", 2, 10), PairResult("n3", "n1", 12, 0),
               PairResult("n3", "n2", 8, 4), PairResult("n3", "gnugo-l1", 11, 1),
               PairResult("n3", "gnugo-l10", 5, 7), PairResult("n2", "n1", 3, 1)]
    pairs: dict[tuple[str, str], tuple[float, float]] = {}
    for r in results:  # the same pair twice (n2-n1) adds up
        key = (r.player, r.opponent)
        score, games = pairs.get(key, (0.0, 0.0))
        pairs[key] = (score + r.wins + r.draws / 2, games + r.wins + r.losses + r.draws)
    elo, half = _mm_fit(pairs, "gnugo-l10")
    ratings = fit(results, "gnugo-l10")
    assert set(ratings) == set(elo)
    for player in elo:
        assert ratings[player].elo == pytest.approx(elo[player], abs=1e-4), player
        assert ratings[player].half_width == pytest.approx(half[player], rel=1e-3), player
    assert ratings["n3"].elo > ratings["n2"].elo > ratings["n1"].elo  # sanity of the data


def test_players_without_a_path_to_the_anchor_are_left_out():
    results = [PairResult("a", "anchor", 3, 2), PairResult("b", "c", 4, 1)]
    ratings = fit(results, "anchor")
    assert set(ratings) == {"a", "anchor"}
    assert fit([PairResult("b", "c", 4, 1)], "anchor") == {}


# ---- a real ladder on a tiny run ---------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A 1x8 run of two generations at 8 visits, every candidate promoted: three networks."""
    requires("torch")  # the run trains
    run = tmp_path_factory.mktemp("ladder") / "run"
    args = [a for a in TINY if a not in ("--gate", "lz")]
    made = zero(run, *args, "--gate", "none", "--games-per-gen", "2", "--generations", "2",
                "-v", "8")  # targets over several children
    assert made.returncode == 0, made.stderr
    return run


def _nets(run: Path) -> list[str]:
    """The start and the promoted networks, from the records (independently of the ladder)."""
    start = json.loads((run / "run.json").read_text())["start"]
    out = [start]
    for path in sorted((run / "generations").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("promoted"):
            out.append(rec["train"]["candidate"])
    return out


def _network_games(folder: Path) -> dict[int, float]:
    """Game index -> the ladder network's (A's) point, from play_match's SGFs (A is Black in
    even games); an index twice would be a duplicated game."""
    out: dict[int, float] = {}
    for sgf in folder.glob("[0-9]*.sgf"):
        index = int(sgf.name.split("-")[0])
        assert index not in out, f"game {index} twice in {folder}"
        result = re.search(r"RE\[([BW])\+", sgf.read_text())
        out[index] = 0.5 if result is None else float((result.group(1) == "B") ==
                                                      (index % 2 == 0))
    return out


def _gnugo_games(folder: Path, name: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for sgf in folder.glob("game-*.sgf"):
        number = int(sgf.name[5:-4]) - 1
        text = sgf.read_text()
        black = re.search(r"PB\[([^\]]*)\]", text).group(1)
        result = re.search(r"RE\[([BW])\+", text)
        assert name in (black, re.search(r"PW\[([^\]]*)\]", text).group(1))
        out[number] = 0.5 if result is None else float((result.group(1) == "B") ==
                                                       (black == name))
    return out


def _check_ladder(run: Path, games: int, levels: list[int]) -> dict:
    """Every pair the ladder owes has exactly games 0..games-1, and elo.json's pairs and fit
    are those of the SGFs, recounted and refitted here."""
    nets = _nets(run)
    every = 2
    refs = [n for i, n in enumerate(nets) if i == 0 or i % every == 0]
    folder = run / "ladder" / "v2-m4"
    pairs = {}
    for i, net in enumerate(nets):
        for ref in refs:
            if nets.index(ref) >= i:
                continue
            pair = folder / f"{net[:12]}-{ref[:12]}"
            points = _network_games(pair)
            settings = json.loads((pair / "match.json").read_text())
            assert (settings["visits"], settings["randomcnt"], settings["noise"]) == (2, 4, False)
            assert sorted(points) == list(range(games))
            pairs[(net, ref)] = (sum(points.values()), games)
        for level in levels:
            points = _gnugo_games(folder / f"{net[:12]}-gnugo-l{level}", f"leelaz-{net[:12]}")
            assert sorted(points) == list(range(games))
            pairs[(net, f"gnugo-l{level}")] = (sum(points.values()), games)
    data = json.loads((run / "ladder" / "elo.json").read_text())
    assert len(data["pairs"]) == len(pairs)
    for p in data["pairs"]:
        score, n = pairs[(p["player"], p["opponent"])]
        assert p["wins"] + p["draws"] / 2 == score and p["wins"] + p["losses"] + p["draws"] == n
    anchor = "gnugo-l10" if 10 in levels else nets[0]
    assert data["anchor"] == anchor
    elo, half = _mm_fit(pairs, anchor)
    for player, rating in data["ratings"].items():
        assert rating["elo"] == pytest.approx(elo[player], abs=1e-3)
        assert rating["half_width"] == pytest.approx(half[player], rel=1e-3)
    return data


def test_ladder_killed_resumes_without_losing_or_repeating_games(tiny_run, tmp_path, gnugo):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    wrapper = tmp_path / "gnugo"  # GNU Go, its command lines written down
    calls = tmp_path / "calls.txt"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nexec {gnugo} \"$@\"\n")
    wrapper.chmod(0o755)
    args = [*LADDER, "--ladder-games", "4", "--gnugo-levels", "1", "--gnugo", str(wrapper)]
    proc = subprocess.Popen(ZERO + [str(run), *args], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list((run / "ladder").rglob("*.sgf"))) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the ladder ended before the kill: {proc.stderr.read()}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    def files() -> dict:  # name -> (inode, bytes): a game written again has a new inode
        return {p.relative_to(run): (p.stat().st_ino, p.read_bytes())
                for p in (run / "ladder").rglob("*.sgf")}
    before = files()
    assert 3 <= len(before) < 5 * 4  # killed mid-way (5 pairs of 4 games)
    time.sleep(1)  # the GTP engines see their input close and leave
    done = zero(run, *args, timeout=600)
    assert done.returncode == 0, done.stderr
    after = files()
    assert all(after[name] == data for name, data in before.items())  # nothing lost or redone
    _check_ladder(run, 4, [1])
    lines = calls.read_text().splitlines()
    assert lines and all("--mode gtp" in line and "--level 1" in line for line in lines)
    again = zero(run, *args)  # nothing left to play
    assert again.returncode == 0 and "games 1-" not in again.stderr
    assert {p.relative_to(run) for p in (run / "ladder").rglob("*.sgf")} == set(after)


def test_pairs_played_at_once_are_the_games_of_one_process(tiny_run, tmp_path, gnugo):
    """--ladder-jobs plays the pairs of networks in several processes; each pair's games are
    a function of its seed alone, so they are move for move those of one process."""
    moves = {}
    for jobs in ("1", "3"):
        run = tmp_path / f"run{jobs}"
        shutil.copytree(tiny_run, run)
        args = [a if a != "2" or LADDER[i - 1] != "--ladder-jobs" else jobs
                for i, a in enumerate(LADDER)]
        assert args[args.index("--ladder-jobs") + 1] == jobs
        done = zero(run, *args, "--ladder-games", "2", "--gnugo-levels", "1",
                    "--gnugo", gnugo, timeout=600)
        assert done.returncode == 0, done.stderr
        moves[jobs] = {p.parent.name + "/" + p.name.split("-")[0]:
                       re.findall(r";[BW]\[[a-s]{0,2}\]", p.read_text())
                       for p in (run / "ladder").rglob("[0-9]*.sgf") if "gnugo" not in str(p)}
    nets = _nets(tiny_run)
    assert len(nets) == 3 and len(moves["1"]) == 2 * 2  # networks 1 and 2 against the start
    assert all(len(game) > 4 for game in moves["1"].values())
    assert moves["1"] == moves["3"]


def test_gnugo_rungs_are_played_by_gnugo_and_anchor_level_10(tiny_run, tmp_path, gnugo):
    """Both levels, anchored at level 10; the moves of every game against GNU Go replayed in
    GNU Go itself are legal, and its moves are GNU Go's (the SGF names it)."""
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    done = zero(run, *LADDER, "--ladder-games", "2", "--gnugo", gnugo, "--max-moves", "16",
                timeout=600)
    assert done.returncode == 0, done.stderr
    data = _check_ladder(run, 2, [1, 10])
    assert data["ratings"]["gnugo-l10"] == {"elo": 0.0, "half_width": 0.0, "games": 6.0}
    for sgf in (run / "ladder" / "v2-m4").glob("*-gnugo-l*/game-*.sgf"):
        moves = re.findall(r";([BW])\[([a-s]{2}|)\]", sgf.read_text())
        commands = ["boardsize 19", "clear_board"] + [
            f"play {c} " + ("pass" if not v else "ABCDEFGHJKLMNOPQRST"[ord(v[0]) - 97]
                            + str(19 - (ord(v[1]) - 97))) for c, v in moves]
        out = subprocess.run([gnugo, "--mode", "gtp"], input="\n".join(commands) + "\nquit\n",
                             capture_output=True, text=True, timeout=60).stdout
        assert "?" not in out, (sgf, out)
    status = zero(run, "--status")
    assert status.returncode == 0, status.stderr
    assert "ladder at 2 visits (GNU Go level 10 = 0" in status.stdout
    assert "GNU Go L1" in status.stdout


def test_bad_ladder_input_is_one_line_and_exit_1(tiny_run, tmp_path):
    for args, words in ((["--gnugo-levels", "11"], "--gnugo-levels"),
                        (["--gnugo", str(tmp_path / "nothing")], "--gnugo"),
                        (["--gnugo-levels", "a,b"], "--gnugo-levels")):
        result = zero(tiny_run, *LADDER, *args)
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ERROR:") and words in lines[0], lines
    result = zero(tmp_path / "none", *LADDER)
    assert result.returncode == 1 and "not a leelaz zero run" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "none").exists()


# ---- loop health per generation -----------------------------------------------------------------

def test_target_sharpness_in_status_is_that_of_the_chunks(tiny_run, tmp_path):
    """Children visited (non-zero target entries) and the top child's share, averaged over
    the positions of each generation's first 16 games, read with tests/chunk_parser.py."""
    from chunk_parser import parse_chunk

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    status = zero(run, "--status")
    assert status.returncode == 0, status.stderr
    rows = {int(line.split()[0]): line.split() for line in
            status.stdout.split("loop health per generation")[1].splitlines()[2:]
            if re.match(r"\s*\d+\s", line)}
    for path in sorted((run / "generations").glob("*.json")):
        rec = json.loads(path.read_text())
        sgfs = sorted(p for p in (run / rec["selfplay"]["dir"]).rglob("*.sgf")
                      if not p.name.startswith("."))[:16]
        targets = []
        for sgf in sgfs:
            stem = sgf.name.split(".")[0]
            for chunk in sgf.parent.glob(stem + ".*gz"):
                if ".debug." not in chunk.name and not chunk.name.endswith(".sgf.gz"):
                    targets += [r.probabilities for r in parse_chunk(str(chunk))]
        assert targets
        children = sum(sum(1 for p in t if p > 0) for t in targets) / len(targets)
        top = sum(max(t) for t in targets) / len(targets)
        assert 1.5 < children and top < 0.95  # enough to tell a count from a share
        assert rows[rec["gen"]][1:3] == [f"{children:.1f}", f"{top:.2f}"]


def test_resign_false_positives_of_played_out_games(tmp_path):
    """Two played-out games (debug records as selfplay writes them, `-r 0`): in the first,
    Black's best child falls to 3 % at move 100 and Black wins (a false resignation at 5 %);
    in the second Black falls to 2 % and loses (a right one). Rate at 5 %: 1 of 2."""
    import gzip

    from leelaz.zero.ladder import resign_false_rate

    folder = tmp_path / "g0001" / "j00"
    folder.mkdir(parents=True)
    for name, black_wins, low in (("000000-aa", True, 0.03), ("000001-aa", False, 0.02)):
        lines = ["2", "0 0"] + [f"0.5 0.5 {low if move == 100 else 0.5} 10"
                                for move in range(150)]
        (folder / f"{name}.debug.txt.0.gz").write_bytes(gzip.compress(
            ("\n".join(lines) + "\n").encode()))
        (folder / f"{name}.sgf").write_text(f"(;GM[1]RE[{'B' if black_wins else 'W'}+R])")
    figures = resign_false_rate(tmp_path / "g0001", 0.05)
    assert (figures["games"], figures["wrong"], figures["false_rate"]) == (2, 1, 0.5)
    assert resign_false_rate(tmp_path / "g0001", 0.01)["wrong"] == 0


def test_held_out_figures_are_read_from_the_trainers_keys_or_similar_ones():
    from leelaz.zero.ladder import held_out_metrics

    record = {"train": {"metrics": {"val_top1": 0.2, "ext_top1": 0.538,
                                    "ext_policy_ce": 1.65, "ext_value_mse": 0.696}}}
    assert held_out_metrics(record) == {"top1": 0.538, "ce": 1.65, "mse": 0.696}
    nested = {"validation": {"tygem_9d": {"policy_top1": 0.5, "policy_ce": 1.7,
                                          "value_mse": 0.7}}, "gate": {"wins": 3}}
    assert held_out_metrics(nested) == {"top1": 0.5, "ce": 1.7, "mse": 0.7}
    assert held_out_metrics({"train": {"metrics": {"val_top1": 0.2}}}) == {}
