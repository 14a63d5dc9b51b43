"""`leelaz zero DIR`: whole generations on a 1x8 network at 2 visits, locally and on Ray,
kills at the worst moments, and bad input.

Everything is checked from the run folder's files with code of the test's own: networks by
recomputing their sha256, games by pairing SGFs with chunks and reading the chunks with the
independent tests/chunk_parser.py, match results by counting the match's SGFs. The loop runs
as a subprocess (`python -m leelaz zero`), as a user runs it, so SIGKILL is real.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunk_parser import parse_chunk
from conftest import requires
from paths import REPO

ZERO = [sys.executable, "-m", "leelaz", "zero"]
TINY = ["--size", "1x8", "-v", "2", "--match-visits", "2", "--parallel", "2", "--steps", "4",
        "--batch", "16", "--match-games", "4", "--max-moves", "120", "--cpu-only", "-q",
        "--gate", "lz"]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in
                                         env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def zero(run: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(ZERO + [str(run), *args], env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def start(run: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(ZERO + [str(run), *args], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


# ---- reading a run folder, independently of leelaz.zero ---------------------------------------

def sha_of(path: Path) -> str:
    return hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()


def record(run: Path, gen: int) -> dict:
    return json.loads((run / "generations" / f"{gen:04d}.json").read_text())


def best(run: Path) -> str:
    return (run / "best").read_text().strip()


def games_of(folder: Path) -> dict[str, tuple[Path, list[Path]]]:
    """{game stem: (sgf, chunks)} for the finished games (those with an SGF) under folder."""
    out = {}
    for sgf in folder.rglob("*.sgf"):
        if sgf.name.startswith("."):
            continue
        stem = sgf.name.split(".")[0]
        chunks = [c for c in sgf.parent.iterdir() if c.name.split(".")[0] == stem
                  and c.name.endswith(".gz") and not c.name.endswith(".sgf.gz")
                  and ".debug." not in c.name]
        assert stem not in out, f"game {stem} twice"
        out[stem] = (sgf, chunks)
    return out


def check_games_whole(folder: Path, expected: int) -> dict:
    games = games_of(folder)
    assert len(games) == expected, f"{len(games)} games in {folder}, wanted {expected}"
    for stem, (sgf, chunks) in games.items():
        text = sgf.read_text()
        assert text.lstrip().startswith("(;") and text.rstrip().endswith(")"), sgf
        assert len(chunks) == 1, f"{stem}: chunks {chunks}"
        assert len(parse_chunk(str(chunks[0]))) >= 1, chunks[0]
    return games


def check_networks(run: Path) -> None:
    for net in (run / "networks").glob("*.gz"):
        assert sha_of(net) == net.name[:-3], f"{net.name} is not named by its sha256"
    assert (run / "networks" / f"{best(run)}.gz").is_file()


def check_window(run: Path, gen: int, games: dict) -> None:
    """The trainer's window lists exactly the chunks of finished games, each once."""
    listed = [line for line in (run / "train" / f"g{gen:04d}" / "window.txt").read_text()
              .splitlines() if line]
    assert len(listed) == len(set(listed))
    wanted = {str(c.relative_to(run)) for _, chunks in games.values() for c in chunks}
    assert set(listed) == wanted


def check_match(folder: Path, gate: dict, games: int) -> None:
    """Every game 0..games-1 exactly once (no SPRT decision is possible in so few), and the
    record and result.json hold the SGFs' score, recounted here (A, the candidate, has Black
    in even games)."""
    indices, wins = [], 0
    for sgf in folder.rglob("*.sgf"):
        if sgf.name.startswith("."):
            continue
        index = int(sgf.name.split("-")[0])
        indices.append(index)
        text = sgf.read_text()
        assert "RE[B+" in text or "RE[W+" in text, sgf
        wins += ("RE[B+" in text) == (index % 2 == 0)
    assert sorted(indices) == list(range(games))
    assert (gate["wins"], gate["losses"], gate["draws"], gate["games"]) == \
        (wins, games - wins, 0, games)
    result = json.loads((folder / "result.json").read_text())
    assert (result["wins"], result["losses"], result["games"]) == (wins, games - wins, games)


def tree_digest(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file() and p.name != "lock"}


# ---- the window and the table, on a fabricated run folder -------------------------------------

