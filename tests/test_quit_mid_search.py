"""A `genmove` always gets its full search, whatever follows it and whenever that arrives.

Leela Zero finishes every command before it reads the next one: a script, a match runner or
a batch tool that pipes `genmove` then `quit` (or just closes its end) gets a full-strength
move. A GUI that sends `quit` during a genmove gets the move first (Sabaki kills the process
3 s after `quit`, which loses nothing). Pondering and lz-analyze still stop on any line
(tests/test_search_commands.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

VISITS = 300  # about a quarter of a second on the 1x8 net: quits at 0-200 ms land mid-search
#: When the quit line (or the end of input: None) is written after the genmove, in seconds.
DELAYS = [0.0, 0.05, 0.2, 0.5] * 4 + [None, None, 0.0, 0.05]


def _one_session(net: str, delay: float | None) -> tuple[str, str]:
    """Start the engine, wait until it answers (so the delay counts from the genmove, not
    from a start-up that is still loading), then pipe play/genmove and the quit."""
    proc = subprocess.Popen([sys.executable, "-m", "leelaz", "--gtp", "--noponder",
                             "--cpu-only", "-t", "1", "-s", "3", "-v", str(VISITS), "-w", net],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdin.write("protocol_version\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "= 2\n"
    proc.stdin.write("play b Q16\nplay w D4\ngenmove b\n")
    proc.stdin.flush()
    if delay is None:
        time.sleep(0.05)
        proc.stdin.close()  # end of input instead of quit
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=60)
        return out, err
    time.sleep(delay)
    out, err = proc.communicate("quit\n", timeout=60)
    return out, err


def test_genmove_gets_its_full_search_whenever_quit_or_end_of_input_arrives(random_weights):
    net = random_weights(1, 8)
    with ThreadPoolExecutor(4) as pool:
        sessions = list(pool.map(lambda d: _one_session(net, d), DELAYS))
    for delay, (out, err) in zip(DELAYS, sessions):
        stats = re.findall(r"^(\d+) visits, \d+ nodes", err, re.M)
        assert stats == [str(VISITS)], (delay, err[-600:])
        replies = [r for r in out.split("\n\n") if r]
        assert re.fullmatch(r"= [A-T]\d+", replies[2]), (delay, replies)  # the genmove
        if delay is not None:
            assert replies[3] == "= ", (delay, replies)  # then quit


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
