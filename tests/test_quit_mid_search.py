"""`quit` sent while a genmove is searching is answered promptly.

Sabaki kills an engine that has not quit 3 s after `quit`. Commands still run in order, so the
genmove is answered first (with the best move so far), then quit. The clock below would let the
genmove think for about 30 s; the bound of 10 s leaves room for a loaded CI machine while
still failing if the search ignores the waiting quit.
"""

from __future__ import annotations

import subprocess
import sys
import time


def test_quit_cuts_a_long_genmove_short(random_weights):
    net = random_weights(1, 8)
    proc = subprocess.Popen([sys.executable, "-m", "leelaz", "-g", "-q", "--cpu-only",
                             "--noponder", "-w", net],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    proc.stdin.write("1 time_settings 0 30 1\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "=1 \n" and proc.stdout.readline() == "\n"
    start = time.monotonic()
    proc.stdin.write("2 genmove b\n3 quit\n")
    proc.stdin.flush()
    out, _ = proc.communicate(timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0
    replies = [r for r in out.split("\n\n") if r]
    assert replies[0].startswith("=2 ") and replies[1] == "=3 ", replies
    assert elapsed < 10, f"quit took {elapsed:.1f} s after a genmove"
