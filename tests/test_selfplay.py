"""leelaz selfplay: the files each game leaves, read back by the independent chunk parser and
checked against the SGF and against C++ Leela Zero 0.17's dump_supervised of the same SGF;
batched games equal to games played one at a time; resume after SIGKILL; bad input.

Tiny random networks and a few visits keep it fast; `-r 50` makes the resigning games resign
as soon as the engine may (after move 90), and `max_moves` bounds the played-out ones.
"""

from __future__ import annotations

import collections
import glob
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import chunk_parser
from conftest import debug_game as _debug_game
from lz_training_oracle import lower_case_folder, lz_dump_supervised
from paths import REPO
from leelaz.backends.base import Backend
from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, PASS, WHITE, index
from leelaz.game.sgf import read_first_game
from leelaz.game.sgf_replay import mainline_moves
from leelaz.game.state import GameState

from leelaz.selfplay import SelfplayError, play_selfplay
from leelaz.tools import run_verb

#: `leelaz selfplay ...` in a child process (with this checkout's package)
VERB = [sys.executable, "-m", "leelaz", "selfplay"]

SGF_RE = re.compile(r"RE\[([^\]]*)\]")


def _sgfs(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "*.sgf")))


def _chunk_of(sgf: str) -> str:
    return sgf[:-len(".sgf")] + ".txt.0.gz"


@pytest.fixture(scope="module")
def games(tmp_path_factory, random_weights):
    """Six games: resigning ones and played-out ones (no-resign share 0.5, seeded)."""
    out = tmp_path_factory.mktemp("selfplay")
    summary = play_selfplay(random_weights(1, 8), str(out), 6, visits=8, parallel=3, seed=11,
                            cpu_only=True, progress=False, resignpct=50, no_resign_share=0.5,
                            max_moves=130)
    assert summary.games == 6 and summary.games_this_run == 6
    return out


def _replayed(sgf_path):
    """(states before each SGF move, the moves, RE) by replaying the SGF on our board."""
    game = read_first_game(sgf_path)
    state = GameState(komi=7.5)
    states, moves = [], mainline_moves(game)
    for color, move in moves:
        assert color == state.to_move
        states.append(state.copy())
        state.play(color, move)
    return states, moves, game.root.get("RE"), state


def test_each_game_has_its_three_files_and_nothing_else(games):
    names = sorted(os.listdir(games))
    sgfs = _sgfs(games)
    assert len(sgfs) == 6
    for sgf in sgfs:
        stem = os.path.basename(sgf)[:-4]
        assert {n for n in names if n.startswith(stem)} == \
            {stem + ".sgf", stem + ".txt.0.gz", stem + ".debug.txt.0.gz"}
    assert not [n for n in names if n.endswith(".tmp")]
    assert len({os.path.basename(s).split("-")[0] for s in sgfs}) == 6  # distinct indices


def test_chunks_match_the_sgf_move_for_move(games):
    kinds = collections.Counter()
    for sgf in _sgfs(games):
        records = chunk_parser.parse_chunk(_chunk_of(sgf))
        states, moves, result, final = _replayed(sgf)
        resigned = result.endswith("+Resign")
        kinds["resigned" if resigned else "played out"] += 1
        # one record per search: every SGF move, plus the search that resigned (Leela Zero
        # records the resigning position too, UCTSearch::think)
        assert len(records) == len(moves) + (1 if resigned else 0)
        if resigned:
            states.append(final)
        else:
            assert final.passes >= 2 or len(moves) > 130
            score = final.final_score()
            assert result == (f"B+{score:.1f}" if score > 0 else f"W+{-score:.1f}")
        winner = BLACK if result.startswith("B+") else WHITE
        for record, state in zip(records, states):
            to_move = state.to_move
            assert record.white_to_move == (to_move == WHITE)
            ours = [int(state.board.square[v] == to_move) for v in _points()]
            theirs = [int(state.board.square[v] == 1 - to_move) for v in _points()]
            assert record.planes[0] == ours and record.planes[8] == theirs
            if state.move_num:
                previous = state.history[-2]
                assert record.planes[1] == [int(previous.square[v] == to_move)
                                            for v in _points()]
            assert abs(sum(record.probabilities) - 1.0) < 1e-4
            legal = {index(v) for v in state.legal_moves(to_move) if v != PASS}
            for slot, p in enumerate(record.probabilities[:NUM_INTERSECTIONS]):
                assert p == 0.0 or slot in legal, f"probability on illegal point {slot}"
            assert record.winner_is_to_move == (to_move == winner)
    assert kinds["resigned"] and kinds["played out"], kinds


