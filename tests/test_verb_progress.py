"""What `leelaz selfplay`, `match` and `dump-supervised` tell a user while they work: a bar in
moves with the time left (on a terminal), a line at the start of a run that will take long,
readable summaries, and a help text for every option."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

import click
import pytest

from paths import REPO
from test_match import FAKE

VERB = [sys.executable, "-m", "leelaz"]
ENV = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="160")
#: tqdm's bar in moves with its time left: `12/500 [00:01<00:40, 11.5move/s` (or `s/move`)
MOVE_BAR = re.compile(r"\d+/\d+ \[[0-9:]+<[0-9:]+, +[0-9.]+(move/s|s/move)")


def _with_terminal(args, timeout=120) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (where the bar shows): (code, stdout, terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # 160 columns
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    seen = []

    def read():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=timeout)
    reader.join(10)
    os.close(master)
    return proc.returncode, out, b"".join(seen).decode("utf-8", "replace")


@pytest.mark.parametrize("verb", ["selfplay", "match", "dump-supervised"])
def test_every_option_has_a_help_text(verb):
    import importlib
    module = {"selfplay": "leelaz.tools.selfplay", "match": "leelaz.tools.match",
              "dump-supervised": "leelaz.tools.dump_supervised"}[verb]
    command = importlib.import_module(module).command
    bare = [param.opts for param in command.params
            if isinstance(param, click.Option) and not (param.help or "").strip()]
    assert not bare, f"{verb}: options without a help text: {bare}"


def test_selfplay_shows_moves_and_the_time_left_on_a_terminal(tmp_path, random_weights):
    code, out, terminal = _with_terminal(VERB + [
        "selfplay", "--games", "3", "--parallel", "1", "--out", str(tmp_path / "g"), "-w",
        random_weights(1, 8), "-v", "8", "--cpu-only", "--max-moves", "200"])
    assert code == 0, terminal
    assert MOVE_BAR.search(terminal), terminal[-2000:]
    assert re.search(r"[0-3]/3 games", terminal), terminal[-2000:]
    assert "3 games in" in out


def test_a_rerun_of_a_finished_selfplay_says_there_was_nothing_to_play(tmp_path,
                                                                       random_weights):
    args = VERB + ["selfplay", "--games", "1", "--out", str(tmp_path / "g"), "-w",
                   random_weights(1, 8), "-v", "2", "--cpu-only", "--max-moves", "20", "-q"]
    first = subprocess.run(args, env=ENV, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(args, env=ENV, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "moves/s" not in again.stdout and "0.0 s" not in again.stdout, again.stdout
    assert again.stdout.strip() == (f"1 games in {tmp_path / 'g'}: they were all there "
                                    "already; nothing to play (ask for more with --games)")


def test_a_long_selfplay_says_so_at_its_start(tmp_path, random_weights):
    """The defaults (1601 visits) with the shipped 6x128 network on the CPU: hours, said
    before the first move; a small run says nothing."""
    long = subprocess.Popen(VERB + ["selfplay", "--games", "4", "--out", str(tmp_path / "long"),
                                    "--cpu-only"],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(120, long.kill)  # no note: the run would go on for hours
    timer.start()
    try:
        first = long.stderr.readline()  # the note comes before the first move
    finally:
        timer.cancel()
        long.kill()
        long.wait()
    assert re.match(r"selfplay: 4 games of about 250 moves at 1601 visits take about "
                    r"[0-9.]+ (min|h|days) here \(6x128 on numpy: [0-9.]+ s of search a move\); "
                    r"fewer visits \(e\.g\. -v 100\)", first), first
    short = subprocess.run(VERB + ["selfplay", "--games", "1", "--out", str(tmp_path / "short"),
                                   "-w", random_weights(1, 8), "-v", "2", "--cpu-only",
                                   "--max-moves", "20"],
                           env=ENV, capture_output=True, text=True, timeout=120)
    assert short.returncode == 0 and short.stderr == "", short.stderr


def test_match_shows_moves_and_the_time_left_on_a_terminal(tmp_path):
    engine = tmp_path / "fake_engine.py"
    engine.write_text(FAKE)
    code, out, terminal = _with_terminal(VERB + [
        "match", "--engine1", f"{sys.executable} {engine} play", "--engine2",
        f"{sys.executable} {engine} play", "--games", "3", "--max-moves", "40"])
    assert code == 0, terminal
    assert MOVE_BAR.search(terminal), terminal[-2000:]
    assert "engine1: " in out


def test_dump_supervised_names_its_skipped_games_in_words(tmp_path):
    from leelaz.tools.dump_supervised import skipped_text
    assert skipped_text({}) == "none skipped"
    assert skipped_text({"parse": 1, "result": 2}) == "3 skipped (result 2, parse 1)"
    games = ["(;GM[1]FF[4]SZ[19]KM[7.5]RE[B+R];B[pd];W[dp])\n",
             "(;GM[1]FF[4]SZ[19]KM[7.5];B[pd];W[dp])\n",  # no result
             "(;GM[1]FF[4]SZ[19]KM[7.5]RE[W+2.5];B[pd];W[dd])\n"]
    (tmp_path / "few.sgf").write_text("".join(games))
    done = subprocess.run(VERB + ["dump-supervised", str(tmp_path / "few.sgf"), "-o",
                                  str(tmp_path / "out"), "-j", "1"],
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "3 games, 2 dumped" in last and "1 skipped (result 1)" in last, last
    assert "{" not in last
