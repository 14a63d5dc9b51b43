"""Random and malformed input never stops the engine, and every command gets one reply.

- 6,000 generated lines (bad colours, vertices like a0/z99/i5, huge numbers, unicode, missing
  arguments, unknown commands, control characters, ids) go through the real loop and its
  reader thread; the engine must finish, and the replies must come back one per command, in
  order (each command that carries an id must be answered with that id).
- A burst of 5,000 commands is written to a `python -m leelaz` subprocess without reading a
  single reply (replies of list_commands fill the stdout pipe long before the input ends):
  all answers must arrive, in order.
"""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
import threading

import pytest

from gtp_session import make_engine
from leelaz.gtp.protocol import EXIT, parse_line
from paths import REPO

COMMANDS = [
    "protocol_version", "name", "version", "known_command", "list_commands", "boardsize",
    "clear_board", "komi", "play", "showboard", "undo", "final_score", "final_status_list",
    "time_settings", "time_left", "fixed_handicap", "last_move", "move_history",
    "place_free_handicap", "set_free_handicap", "loadsgf", "printsgf", "kgs-time_settings",
    "kgs-game_over", "kgs-chat", "genmove", "lz-analyze", "heatmap", "dump_training",
    "lz-setoption", "lz-genmove_analyze", "kgs-genmove_cleanup", "lz-memory_report",
    "gomill-explain_last_move", "netbench", "dump_supervised",
    "PLAY", "Play", "playx", "pla", "", "#", "exit_not", "quitx", "known_commandx",
]
COLOURS = ["b", "w", "black", "white", "B", "WHITE", "x", "", "bw", "blackk", "0", "-1", "é"]
NUMBERS = ["0", "1", "2", "9", "10", "19", "-1", "-2147483649", "2147483648", "1e400", "nan",
           "inf", "-0", "3.5", "0x10", "99999999999999999999999999", "1" * 200, "+5", "--5",
           "180", "181", "400", "7.5", "-400.5", "1e-9", "١٢"]


def vertex(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return rng.choice("abcdefghjklmnopqrst") + str(rng.randint(1, 19))
    return rng.choice([
        "a0", "z99", "i5", "I5", "t20", "a-1", "pass", "PASS", "resign", "", "a", "1", "aa",
        "a19x", "A1", "T19", "u1", "a" + "9" * 50, "ä1", "a\u00001", "tt", "q16,d4", "a1:c3",
    ])


def junk(rng: random.Random) -> str:
    n = rng.randint(0, 12)
    pool = [chr(rng.randint(0, 0x7f)) for _ in range(n)]
    pool += [chr(rng.choice([0x00, 0x07, 0x0b, 0x0c, 0x0d, 0x1b, 0x7f, 0x85, 0xa0, 0x2028,
                             0xfeff, 0x4e2d, 0x1f600]))]
    rng.shuffle(pool)
    return "".join(c for c in pool if c != "\n")


def fuzz_line(rng: random.Random) -> str:
    name = rng.choice(COMMANDS)
    parts = [name]
    for _ in range(rng.choice([0, 0, 1, 2, 2, 3, 4, 6])):
        parts.append(rng.choice([
            lambda: rng.choice(COLOURS), lambda: vertex(rng), lambda: rng.choice(NUMBERS),
            lambda: junk(rng), lambda: rng.choice(["alive", "dead", "none", "absolute",
                                                   "canadian", "byoyomi", "all", "avg"]),
        ])())
    sep = rng.choice([" ", " ", " ", "  ", "\t", " \t "])
    line = sep.join(parts)
    r = rng.random()
    if r < 0.6:
        line = f"{rng.randint(0, 10**6)} {line}"
    elif r < 0.65:
        line = junk(rng) + line
    elif r < 0.7:
        line = line + junk(rng)
    if rng.random() < 0.05:
        line += "\r"
    return line


def safe(line: str) -> str | None:
    """Keep the fuzz from stopping the engine on purpose or writing outside the temp folder."""
    cmd = parse_line(line)
    if cmd is EXIT or (cmd is not None and cmd.name == "quit"):
        return None
    if cmd is not None and cmd.name in ("printsgf", "loadsgf", "dump_training",
                                         "dump_supervised") and cmd.args:
        return f"{cmd.id + ' ' if cmd.id else ''}{cmd.name} fuzz-file.sgf"
    return line


def reply_chunks(stream: str) -> list[str]:
    return [c for c in re.split(r"\n\n+", stream.strip("\n")) if c]


def full_engine():
    """Every command group the command line registers, with no network loaded."""
    from leelaz.cli import build_engine
    from leelaz.config import EngineConfig

    out, err = io.StringIO(), io.StringIO()
    return build_engine(EngineConfig(quiet=True, seed=1), out=out, err=err), out, err


@pytest.mark.parametrize("which", ["board commands", "all groups"])
def test_fuzz_lines_one_reply_each(which, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random(20190417)
    lines = [s for s in (safe(fuzz_line(rng)) for _ in range(6500)) if s is not None][:6000]
    assert len(lines) >= 5000
    expected = [parse_line(line) for line in lines]
    expected = [c for c in expected if c is not None]

    engine, out, err = make_engine() if which == "board commands" else full_engine()
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")
    thread = threading.Thread(target=engine.run, args=(io.BytesIO(data),), daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the engine hung"

    chunks = reply_chunks(out.getvalue())
    assert len(chunks) == len(expected)
    for cmd, chunk in zip(expected, chunks):
        head = chunk.split(" ", 1)[0].split("\n", 1)[0]
        assert head[0] in "=?", chunk
        assert head[1:] == (cmd.id or ""), (cmd, chunk)
    assert "internal error" not in out.getvalue(), err.getvalue()[-3000:]


def test_burst_of_pipelined_commands(tmp_path):
    n = 5000
    script = "".join(f"{i} {'list_commands' if i % 2 else 'play b pass'}\n" for i in range(n))
    env = dict(os.environ, HOME=str(tmp_path), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "leelaz", "-g", "-q"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    watchdog = threading.Timer(90, proc.kill)
    watchdog.start()
    try:
        proc.stdin.write(script.encode())  # no reply is read until every command is written
        proc.stdin.close()
        stream = proc.stdout.read().decode()
        proc.wait()
    finally:
        watchdog.cancel()
    assert proc.returncode == 0
    chunks = reply_chunks(stream)
    assert len(chunks) == n
    for i, chunk in enumerate(chunks):
        assert chunk.startswith(f"={i} "), chunk[:40]
    assert chunks[1].endswith("gomill-explain_last_move") or "kgs-game_over" in chunks[1]