def _points():
    from leelaz.game.coords import vertex
    return [vertex(i % 19, i // 19) for i in range(NUM_INTERSECTIONS)]


def test_sgf_comment_carries_the_settings_and_seed(games):
    for sgf in _sgfs(games):
        text = open(sgf).read()
        comment = re.search(r"C\[Leela Zero options:([^\]]*)\]", text).group(1)
        assert re.search(r" -s \d+", comment) and " -v 8 " in comment and " -n" in comment
        assert (" -r 0 " in comment) or (" -r 50 " in comment)
        assert SGF_RE.search(text)


def test_leela_zero_dump_supervised_agrees_on_planes_side_and_outcome(games, lz_binary,
                                                                       random_weights):
    folder = lower_case_folder()
    try:
        for n, sgf in enumerate(_sgfs(games)):
            path = os.path.join(folder, f"g{n}.sgf")
            shutil.copy(sgf, path)
            _, lz_paths = lz_dump_supervised(lz_binary, random_weights(1, 8), path,
                                             os.path.join(folder, f"lz{n}"))
            lz = collections.Counter(_key(b) for p in lz_paths
                                     for b in chunk_parser.record_blocks(
                                         chunk_parser.read_text(p)))
            ours_blocks = chunk_parser.record_blocks(chunk_parser.read_text(_chunk_of(sgf)))
            if SGF_RE.search(open(sgf).read()).group(1).endswith("Resign"):
                ours_blocks = ours_blocks[:-1]  # the resigning search has no SGF move
            assert sum(lz.values()) > 30
            assert collections.Counter(_key(b) for b in ours_blocks) == lz
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _key(block):
    """Planes, side to move, outcome: all but the probabilities (a search's visits for us,
    the game's one-hot move for dump_supervised)."""
    return block[:17] + block[18:]


def test_batched_games_are_the_games_played_one_at_a_time(tmp_path, random_weights):
    """-t 1 and no noise make each game's search deterministic; its seed and its own cache
    make it independent of the games beside it."""
    texts = {}
    for parallel, workers in ((1, 1), (8, 1), (4, 2)):  # and in two worker processes
        out = tmp_path / f"p{parallel}w{workers}"
        play_selfplay(random_weights(2, 16), str(out), 8, visits=8, parallel=parallel,
                      workers=workers, seed=5, cpu_only=True, progress=False, threads=1,
                      noise=False, max_moves=30)
        texts[parallel, workers] = [(re.sub(r"DT\[[^\]]*\]", "", open(s).read()),
                                     gzip.open(_chunk_of(s)).read()) for s in _sgfs(out)]
    assert len(texts[1, 1]) == 8
    assert texts[1, 1] == texts[8, 1]
    assert texts[1, 1] == texts[4, 2]
    assert len({t[0] for t in texts[1, 1]}) > 1  # the seeds differ per game


def test_workers_on_one_network_server_play_the_games_played_one_at_a_time(
        tmp_path, random_weights, capfd):
    """--network-server: two workers send their leaves to one server process instead of
    each opening the network; the games are those of one process playing one game at a
    time (as in the test above), and every evaluation the workers count was the server's
    (its own count, on stderr at its end)."""
    weights = random_weights(2, 16)
    texts = {}
    summaries = {}
    for label, workers, server in (("alone", 1, False), ("served", 2, True)):
        out = tmp_path / label
        summaries[label] = play_selfplay(
            weights, str(out), 8, visits=8, parallel=1 if workers == 1 else 4,
            workers=workers, seed=5, cpu_only=True, progress=False, threads=1, noise=False,
            max_moves=30, network_server=server)
        texts[label] = [(re.sub(r"DT\[[^\]]*\]", "", Path(s).read_text()),
                         gzip.decompress(Path(_chunk_of(s)).read_bytes())) for s in _sgfs(out)]
    assert len(texts["alone"]) == 8
    assert texts["served"] == texts["alone"]
    served = summaries["served"]
    assert served.backend.endswith("x2 workers, one network server")
    counted = re.findall(r"Network server \(numpy\): (\d+) evaluations", capfd.readouterr().err)
    assert counted == [str(served.evaluations)]


class _KeyedDevice(Backend):
    """A stand-in for a GPU: asynchronous (the runner keeps two groups of games, one group's
    call in flight while the other walks its trees), computing only when asked for the
    answer, and answering each row from its input alone, as a network does."""

    name = "keyed"
    asynchronous = True

    def __init__(self, weights):
        self.weights = weights
        self.calls = []

    def submit(self, planes):
        self.calls.append(len(planes))
        return _Later(planes.reshape(len(planes), -1).copy())


class _Later:
    def __init__(self, rows):
        self.rows = rows

    def result(self):
        rngs = [np.random.default_rng(zlib.crc32(row.tobytes())) for row in self.rows]
        logits = np.array([3 * r.standard_normal(362) for r in rngs], dtype=np.float32)
        values = np.array([r.uniform(0.2, 0.8) for r in rngs], dtype=np.float32)
        return logits, values


def test_games_in_two_groups_on_an_asynchronous_device_are_the_games_played_alone(
        tmp_path, random_weights):
    """Self-play's own settings (noise, random opening moves, 6 leaves a batch): each
    game's randomness is its seed's, so the games do not depend on the games beside them,
    nor on which group's call carries their leaves."""
    texts, devices = {}, {}
    for parallel in (1, 6):
        def device(weights, parallel=parallel):
            devices[parallel] = _KeyedDevice(weights)
            return devices[parallel]

        out = tmp_path / f"p{parallel}"
        play_selfplay(random_weights(1, 8), str(out), 6, visits=12, parallel=parallel,
                      seed=3, cpu_only=True, progress=False, max_moves=24, backend=device)
        texts[parallel] = [(re.sub(r"DT\[[^\]]*\]", "", open(s).read()),
                            gzip.open(_chunk_of(s)).read()) for s in _sgfs(out)]
    assert len(texts[1]) == 6 and texts[1] == texts[6]
    # alone, a call carries one game's leaves; six games in two groups put three in a call
    assert max(devices[1].calls) <= 6
    assert max(devices[6].calls) > 6


def test_a_rerun_resumes_and_counts_finished_games(tmp_path, random_weights):
    out = str(tmp_path / "resume")
    net = random_weights(1, 8)
    first = play_selfplay(net, out, 2, visits=4, parallel=2, cpu_only=True, progress=False,
                          max_moves=20)
    assert first.games == 2
    again = play_selfplay(net, out, 2, visits=4, parallel=2, cpu_only=True, progress=False,
                          max_moves=20)
    assert again.games == 2 and again.games_this_run == 0
    more = play_selfplay(net, out, 3, visits=4, parallel=2, cpu_only=True, progress=False,
                         max_moves=20)
    assert more.games == 3 and more.games_this_run == 1
    assert len(_sgfs(out)) == 3 and len(glob.glob(out + "/*.txt.0.gz")) == 6


def _verb(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(VERB + list(args), capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def test_sigkill_mid_run_then_rerun_reaches_the_total(tmp_path, random_weights):
    out = tmp_path / "killed"
    args = ["--games", "6", "--parallel", "2", "--out", str(out), "-w", random_weights(1, 8),
            "-v", "4", "--cpu-only", "--max-moves", "40", "-q"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(VERB + args, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while len(_sgfs(out)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = len(_sgfs(out))
    assert 2 <= killed_at < 6
    done = _verb(args)
    assert done.returncode == 0, done.stderr
    names = os.listdir(out)
    sgfs = _sgfs(out)
    assert len(sgfs) == 6
    assert not [n for n in names if n.startswith(".")], names  # no temporary file, no pid file
    stems = {os.path.basename(s)[:-4] for s in sgfs}
    assert {n.split(".")[0] for n in names} == stems  # no chunk without its SGF
    for s in sgfs:  # each chunk whole, and the SGF's game
        records = chunk_parser.parse_chunk(_chunk_of(s))
        moves = mainline_moves(read_first_game(s))
        assert len(records) in (len(moves), len(moves) + 1)


def test_ctrl_c_drops_the_games_in_flight(tmp_path, random_weights):
    out = tmp_path / "interrupted"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # Far more games than can finish between the first SGF and the signal, even on a loaded
    # machine where this test's polling is slow: the interrupt must find games in flight.
    proc = subprocess.Popen(VERB + ["--games", "2000", "--parallel", "3", "--out", str(out),
                                    "-w", random_weights(1, 8), "-v", "4", "--cpu-only",
                                    "--max-moves", "40", "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while len(_sgfs(out)) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines()[-1].startswith(
        "ERROR: interrupted"), err
    names = os.listdir(out)
    sgfs = _sgfs(out)
    assert 1 <= len(sgfs) < 2000, (len(sgfs), err)
    assert not [n for n in names if n.startswith(".")], names
    assert {n.split(".")[0] for n in names} == {os.path.basename(s)[:-4] for s in sgfs}


def test_bad_input_is_one_line_and_exit_1(tmp_path, random_weights):
    net = random_weights(1, 8)
    a_file = tmp_path / "a_file"  # a folder inside a file: unwritable even for root
    a_file.write_text("")
    broken = tmp_path / "broken.txt"
    broken.write_text("1\n0.5 0.5\n")
    cases = [
        (["--games", "1", "--out", str(a_file / "sub"), "-w", net], "output folder"),
        (["--games", "1", "--out", str(tmp_path / "a"), "-w", str(tmp_path / "none.txt")],
         "not found"),
        (["--games", "1", "--out", str(tmp_path / "b"), "-w", str(broken)], "broken.txt"),
        (["--games", "0", "--out", str(tmp_path / "c"), "-w", net], "--games"),
    ]
    for args, words in cases:
        got = _verb(args + ["--cpu-only", "-v", "2", "-q"])
        lines = got.stderr.strip().splitlines()
        assert got.returncode == 1, (args, got.stderr)
        assert len(lines) == 1 and lines[0].startswith("ERROR:") and words in lines[0], lines
    assert not os.path.exists(tmp_path / "a")  # a missing network is found before anything
    for name in ("b", "c"):  # nothing left behind but the (empty) folder, if any
        assert not os.path.exists(tmp_path / name) or not os.listdir(tmp_path / name)


def test_a_full_disk_stops_cleanly(tmp_path, random_weights):
    """A file size limit (RLIMIT_FSIZE) makes the first chunk write fail as a full disk
    would: one line, exit 1, no partial or temporary file."""
    out = tmp_path / "full"
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300)); "
            "from leelaz.tools import run_verb; sys.exit(run_verb(sys.argv[1:]))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    got = subprocess.run([sys.executable, "-c", code, "selfplay", "--games", "2", "--out", str(out), "-w",
                          random_weights(1, 8), "--cpu-only", "-v", "2", "--max-moves", "30",
                          "-q"], capture_output=True, text=True, env=env, timeout=120)
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and len(lines) == 1 and lines[0].startswith("ERROR: cannot write")
    assert os.listdir(out) == []


def test_library_refuses_zero_games(tmp_path, random_weights):
    with pytest.raises(SelfplayError, match="at least 1"):
        play_selfplay(random_weights(1, 8), str(tmp_path / "z"), 0, cpu_only=True)


def test_resign_report_counts_false_resignations(tmp_path, capsys):
    from leelaz.selfplay.resign import analyse, read_games
    folder = str(tmp_path)
    w1 = [0.5] * 100
    w1[50] = 0.001  # move 50: the engine may not resign yet (only after move 90)
    w1[95] = 0.03  # White to move at 95 (odd): White would resign at 5%; Black won: right
    w1[96] = 0.02  # Black to move at 96: Black would resign at 2.5%; Black won: wrong
    _debug_game(folder, "000000-aaaaaaaa", 0, w1, "B+Resign")
    _debug_game(folder, "000001-aaaaaaaa", 5, [0.001] * 100, "B+3.5")  # could resign: skipped
    _debug_game(folder, "000002-aaaaaaaa", 0, [0.2] * 120, "W+0.5")  # never below 20%
    games, seen = read_games(folder)
    assert seen == 3 and len(games) == 2
    rows = {round(r.threshold, 3): r for r in analyse(games, (0.01, 0.025, 0.05, 0.25))}
    assert (rows[0.01].resigned, rows[0.01].wrong) == (0, 0)
    assert (rows[0.025].resigned, rows[0.025].wrong, rows[0.025].wrong_black) == (1, 1, 1)
    assert rows[0.025].false_rate == 0.5
    assert (rows[0.05].resigned, rows[0.05].wrong) == (1, 0)
    # at 25%: game 1 as at 5% (right); game 3 resigns at move 91 (White to move, 0.2) and
    # White won: wrong
    assert (rows[0.25].resigned, rows[0.25].wrong, rows[0.25].wrong_white) == (2, 1, 1)
    assert run_verb(["selfplay", "--resign-report", folder]) == 0
    out = capsys.readouterr().out
    assert "2 no-resign games of 3" in out
    assert re.search(r"\n\s+5%\s+1\s+0\s", out), out


def test_a_store_clears_leftovers_of_dead_writers_only(tmp_path):
    """Writers share a folder (a match's shards): a store opening there removes the temporary
    files of a dead process of this host, never those of a live one, nor of a process of
    another host (a Ray node), which it cannot look at."""
    import socket

    from leelaz.selfplay.store import GameStore

    gone = subprocess.Popen(["true"])  # a process id that has ended
    gone.wait()
    writers = {"aaaaaaaa": f"{gone.pid} {socket.gethostname()}",  # dead, here
               "bbbbbbbb": f"{gone.pid}",  # dead, written before pid files named the host
               "cccccccc": f"{os.getpid()} {socket.gethostname()}",  # alive, here
               "dddddddd": f"{gone.pid} another-host.invalid"}  # elsewhere
    for token, text in writers.items():
        (tmp_path / f".{token}.pid").write_text(text + "\n")
        (tmp_path / f".000001-{token}.sgf.tmp").write_text("(;")
    store = GameStore(str(tmp_path))
    try:
        left = sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
        assert left == [".000001-cccccccc.sgf.tmp", ".000001-dddddddd.sgf.tmp"]
        assert (tmp_path / f".{store.token}.pid").read_text().split() == \
            [str(os.getpid()), socket.gethostname()]
    finally:
        store.close()