def _fabricate(run: Path) -> None:
    """Two generations' records and game files (contents irrelevant: only names are read)."""
    (run / "generations").mkdir(parents=True)
    (run / "networks").mkdir()
    start, cand1, cand2 = "a" * 64, "b" * 64, "c" * 64
    for sha in (start, cand1, cand2):
        (run / "networks" / f"{sha}.gz").write_bytes(b"")
    (run / "run.json").write_text(json.dumps({"blocks": 1, "filters": 8, "start": start,
                                              "seed": 1, "created": ""}))
    (run / "best").write_text(cand1 + "\n")
    for gen, names in ((1, ["000000-11111111", "000001-11111111"]),
                       (2, ["000000-22222222", "000001-22222222", "000000-33333333"])):
        job = run / "selfplay" / f"g{gen:04d}-x" / "j00"
        job.mkdir(parents=True)
        for name in names:
            for suffix in (".txt.0.gz", ".debug.txt.0.gz", ".sgf"):
                (job / (name + suffix)).write_bytes(b"")
        (job / "000009-44444444.txt.0.gz").write_bytes(b"")  # a chunk whose game never ended
        (job / ".000010-44444444.sgf.tmp").write_bytes(b"")  # a writer killed mid-write
    gen1 = {"gen": 1, "best": start, "done": True, "promoted": True,
            "selfplay": {"dir": "selfplay/g0001-x", "games": 2, "done": True, "played": 2,
                         "seconds": 3600.0},
            "train": {"candidate": cand1, "steps_done": 10, "done": True},
            "gate": {"gated": True, "done": True, "wins": 3, "losses": 1, "draws": 0,
                     "games": 4, "llr": 0.5, "decision": None, "dir": "matches/g0001-x",
                     "max_games": 400, "visits": 2, "seconds": 1.0}}
    gen2 = {"gen": 2, "best": cand1, "done": True, "promoted": False,
            "selfplay": {"dir": "selfplay/g0002-x", "games": 3, "done": True, "played": 3,
                         "seconds": 1800.0},
            "train": {"candidate": cand2, "steps_done": 20, "done": True},
            "gate": {"gated": True, "done": True, "wins": 0, "losses": 5, "draws": 0,
                     "games": 5, "llr": -1.0, "decision": "H0", "dir": "matches/g0002-x",
                     "max_games": 400, "visits": 2, "seconds": 1.0}}
    for rec in (gen1, gen2):
        (run / "generations" / f"{rec['gen']:04d}.json").write_text(json.dumps(rec))


def test_window_takes_the_newest_finished_games(tmp_path):
    from leelaz.zero.loop import Settings, ZeroLoop
    from leelaz.zero.rundir import RunDir

    run = tmp_path / "run"
    _fabricate(run)
    rundir = RunDir(run)
    loop = ZeroLoop(rundir, rundir.info(), Settings(window=4), executor=None, say=print)
    chunks, games = loop.window(2)
    assert games == 4
    g2, g1 = "selfplay/g0002-x/j00/", "selfplay/g0001-x/j00/"
    assert chunks == [g2 + "000001-22222222.txt.0.gz", g2 + "000000-33333333.txt.0.gz",
                      g2 + "000000-22222222.txt.0.gz", g1 + "000001-11111111.txt.0.gz"]
    assert loop.window(1) == ([g1 + "000001-11111111.txt.0.gz",
                               g1 + "000000-11111111.txt.0.gz"], 2)


def test_gate_deals_no_more_games_at_once_than_the_sprt_can_need_first():
    """The SPRT may pass a candidate only after game 100 (the server's rule): the shards'
    first wave together covers game 101 with the fewest games per shard, never more than
    the games in flight the loop was given."""
    from leelaz.zero.loop import match_parallel

    assert match_parallel(24, 14) == 8  # 14 x 8 = 112 >= 101 > 14 x 7 = 98
    assert match_parallel(24, 1) == 24  # one shard: 101 would be more than it was given
    assert match_parallel(64, 2) == 51  # 2 x 51 = 102 >= 101 > 2 x 50
    assert match_parallel(2, 3) == 2
    assert match_parallel(8, 400) == 1


