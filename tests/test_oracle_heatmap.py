"""Our network against the C++ Leela Zero 0.17 binary, through `heatmap`, on real positions.

Both engines get the same GTP commands: positions from the tygem 9-dan games (loadsgf at varied
move numbers, some followed by a pass), handicap positions (fixed_handicap, which anchors, and
set_free_handicap, which does not) with game moves after them; then `heatmap N` for N = 0..7 and
`heatmap average`. The binary runs once per network (--cpu-only, one thread); ours runs
in-process through our own GtpEngine (board commands + network commands). Tolerances: 1
per-mille per point, 1 on `pass:`, 0.001 on `winrate:`. Networks: random 1x8, 3x32 and 6x64
version-1 files and a 2x16 version-2 file (value = Black's; the engine flips it).
"""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import threading

import numpy as np
import pytest

from leelaz.game.sgf import split_games
from leelaz.gtp import board_commands, network_commands
from leelaz.gtp.engine import GtpEngine
from leelaz.nn.network import Network

HEATMAP = re.compile(r"((?:(?: *\d+ ){19}\n){19})pass: (\d+)\nwinrate: ([0-9.]+)\n")
HEATMAPS = [f"heatmap {n}" for n in range(8)] + ["heatmap average"]
MOVE = re.compile(r";([BW])\[([a-s]{2}|)\]")
COLUMNS = "ABCDEFGHJKLMNOPQRST"
STAR_POINTS = {f"{c}{r}" for c in "DKQ" for r in (4, 10, 16)}

NETS = [  # blocks, filters, version, positions used (all positions for the small ones)
    (1, 8, 1, None),
    (3, 32, 1, 25),
    (6, 64, 1, 12),
    (2, 16, 2, 30),
]


def gtp_move(point: str) -> str:
    if not point or point == "tt":
        return "pass"
    x, y = ord(point[0]) - ord("a"), 18 - (ord(point[1]) - ord("a"))
    return f"{COLUMNS[x]}{y + 1}"


@pytest.fixture(scope="module")
def positions(tygem_dir, tmp_path_factory):
    """Command lists, one per position (each starts from clear_board)."""
    folder = tmp_path_factory.mktemp("sgf")
    with gzip.open(tygem_dir / "tygem-9d-2010-03.sgf.gz", "rt", encoding="utf-8") as f:
        head = "".join(f.readline() for _ in range(100))  # one game per line
    games = [g for g in split_games(head) if len(MOVE.findall(g)) > 120][:40]
    assert len(games) == 40
    setups = []
    move_numbers = [0, 1, 2, 3, 7, 8, 9, 16, 29, 30, 31, 50, 77, 100, 120, 150, 199, 250]
    for i, game in enumerate(games):
        path = folder / f"g{i}.sgf"
        path.write_text(game)
        n = move_numbers[i % len(move_numbers)]
        moves = len(MOVE.findall(game))
        setups.append([f"loadsgf {path} {min(n, moves) + 1}"])
        if i % 4 == 1:  # just after a pass
            setups[-1].append("play b pass" if i % 8 == 1 else "play w pass")
        if i % 10 == 3:  # two passes in a row
            setups[-1] += ["play b pass", "play w pass"]
    for i, stones in enumerate([2, 3, 4, 5, 6, 7, 8, 9]):
        moves = [(c, gtp_move(p)) for c, p in MOVE.findall(games[i])[: 3 * i]]
        cmds = ["clear_board", f"fixed_handicap {stones}"]
        cmds += [f"play {c.lower()} {m}" for c, m in moves if m not in STAR_POINTS]
        setups.append(cmds)
    for i, extra in enumerate([0, 5, 11]):
        moves = [(c, gtp_move(p)) for c, p in MOVE.findall(games[10 + i])[4:4 + extra]]
        cmds = ["clear_board", "set_free_handicap D4 Q16 D16 Q4"]
        cmds += [f"play {c.lower()} {m}" for c, m in moves if m not in STAR_POINTS]
        setups.append(cmds)
    assert len(setups) >= 50
    return setups


def start_reference(lz_binary, weights, commands) -> threading.Thread:
    """Run the binary on the whole command list in a thread, while we compute ours."""
    def run():
        thread.result = subprocess.run(
            [lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", weights],
            input="\n".join(commands + ["quit"]) + "\n", capture_output=True, text=True,
            timeout=300)

    thread = threading.Thread(target=run, daemon=True)
    thread.result = None
    thread.start()
    return thread


def finish_reference(thread: threading.Thread) -> str:
    thread.join(timeout=300)
    r = thread.result
    assert r is not None, "the reference did not finish"
    assert r.returncode == 0, r.stderr[-2000:]
    assert "? " not in r.stdout, r.stdout
    return r.stderr


def run_ours(weights, commands) -> str:
    out, err = io.StringIO(), io.StringIO()
    engine = GtpEngine(out=out, err=err)
    engine.network = Network.from_file(weights, seed=1)
    board_commands.register(engine)
    network_commands.register(engine)
    engine.feed(line + "\n" for line in commands)
    engine.end_input()
    engine.run()
    assert "? " not in out.getvalue(), out.getvalue()
    return err.getvalue()


def blocks(stderr: str):
    found = HEATMAP.findall(stderr)
    return [(np.array(b.split(), dtype=int), int(p), float(w)) for b, p, w in found]


@pytest.mark.parametrize("blocks_, filters, version, limit", NETS,
                         ids=[f"{b}x{f}-v{v}" for b, f, v, _ in NETS])
def test_heatmaps_match_the_binary(lz_binary, random_weights, positions, blocks_, filters,
                                   version, limit):
    weights = random_weights(blocks_, filters, seed=blocks_ * 100 + filters, version=version)
    chosen = positions if limit is None else positions[::max(1, len(positions) // limit)]
    commands = [c for setup in chosen for c in setup + HEATMAPS]
    proc = start_reference(lz_binary, weights, commands)
    try:
        ours = blocks(run_ours(weights, commands))
    finally:
        theirs = blocks(finish_reference(proc))
    assert len(theirs) == len(ours) == len(chosen) * len(HEATMAPS)
    for i, ((tp, tpass, twin), (op, opass, owin)) in enumerate(zip(theirs, ours)):
        where = f"position {i // len(HEATMAPS)} {chosen[i // len(HEATMAPS)]}, " \
                f"{HEATMAPS[i % len(HEATMAPS)]}"
        assert np.abs(tp - op).max() <= 1, where
        assert abs(tpass - opass) <= 1, where
        assert abs(twin - owin) <= 0.001, where
    # The board must really vary: stones (zeros) and both colours to move occur.
    assert any((b[0] == 0).sum() > 50 for b in theirs)


@pytest.mark.parametrize("blocks_, filters", [(1, 16), (4, 48)])
def test_memory_report_matches_the_binary(lz_binary, random_weights, blocks_, filters):
    weights = random_weights(blocks_, filters, seed=9)
    commands = ["lz-memory_report", "heatmap", "lz-memory_report"]
    r = subprocess.run([lz_binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", weights],
                       input="\n".join(commands + ["quit"]) + "\n", capture_output=True,
                       text=True, timeout=120)
    out, err = io.StringIO(), io.StringIO()
    engine = GtpEngine(out=out, err=err)
    engine.network = Network.from_file(weights)
    network_commands.register(engine)
    engine.feed(line + "\n" for line in commands)
    engine.end_input()
    engine.run()
    assert "Network cache: 0\n\n\n= \n\n= Estimated" in r.stdout
    assert out.getvalue().split("\n\n")[:3] == r.stdout.split("\n\n")[:3]
