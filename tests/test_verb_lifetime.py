"""Two runs into one output folder, and a SIGKILLed run's children: `leelaz selfplay` and
`leelaz dump-supervised`, as real processes.

- Two `selfplay` into one `--out` make exactly the games asked for, no game twice (a run takes
  a lock on the folder; the second is refused with one line, or finds the games done).
- A SIGKILLed `dump-supervised` or `selfplay --workers` leaves no child process behind: its
  pool workers die with it, and a rerun finds the folder free at once.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from paths import REPO
from leelaz.game.coords import BLACK, sgf_vertex
from leelaz.game.state import GameState

VERB = [sys.executable, "-m", "leelaz"]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _sgfs(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "*.sgf")))


def test_two_selfplay_runs_into_one_folder_make_the_games_asked_for(tmp_path, random_weights):
    out = tmp_path / "shared"
    args = VERB + ["selfplay", "--games", "6", "--parallel", "2", "--out", str(out), "-w",
                   random_weights(1, 8), "-v", "4", "--cpu-only", "--max-moves", "60", "-q",
                   "-s", "7"]
    first = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    second = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    results = [p.communicate(timeout=300) + (p.returncode,) for p in (first, second)]
    refused = 0
    for stdout, stderr, code in results:
        if code != 0:
            lines = stderr.strip().splitlines()
            assert code == 1 and len(lines) == 1, stderr
            assert lines[0].startswith("ERROR: another leelaz selfplay is writing into"), stderr
            assert str(out) in lines[0]
            refused += 1
    assert refused <= 1
    sgfs = _sgfs(out)
    assert len(sgfs) == 6
    chunks = [c for c in glob.glob(str(out / "*.txt.0.gz")) if ".debug." not in c]
    assert len(chunks) == 6
    # no game twice: the same seed replays game i byte for byte in both runs
    digests = {hashlib.sha256(gzip.decompress(open(c, "rb").read())).hexdigest()
               for c in chunks}
    assert len(digests) == 6


def _random_game_sgf(rng: random.Random, moves: int) -> str:
    """A legal game of `moves` random moves with a result: one SGF game on one line."""
    state = GameState(komi=7.5)
    body = []
    for _ in range(moves):
        color = state.to_move
        legal = [v for v in state.legal_moves(color)]
        vertex = rng.choice(legal)
        state.play(color, vertex)
        body.append(f";{'B' if color == BLACK else 'W'}[{sgf_vertex(vertex)}]")
    return "(;GM[1]FF[4]SZ[19]KM[7.5]RE[B+R]" + "".join(body) + ")\n"


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """An SGF collection that takes dump-supervised well over the test's few seconds."""
    rng = random.Random(3)
    games = [_random_game_sgf(rng, 150) for _ in range(4)]
    path = tmp_path_factory.mktemp("sgf") / "many.sgf"
    path.write_text("".join(games[i % 4] for i in range(6000)))
    return path


def _start_dump(collection, out):
    """A dump-supervised run, returned once its pool worker has written a chunk (busy)."""
    args = VERB + ["dump-supervised", str(collection), "-o", str(out), "-j", "1", "--seed", "1"]
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not glob.glob(str(out / "many.*.gz")):
        time.sleep(0.05)
    assert glob.glob(str(out / "many.*.gz")), "no chunk written in 120 s"
    return proc, args


def test_a_sigkilled_dump_supervised_leaves_no_worker_writing(tmp_path, collection):
    out = tmp_path / "chunks"
    proc, _ = _start_dump(collection, out)
    try:
        children = _children(proc.pid)
        assert children
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _wait_gone(children, 3.0)
        assert not left, f"workers {left} outlived their SIGKILLed parent"
        before = {p: os.stat(p).st_mtime_ns for p in glob.glob(str(out / "*"))}
        time.sleep(1.0)
        after = {p: os.stat(p).st_mtime_ns for p in glob.glob(str(out / "*"))}
        assert before == after  # nothing writes into the folder any more
    finally:
        for pid in _children(proc.pid) if proc.poll() is None else []:
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_second_dump_supervised_into_a_busy_folder_is_refused(tmp_path, collection):
    out = tmp_path / "chunks"
    proc, args = _start_dump(collection, out)
    try:
        busy = subprocess.run(args, env=ENV, capture_output=True, text=True, timeout=120)
        assert busy.returncode == 1 and busy.stderr.strip() == (
            f"ERROR: another leelaz dump-supervised is writing into {out}: wait for it to "
            "finish, or give another folder"), busy.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_sigkilled_selfplay_leaves_no_worker_playing(tmp_path, random_weights):
    out = tmp_path / "workers"
    args = VERB + ["selfplay", "--games", "400", "--workers", "2", "--parallel", "2", "--out",
                   str(out), "-w", random_weights(1, 8), "-v", "4", "--cpu-only",
                   "--max-moves", "40", "-q"]
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_sgfs(out)) < 2:
            time.sleep(0.05)
        workers = [p for p in _children(proc.pid)]
        assert len(_sgfs(out)) >= 2 and workers
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _wait_gone(workers, 3.0)
        assert not left, f"workers {left} outlived their SIGKILLed parent"
        games = len(_sgfs(out))
        time.sleep(1.0)
        assert len(_sgfs(out)) == games
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_seconds_stops_a_move_of_unlimited_visits(tmp_path, random_weights):
    """`-v 0` (no limit) makes a move that never ends by itself: --seconds still stops the
    run, dropping the game in flight."""
    out = tmp_path / "unlimited"
    began = time.monotonic()
    done = subprocess.run(VERB + ["selfplay", "--games", "1", "--out", str(out), "-w",
                                  random_weights(1, 8), "-v", "0", "--cpu-only", "-q",
                                  "--seconds", "2"],
                          env=ENV, capture_output=True, text=True, timeout=60)
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    assert took < 30, took
    assert _sgfs(out) == []
    assert "0 games in" in done.stdout