def test_status_table_and_elo(tmp_path):
    import math

    from leelaz.selfplay.sprt import elo_with_draws as elo
    from leelaz.zero.rundir import RunDir
    from leelaz.zero.status import rows

    assert math.isclose(elo(3, 1)[0], 400 * math.log10(3)) and elo(3, 1)[1] == ""
    assert math.isclose(elo(2, 1, 2)[0], 400 * math.log10(3 / 2))  # draws count half
    # A shut-out gets the bound of one more drawn game, marked.
    assert math.isclose(elo(5, 0)[0], 400 * math.log10(5.5 / 0.5)) and elo(5, 0)[1] == ">"
    assert math.isclose(elo(0, 5)[0], -400 * math.log10(5.5 / 0.5)) and elo(0, 5)[1] == "<"
    assert elo(0, 0) is None

    run = tmp_path / "run"
    _fabricate(run)
    table = rows(RunDir(run))
    assert [r["gen"] for r in table] == [0, 1, 2]
    assert [r["promoted"] for r in table[1:]] == [True, False]
    assert math.isclose(table[1]["elo"], 400 * math.log10(3))
    assert math.isclose(table[1]["best_elo"], table[1]["elo"])  # promoted: the chain moves
    # Generation 2's candidate is rated against generation 1's best; the chain stays.
    assert math.isclose(table[2]["elo"], 400 * math.log10(3) - 400 * math.log10(11))
    assert math.isclose(table[2]["best_elo"], table[1]["elo"])
    assert [r["rate"] for r in table[1:]] == [2.0, 6.0]


def test_window_min_is_kept_with_the_run(tmp_path):
    """--window-min is one of the run's settings (settings.json), a bad one is refused, and
    the window grows from it as KataGo's does (the formula recomputed here)."""
    run = tmp_path / "run"
    made = zero(run, *TINY, "--window-min", "777", "--generations", "0")
    assert made.returncode == 0, made.stderr
    assert json.loads((run / "settings.json").read_text())["window_min"] == 777
    bad = zero(run, "--window-min", "0", "--generations", "0")
    assert bad.returncode != 0 and "--window-min" in bad.stderr
    from leelaz.zero import loop as zero_loop
    assert zero_loop.window_size(5_000, 777) == int(
        777 * (1 + 0.4 * ((5_000 / 777) ** 0.65 - 1) / 0.65))


def test_status_plot_without_gating_shows_the_held_out_games(tmp_path, monkeypatch):
    """With no gating match there is no Elo to step; the first panel plots the trainer's
    held-out figures (--val-sgf) per generation instead of a flat line."""
    requires("matplotlib")
    from leelaz.zero import status
    from leelaz.zero.rundir import RunDir

    run = tmp_path / "run"
    _fabricate(run)
    top1 = {1: 0.012, 2: 0.034}
    for gen in (1, 2):
        path = run / "generations" / f"{gen:04d}.json"
        record = json.loads(path.read_text())
        record["gate"] = {"gated": False, "done": True, "rule": "none"}
        record["promoted"] = True
        record["train"]["metrics"] = {"ext_top1": top1[gen], "ext_policy_ce": 6.0 - gen,
                                      "ext_value_mse": 1.0}
        path.write_text(json.dumps(record))
    saved = {}
    monkeypatch.setattr(status, "_save", lambda fig, path, plt: saved.setdefault("fig", fig))
    status.plot(RunDir(run))
    first = saved["fig"].axes[0]
    assert list(first.lines[0].get_ydata()) == [100 * top1[1], 100 * top1[2]]
    assert list(saved["fig"].axes[-1].lines[0].get_ydata()) == [5.0, 4.0]  # the CE twin


# ---- whole generations ---------------------------------------------------------------------

