"""leelaz bench review on the CPU: both sides run on the same games, and Leela Zero's new
playouts a position are read from its own stderr (the figures themselves belong to the
benchmark, not to a test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from paths import REPO

#: Twelve moves of a 9-dan opening: thirteen positions.
GAME = ("(;GM[1]FF[4]SZ[19]KM[6.5];B[qd];W[dp];B[dd];W[pp];B[kc];W[cf];B[fd];W[bd];B[cc];"
        "W[ci];B[qn];W[nq])\n")


def test_bench_review_runs_both_sides_and_counts_leela_zeros_playouts(tmp_path, lz_binary,
                                                                     random_weights):
    game = tmp_path / "game.sgf"
    game.write_text(GAME)
    visits = 6
    run = subprocess.run(
        [sys.executable, "-m", "leelaz", "bench", "review", "--sgf", str(game), "-w",
         random_weights(1, 8), "-v", str(visits), "--reference", lz_binary],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert re.search(r"^leelaz review +13 ", out, re.M)
    assert re.search(r"^LZ 0\.17, GoReviewPartner's loop +13 ", out, re.M)
    # Read from Leela Zero's own lines (its two threads overshoot a visit cap on a tiny net,
    # so the figure is not bounded by -v here): none read would be 0.
    new = re.search(r"^Leela Zero: (\d+) new playouts a position", out, re.M)
    assert new and int(new.group(1)) > 0
    assert re.search(r"as fast \([\d.]+x in CPU seconds", out)
