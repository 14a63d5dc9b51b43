"""GoReviewPartner's review, headless: the shape of its variations, ours against Leela Zero's.

GoReviewPartner (leela_zero_analysis.py) does not use lz-analyze: it sends `genmove`, then
drains the engine's stderr and makes a variation of every line that contains ` ->` and starts
with a space (Leela Zero's dump_stats lines), then `undo` and the game's move. Its profile
starts the engine with `--gtp --noponder --weights FILE` and `time_settings 0 T 1`; here a
visit cap (the same for both engines) stands in for T seconds, to keep the test short.

The engine starts without --cpu-only, as GoReviewPartner starts it: on a machine whose only
OpenCL device is a CPU (PoCL), the engine falls back to NumPy and must then search as with
--cpu-only. It used to keep the GPU batch policy and gave ten 1-9-visit variations per move
where Leela Zero gives 2-4.
"""

from __future__ import annotations

import gzip
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from paths import REPO

MOVES = 16
VISITS = 50
COLUMNS = "abcdefghjklmnopqrst"


def _game_moves(tygem_dir) -> list[tuple[str, str]]:
    """The first MOVES moves of the first 9-dan game, as (colour, GTP vertex)."""
    from leelaz.game.sgf import parse_game
    source = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    with gzip.open(source, "rt", encoding="utf-8", errors="replace") as f:
        game = parse_game(f.readline())
    moves = []
    node = game.root
    while node.children and len(moves) < MOVES:
        node = node.children[0]
        for colour in ("B", "W"):
            value = node.get(colour)
            if value and len(value) == 2:
                column, row = COLUMNS[ord(value[0]) - 97].upper(), 19 - (ord(value[1]) - 97)
                moves.append((colour.lower(), f"{column}{row}"))
    return moves


def _variation_lines(buff: list[str]) -> list[str]:
    """GoReviewPartner's test for a variation line (get_all_leela_zero_moves)."""
    return [line for line in buff if " ->" in line and line[0] == " "]


def _review(argv: list[str], moves, env=None) -> list[int]:
    """Variations per move of a GoReviewPartner review: genmove, drain stderr, undo, play."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    errors: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [errors.put(x) for x in iter(proc.stderr.readline, "")],
                     daemon=True).start()

    def ask(command: str) -> str:
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
        reply = proc.stdout.readline()
        assert proc.stdout.readline() == "\n"
        return reply.strip()

    def drain() -> list[str]:
        lines = []
        while not errors.empty():
            lines.append(errors.get())
        return lines

    try:
        assert ask("name") == "= Leela Zero"  # GRP refuses any other name
        ask("time_settings 0 5 1")
        counts = []
        for colour, vertex in moves:
            drain()
            assert ask(f"genmove {colour}").startswith("= ")
            time.sleep(0.1)  # GRP sleeps 0.1 s, then drains until nothing more comes
            buff = drain()
            while True:
                time.sleep(0.1)
                more = drain()
                if not more:
                    break
                buff += more
            counts.append(len(_variation_lines(buff)))
            assert ask("undo") == "="
            assert ask(f"play {colour} {vertex}") == "="
        ask("quit")
    finally:
        proc.kill()
        proc.wait()
    return counts


def test_a_review_has_leela_zeros_shape(lz_binary, tygem_dir, tmp_path):
    moves = _game_moves(tygem_dir)
    assert len(moves) == MOVES
    net = str(REPO / "weights" / "leelaz-6x128.txt.gz")
    env = dict(os.environ, PYTHONPATH=str(REPO), XDG_DATA_HOME=str(tmp_path / "data"))
    ours = [sys.executable, "-m", "leelaz", "--gtp", "--noponder", "-v", str(VISITS),
            "-w", net]
    theirs = [lz_binary, "--gtp", "--noponder", "--cpu-only", "-v", str(VISITS), "-w", net]
    with ThreadPoolExecutor(2) as pool:
        ours_job = pool.submit(_review, ours, moves, env)
        theirs_job = pool.submit(_review, theirs, moves)
        our_counts, their_counts = ours_job.result(), theirs_job.result()
    our_mean, their_mean = sum(our_counts) / MOVES, sum(their_counts) / MOVES
    assert 2 <= their_mean <= 4, their_counts  # the oracle's shape, as the issue reports it
    assert 2 <= our_mean <= 4 and abs(our_mean - their_mean) <= 1, (our_counts, their_counts)
    assert max(our_counts) <= max(their_counts) + 2, (our_counts, their_counts)