def test_local_generation_gated_killed_mid_match_and_status(tmp_path):
    requires("torch")  # the loop's trainer
    requires("matplotlib")  # status.png
    run = tmp_path / "run"
    # Two workers: the match is two jobs (shards) playing into one folder when it is killed.
    args = (*TINY, "--games-per-gen", "4", "--generations", "1", "--match-games", "6",
            "--workers", "2")
    proc = start(run, *args)
    matches = run / "matches"
    _kill_when(proc, lambda: matches.is_dir() and any(matches.rglob("[!.]*.sgf")),
               "the first finished match game")
    assert not record(run, 1)["gate"].get("done")
    done = zero(run, *args)  # the match restarts from its finished games
    assert done.returncode == 0, done.stderr
    info = json.loads((run / "run.json").read_text())
    assert (info["blocks"], info["filters"]) == (1, 8)
    check_networks(run)
    first = record(run, 1)
    assert first["done"] and first["best"] == info["start"]
    games = check_games_whole(run / first["selfplay"]["dir"], 4)
    check_window(run, 1, games)
    assert first["train"]["steps_done"] == 4
    gate = first["gate"]
    assert gate["shards"] == 2
    check_match(run / gate["dir"], gate, 6)
    # 6 games can never pass the server's SPRT (it needs more than 100), so no promotion.
    assert first["promoted"] is False and best(run) == info["start"]

    status = zero(run, "--status")
    assert status.returncode == 0, status.stderr
    row = next(line.split() for line in status.stdout.splitlines() if line.split()[:1] == ["1"])
    assert row[1] == first["train"]["candidate"][:12] and row[-1] == "no"
    assert f"{gate['wins']}-{gate['losses']}" in row and "4" in row
    assert (run / "status.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ray_local_generation(tmp_path):
    requires("ray")
    requires("torch")
    run = tmp_path / "run"
    done = zero(run, *TINY, "--games-per-gen", "4", "--generations", "1",
                "--ray", "auto", "--workers", "2")
    assert done.returncode == 0, done.stderr
    first = record(run, 1)
    assert first["selfplay"]["jobs"] == [2, 2]
    games = check_games_whole(run / first["selfplay"]["dir"], 4)
    for job in ("j00", "j01"):
        assert len(games_of(run / first["selfplay"]["dir"] / job)) == 2
    check_window(run, 1, games)
    gate = first["gate"]  # the match as two Ray tasks into one folder
    assert gate["shards"] == 2
    check_match(run / gate["dir"], gate, 4)
    # 4 games can never pass the server's SPRT: no promotion.
    assert first["promoted"] is False and best(run) == first["best"]
    check_networks(run)


# ---- kills ---------------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                             text=True).stdout
    except OSError:
        return []
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _kill_when(proc: subprocess.Popen, ready, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the loop ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"never reached {what}"
        time.sleep(0.2)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while [p for p in workers if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [open(f"/proc/{p}/cmdline").read() for p in workers if _alive(p)]
    assert not survivors, f"workers outlived the killed loop: {survivors}"


def test_sigkill_mid_selfplay_and_mid_training(tmp_path):
    requires("torch")
    run = tmp_path / "run"
    # One game at a time per job, so that a kill after the first finished game always finds
    # games in flight; a checkpoint after every step, so that the kill lands between two.
    args = (*TINY, "--games-per-gen", "4", "--workers", "2", "--parallel", "1",
            "--generations", "1", "--gate", "none", "--steps", "6", "--batch", "8",
            "--checkpoint-seconds", "0")
    selfplay, trainer = run / "selfplay", run / "train" / "g0001"

    proc = start(run, *args)
    _kill_when(proc, lambda: len(games_of(selfplay)) >= 1 if selfplay.is_dir() else False,
               "the first finished game")
    assert 1 <= len(games_of(selfplay)) < 4 and not record(run, 1).get("selfplay", {}).get("done")

    proc = start(run, *args)

    def trained_a_little() -> bool:  # the trainer saved something beyond the window
        return trainer.is_dir() and any(p.name != "window.txt" for p in trainer.iterdir()
                                        if not p.name.startswith("."))
    _kill_when(proc, trained_a_little, "a training checkpoint")
    assert not record(run, 1).get("train", {}).get("done")

    done = zero(run, *args)
    assert done.returncode == 0, done.stderr
    first = record(run, 1)
    assert first["done"] and first["selfplay"]["games"] == 4
    games = check_games_whole(selfplay, 4)  # whole, and each counted once
    check_window(run, 1, games)
    assert first["train"]["steps_done"] == 6
    check_networks(run)
    assert best(run) == first["train"]["candidate"]


def test_ray_cluster_survives_a_node_killed_mid_game(tmp_path, monkeypatch):
    requires("ray")
    requires("torch")
    from ray.cluster_utils import Cluster

    run = tmp_path / "run"
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the nodes' workers import leelaz
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})

    def wait_for_a_game(folder: Path) -> None:
        deadline = time.monotonic() + 240
        while not (folder.is_dir() and games_of(folder)):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.2)
    try:
        doomed = cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        args = (*TINY, "--games-per-gen", "6", "--workers", "3", "--parallel", "1",
                "--generations", "1", "--match-games", "6", "--ray", cluster.address)
        proc = start(run, *args)
        # Three jobs of two games, one at a time, on three one-CPU nodes: when the first game
        # ends, every node is in the middle of a game. So it is in the match: three shards
        # of two games.
        wait_for_a_game(run / "selfplay")
        cluster.remove_node(doomed)
        doomed = cluster.add_node(num_cpus=1)
        wait_for_a_game(run / "matches")
        cluster.remove_node(doomed)
        try:
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        cluster.shutdown()
    first = record(run, 1)
    games = check_games_whole(run / first["selfplay"]["dir"], 6)
    for job in ("j00", "j01", "j02"):
        assert len(games_of(run / first["selfplay"]["dir"] / job)) == 2
    check_window(run, 1, games)
    gate = first["gate"]
    assert gate["shards"] == 3
    check_match(run / gate["dir"], gate, 6)  # the killed shard's retry played only its own
    assert first["done"] and first["promoted"] is False and best(run) == first["best"]


