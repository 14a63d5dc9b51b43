"""`quit` sent while a genmove is searching is answered promptly; a pipelined one is not.

Sabaki kills an engine that has not quit 3 s after `quit`. Commands still run in order, so the
genmove is answered first (with the best move so far), then quit. The clock below would let the
genmove think for about 30 s; the bound of 10 s leaves room for a loaded CI machine while
still failing if the search ignores the quit. A script that pipes `genmove` and `quit` together
must still get a full-strength genmove (Leela Zero's behaviour).
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
    proc.stdin.write("2 genmove b\n")
    proc.stdin.flush()
    time.sleep(1.0)  # the search is under way when the GUI closes the engine
    proc.stdin.write("3 quit\n")
    proc.stdin.flush()
    out, _ = proc.communicate(timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0
    replies = [r for r in out.split("\n\n") if r]
    assert replies[0].startswith("=2 ") and replies[1] == "=3 ", replies
    assert elapsed < 10, f"quit took {elapsed:.1f} s after a genmove"


def test_a_quit_already_queued_does_not_cut_the_genmove(random_weights):
    """In-process: the whole script is queued before the genmove runs; the visit cap (not the
    quit) ends the search."""
    from gtp_session import make_engine, run_script
    from leelaz.cli import parse_args
    from leelaz.gtp import search_commands
    from leelaz.nn.network import Network

    net = random_weights(1, 8)
    engine, _, _ = make_engine(parse_args(["-g", "-t", "1", "--cpu-only", "-w", net, "-v", "40",
                                           "--noponder", "--timemanage", "off"]))
    engine.network = Network.from_file(net)
    search_commands.register(engine)
    out, err = run_script("genmove b\nquit\n", engine)
    assert out.startswith("= ") and "40 visits" in err, err[-400:]