# ---- bad input -----------------------------------------------------------------------------

def _one_line_error(result: subprocess.CompletedProcess, *words: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_bad_input_is_one_line_and_leaves_dir_alone(tmp_path):
    # Unwritable: a DIR under a regular file can be neither created nor written, even by root.
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_line_error(zero(blocker / "run", *TINY, "--generations", "0"), "cannot write")

    run = tmp_path / "run"
    made = zero(run, *TINY, "--generations", "0")  # creates the run, plays nothing
    assert made.returncode == 0, made.stderr
    before = tree_digest(run)

    _one_line_error(zero(run, *TINY, "--size", "2x8", "--generations", "1"), "1x8", "2x8")
    _one_line_error(zero(run, *TINY, "--size", "six", "--generations", "1"), "--size")
    _one_line_error(zero(run, *TINY, "-w", str(tmp_path / "none.gz")), "none.gz")
    from leelaz.backends.random_weights import make_random_weights
    other_net = make_random_weights(tmp_path / "other.gz", 1, 8, seed=99)
    _one_line_error(zero(run, *TINY, "-w", other_net, "--generations", "1"), "started from")

    # Ray not installed: a `ray` that fails to import, first on the path.
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env["PYTHONPATH"]])
    result = subprocess.run(ZERO + [str(run), *TINY, "--ray", "auto", "--generations", "1"],
                            env=env, capture_output=True, text=True, timeout=60)
    _one_line_error(result, "pip install 'leelaz[zero]'")

    # A DIR holding something else is not taken over.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    _one_line_error(zero(other, *TINY, "--generations", "0"), "not a leelaz zero run")
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    assert tree_digest(run) == before


def test_an_unreachable_ray_cluster_is_one_line_and_leaves_dir_alone(tmp_path):
    """Ray installed, but nothing listens on the address: a port we just closed."""
    requires("ray")
    requires("torch")  # a run of one generation trains
    run = tmp_path / "run"
    made = zero(run, *TINY, "--generations", "0")
    assert made.returncode == 0, made.stderr
    before = tree_digest(run)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _one_line_error(zero(run, *TINY, "--ray", f"127.0.0.1:{port}", "--generations", "1"),
                    "cannot reach")
    assert tree_digest(run) == before


def test_uniform_start_and_a_rerun_must_name_the_same_start(tmp_path):
    """--start uniform: the starting network is the seeded random one with the last layer of
    both heads zero (uniform policy, value 0.5); a rerun naming the other start, or -w as
    well, is refused and leaves DIR alone."""
    run, plain = tmp_path / "run", tmp_path / "plain"
    for folder, start in ((run, "uniform"), (plain, "random")):
        made = zero(folder, *TINY, "--start", start, "--seed", "3", "--generations", "0")
        assert made.returncode == 0, made.stderr
    start_net = json.loads((run / "run.json").read_text())["start"]
    assert best(run) == start_net
    lines = gzip.decompress((run / "networks" / f"{start_net}.gz").read_bytes()).decode() \
        .splitlines()
    plain_lines = gzip.decompress((plain / "networks" / f"{best(plain)}.gz").read_bytes()) \
        .decode().splitlines()
    assert len(lines) == len(plain_lines) == 1 + 4 * 3 + 6 + 8  # a 1x8 network
    zeroed = {17, 18, 25, 26}  # policy FC weights, biases; value FC2 weights, bias
    for i, (line, plain_line) in enumerate(zip(lines, plain_lines)):
        if i in zeroed:
            assert set(line.split()) == {"0"} != set(plain_line.split()), i
        else:
            assert line == plain_line, i
    before = tree_digest(run)
    _one_line_error(zero(run, *TINY, "--start", "random", "--generations", "1"),
                    "--start random")
    _one_line_error(zero(run, *TINY, "--start", "uniform", "-w", str(tmp_path / "x.gz")),
                    "not both")
    again = zero(run, *TINY, "--start", "uniform", "--generations", "0")
    assert again.returncode == 0, again.stderr
    assert {k: v for k, v in tree_digest(run).items() if k != "log.txt"} == \
        {k: v for k, v in before.items() if k != "log.txt"}


def _option_flags(folder: Path, flag: str = "-d") -> set[bool]:
    """Whether `flag` is among the `Leela Zero options:` of each finished game's SGF under
    folder (the set of answers)."""
    flags = set()
    for sgf in folder.rglob("[!.]*.sgf"):
        comment = sgf.read_text().split("Leela Zero options:", 1)[1].split("]", 1)[0]
        flags.add(f" {flag} " in comment + " ")
    return flags


@pytest.mark.parametrize("off, key, flag", [("--no-dumbpass", "dumbpass", "-d"),
                                             ("--no-noise", "noise", "-n")])
def test_a_generation_keeps_its_pass_rule_and_noise(tmp_path, off, key, flag):
    """--no-dumbpass plays a generation's self-play and match with Leela Zero's engine pass
    rules, --no-noise its self-play without root noise (neither flag in the SGFs' options, as
    autogtp writes them); the next generation, without the option, goes back to autogtp's -d
    and -n once given it. Matches play -d as self-play does (the server's matches) and never
    have noise."""
    requires("torch")
    run = tmp_path / "run"
    args = (*TINY, "--games-per-gen", "2", "--match-games", "2")
    first = zero(run, *args, off, "--generations", "1")
    assert first.returncode == 0, first.stderr
    # The run keeps its options (settings.json): the flag is turned back on by its other half.
    on_flag = {"--no-dumbpass": "--dumbpass", "--no-noise": "--noise"}[off]
    second = zero(run, *args, on_flag, "--generations", "2")
    assert second.returncode == 0, second.stderr
    assert f"changed: {on_flag} (was {off} in {run / 'settings.json'})" in second.stderr
    for gen, on in ((1, False), (2, True)):
        rec = record(run, gen)
        in_match = on if key == "dumbpass" else False
        assert rec["selfplay"][key] is on and rec["gate"].get(key, False) is in_match
        assert _option_flags(run / rec["selfplay"]["dir"], flag) == {on}
        assert _option_flags(run / rec["gate"]["dir"], flag) == {in_match}


def _tree(pid: int) -> dict[int, str]:
    """{pid: command line} of every live descendant of pid."""
    out, todo = {}, [pid]
    while todo:
        for child in _children(todo.pop()):
            if _alive(child):
                try:
                    out[child] = open(f"/proc/{child}/cmdline").read().replace("\0", " ")
                except OSError:
                    continue
                todo.append(child)
    return out


def test_a_killed_ray_driver_takes_its_private_cluster_along(tmp_path):
    """SIGKILL of `zero --ray auto` mid self-play: within 20 s no process it started (the
    raylet, the GCS, Ray's agents, the workers) is left."""
    requires("ray")
    run = tmp_path / "run"
    env = _env()
    env.pop("RAY_ADDRESS", None)
    import tempfile
    # A private cluster, never the machine's (its socket paths must stay under 108 bytes).
    env["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="lzray", dir="/tmp")
    proc = subprocess.Popen(ZERO + [str(run), *TINY, "--games-per-gen", "2", "--parallel",
                                    "1", "--generations", "1", "--ray", "auto"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not list(run.glob("selfplay/*/j00")) or \
                not any("DashboardAgent" in c for c in _tree(proc.pid).values()):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "self-play on Ray never started"
            time.sleep(0.5)
        tree = _tree(proc.pid)
        assert [p for p, c in tree.items() if "raylet" in c.split(" ")[0]], tree
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 20
    while [p for p in tree if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.5)
    survivors = {p: c for p, c in tree.items() if _alive(p)}
    for p in survivors:  # the test's own cleanup: nothing of this run may stay
        os.kill(p, signal.SIGKILL)
    import shutil
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
    assert not survivors, f"outlived the killed driver by 20 s: {survivors}"


def test_selfplay_additions_reach_every_game_of_a_generation(tmp_path):
    """--full-share, --cheap-visits, --forced-playouts and --checked-resign are the
    generation's (its record) and its games': a chunk holds only the fully searched moves
    (some, never all, at a share of one half), and no game resigns before the run has the
    no-resign games that show resigning is safe."""
    run = tmp_path / "run"
    got = zero(run, *TINY, "-v", "8", "--games-per-gen", "2", "--full-share", "0.5",
               "--cheap-visits", "2", "--forced-playouts", "2", "--checked-resign",
               "--generations", "1", "--selfplay-only")
    assert got.returncode == 0, got.stderr
    sp = record(run, 1)["selfplay"]
    assert (sp["full_share"], sp["cheap_visits"], sp["forced_k"], sp["checked_resign"]) == \
        (0.5, 2, 2.0, True)
    games = games_of(run / sp["dir"])
    assert len(games) == 2
    for sgf, chunks in games.values():
        text = sgf.read_text()
        moves = text.count(";B[") + text.count(";W[")
        positions = sum(len(parse_chunk(str(c))) for c in chunks)
        assert 0 < positions < moves, (sgf, positions, moves)
        assert "+R]" not in text  # resignation stays off: no no-resign games yet
    bad = zero(tmp_path / "other", *TINY, "--full-share", "0.5", "--cheap-visits", "2",
               "--generations", "0")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1, bad.stderr
    assert "--cheap-visits 2 must be below" in bad.stderr
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("args, words", [
    (["--full-share", "0"], "--full-share must be above 0 and at most 1, not '0'"),
    (["--full-share", "x"], "--full-share must be a number, not 'x'"),
    (["--cheap-visits", "-1"], "--cheap-visits must be at least 0, not '-1'"),
    (["--forced-playouts", "inf"], "--forced-playouts must be a finite number, not 'inf'"),
    (["--window-min", "1.5"], "--window-min must be a whole number, not '1.5'"),
    (["--ladder", "--ladder-games", "0"], "--ladder-games must be at least 1, not '0'"),
    (["--ladder", "--ladder-visits", "x"], "--ladder-visits must be a whole number, not 'x'"),
])
def test_bad_values_of_the_loops_numeric_options_are_one_line(tmp_path, args, words):
    """Exit status 1, one `ERROR:` line naming the option and the value, DIR untouched (click's
    own ranges said two lines and exit 2)."""
    bad = zero(tmp_path / "run", *args, "--generations", "0")
    assert bad.returncode == 1, bad.stderr
    assert bad.stderr.strip().splitlines() == [f"ERROR: {words}"], bad.stderr
    assert not (tmp_path / "run").exists()


def test_slow_self_play_on_the_cpu_is_said_before_it_starts(tmp_path):
    """More than a hundred visits on the CPU, with no earlier generation's pace to go by: the
    run says before its first game that a generation can take hours, with a quicker setting;
    at a few visits it says nothing."""
    slow = zero(tmp_path / "slow", *TINY, "-v", "120", "--max-moves", "12", "--games-per-gen",
                "1", "--generations", "1", "--selfplay-only")
    assert slow.returncode == 0, slow.stderr
    said = [line for line in slow.stderr.splitlines() if "on the CPU" in line]
    assert len(said) == 1 and "at 120 visits" in said[0], slow.stderr
    assert "try -v 16 --games-per-gen 8" in said[0]
    quick = zero(tmp_path / "quick", *TINY, "--max-moves", "12", "--games-per-gen", "1",
                 "--generations", "1", "--selfplay-only")
    assert quick.returncode == 0 and "on the CPU" not in quick.stderr, quick.stderr
