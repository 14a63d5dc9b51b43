"""Files and streams that must not take the engine down.

A failing or FIFO log file, a closed stderr, a FIFO, /dev/zero or a gzip bomb given to
dump_supervised or loadsgf, a device node or FIFO named by printsgf, a dump_supervised killed
mid-write, and a very long input line: each costs an error reply or one line on stderr,
never a crash, a hang or a lost reply.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import subprocess
import sys
import threading
import time

import pytest

from gtp_session import make_engine, run_script

GAME = "(;GM[1]SZ[19]KM[7.5]RE[B+R];B[pd];W[dp];B[qp];W[dd])\n"


def _engine_process(args, stderr=subprocess.PIPE):
    return subprocess.Popen([sys.executable, "-m", "leelaz", "--gtp", "--cpu-only",
                             "--noponder", "-t", "1"] + args,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                            text=True)


# ---- the log file -----------------------------------------------------------------------------

def test_a_full_disk_under_the_log_costs_one_line(random_weights):
    """/dev/full: every write fails with ENOSPC, as on a full disk."""
    proc = _engine_process(["-v", "20", "-w", random_weights(1, 8), "-l", "/dev/full"])
    out, err = proc.communicate("genmove b\nname\nquit\n", timeout=60)
    assert proc.returncode == 0, err
    replies = [r for r in out.split("\n\n") if r]
    assert re.fullmatch(r"= [A-T]\d+", replies[0]) and replies[1:] == ["= Leela Zero", "= "]
    assert len(re.findall("Cannot write the log file /dev/full .*logging stopped", err)) == 1
    assert "Traceback" not in err and "internal error" not in out


def test_a_fifo_log_with_no_reader_does_not_hang_the_start(tmp_path, random_weights):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    proc = _engine_process(["-w", random_weights(1, 8), "-l", str(fifo)])
    out, err = proc.communicate("protocol_version\nquit\n", timeout=30)
    assert out == "= 2\n\n= \n\n" and "Cannot open the log file" in err


def test_an_unopenable_log_is_not_fatal(tmp_path, random_weights):
    proc = _engine_process(["-w", random_weights(1, 8), "-l", str(tmp_path / "no" / "log")])
    out, err = proc.communicate("protocol_version\nquit\n", timeout=30)
    assert out == "= 2\n\n= \n\n" and "Cannot open the log file" in err


# ---- a client that closes our stderr ----------------------------------------------------------

def test_a_closed_stderr_loses_no_reply(random_weights):
    """The genmove's statistics go to a closed stderr; its reply still comes, and the engine
    keeps serving."""
    proc = _engine_process(["-v", "30", "-w", random_weights(1, 8)])
    proc.stdin.write("protocol_version\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "= 2\n" and proc.stdout.readline() == "\n"
    proc.stderr.close()  # the client stops listening to stderr
    out, _ = proc.communicate("genmove b\nshowboard\nname\nquit\n", timeout=60)
    replies = [r for r in out.split("\n\n") if r]
    assert re.fullmatch(r"= [A-T]\d+", replies[0]), replies
    assert replies[1:] == ["= ", "= Leela Zero", "= "] and proc.returncode == 0


# ---- input files: dump_supervised and loadsgf ------------------------------------------------

def test_dump_supervised_refuses_a_fifo_and_dev_zero_and_quit_is_answered(tmp_path):
    fifo = tmp_path / "games.fifo"
    os.mkfifo(fifo)  # no writer: reading it would wait for ever
    out, err = run_script(f"1 dump_supervised {fifo} {tmp_path}/out\n"
                          f"2 dump_supervised /dev/zero {tmp_path}/out\n3 quit\n",
                          _training_engine())
    assert out == "?1 cannot read file: " + f"{fifo}: cannot read: not a regular file\n\n" \
        "?2 cannot read file: /dev/zero: cannot read: not a regular file\n\n=3 \n\n"
    assert not list(tmp_path.glob("out*"))


def test_dump_supervised_input_is_bounded(tmp_path, monkeypatch):
    from leelaz.game import sgf
    monkeypatch.setattr(sgf, "COLLECTION_MAX_BYTES", 1 << 20)
    monkeypatch.setattr(sgf.read_text, "__defaults__", (1 << 20,))
    bomb = tmp_path / "bomb.sgf.gz"
    bomb.write_bytes(gzip.compress(GAME.encode() * 100_000))  # 5 MB of text from 30 kB
    out, _ = run_script(f"dump_supervised {bomb} {tmp_path}/out\n", _training_engine())
    assert out.startswith("? cannot read file:") and "more than 1 MiB" in out


def _training_engine():
    from leelaz.gtp import training_commands
    engine, _, _ = make_engine()
    training_commands.register(engine)
    return engine


def test_loadsgf_bounds_gzip_and_size(tmp_path):
    from leelaz.game.sgf import GAME_MAX_BYTES
    bomb = tmp_path / "bomb.sgf"  # gzip recognised by its bytes, not its name
    bomb.write_bytes(gzip.compress(b"(;GM[1]SZ[19]C[" + b"x" * (GAME_MAX_BYTES + 1) + b"])"))
    assert os.path.getsize(bomb) < 100_000
    big = tmp_path / "big.sgf"
    big.write_bytes(b"(;GM[1]SZ[19]" + b";B[aa]" * (GAME_MAX_BYTES // 6) + b")")
    good = tmp_path / "good.sgf"
    good.write_text(GAME)
    out, err = run_script(f"1 loadsgf {bomb}\n2 loadsgf {big}\n3 loadsgf {good}\n")
    assert out == "?1 cannot load file\n\n?2 cannot load file\n\n=3 \n\n\n"  # \n: end of input
    assert err.count(f"more than {GAME_MAX_BYTES >> 20} MiB of SGF text") == 2


# ---- what printsgf writes -------------------------------------------------------------------

def test_printsgf_refuses_a_fifo_and_writes_through_a_symlink(tmp_path):
    fifo = tmp_path / "game.fifo"
    os.mkfifo(fifo)
    real = tmp_path / "real.sgf"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.sgf"
    link.symlink_to(real)
    out, _ = run_script(f"1 printsgf {fifo}\n2 play b q16\n3 printsgf {link}\n")
    assert out == "?1 cannot write file\n\n=2 \n\n=3 \n\n\n"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
    assert ";B[pd]" in real.read_text() and (real.stat().st_mode & 0o777) == 0o600


# ---- dump_supervised after a SIGKILL ---------------------------------------------------------

def test_a_rerun_after_a_kill_removes_partial_chunks_and_names_stale_ones(tmp_path):
    """What a SIGKILL mid-write leaves: hidden temporaries; what a longer earlier run leaves:
    chunks this run does not write. The first are removed, the second named."""
    games = tmp_path / "games.sgf"
    games.write_text(GAME * 3)
    out_prefix = tmp_path / "out"
    (tmp_path / ".out.1.gz.x8f3k2.tmp").write_bytes(b"\x1f\x8b half a chunk")
    (tmp_path / "out.4.gz").write_bytes(gzip.compress(b"an earlier run's chunk"))
    out, err = run_script(f"dump_supervised {games} {out_prefix}\n", _training_engine())
    assert out == "= \n\n\n"
    assert sorted(os.listdir(tmp_path)) == ["games.sgf", "out.0.gz", "out.4.gz"]
    assert "Removed 1 partial chunk file(s) left by an interrupted run: .out.1.gz.x8f3k2.tmp" \
        in err
    assert f"1 chunk file(s) from an earlier run remain beside this run's 1: {out_prefix}.4.gz" \
        in err


def test_a_real_sigkill_leaves_only_what_a_rerun_cleans(tmp_path, tygem_dir):
    """Kill dump_supervised mid-way on a real collection, then rerun it: the rerun's chunks
    are the only files besides the earlier run's complete ones, and none is partial."""
    source = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    out_prefix = tmp_path / "out"
    script = (f"import sys; from leelaz.training.supervised import dump_supervised\n"
              f"dump_supervised({str(source)!r}, {str(out_prefix)!r}, log=lambda s: None,"
              f" seed=1)\n")
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("out.2.gz")) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    lines: list[str] = []
    from leelaz.training.supervised import dump_supervised
    small = tmp_path / "small.sgf"
    small.write_text(GAME * 40)
    stats = dump_supervised(str(small), str(out_prefix), log=lines.append, seed=1)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]
    assert len(stats.chunks) == 2
    earlier = {p.name for p in tmp_path.glob("out.*.gz")} - {"out.0.gz", "out.1.gz"}
    assert earlier and any("from an earlier run remain" in line for line in lines)
    for p in tmp_path.glob("out.*.gz"):
        gzip.decompress(p.read_bytes())  # every chunk complete


# ---- a very long input line -----------------------------------------------------------------

def _seconds_to_read(length: int) -> float:
    """Best of three: a line of `length` bytes through the real reader thread (from a pipe)
    until it is queued whole."""
    best = float("inf")
    for _ in range(3):
        engine, _, _ = make_engine()
        r, w = os.pipe()
        line = b"x" * length + b"\n"

        def feed():
            with os.fdopen(w, "wb") as f:
                f.write(line)

        writer = threading.Thread(target=feed)
        start = time.perf_counter()
        writer.start()
        with os.fdopen(r, "rb") as f:
            reader = engine.start_reader(f)
            got = engine._queue.get()
            best = min(best, time.perf_counter() - start)
            writer.join()
            reader.join()  # it reads to the end of input before the pipe is closed
        assert len(got) == length + 1
    return best


def test_reading_a_long_line_is_linear():
    """The reader appended each 64 kB to the pending bytes and split them all again: a
    64 MB line took 30 s. 16x the length must cost about 16x, far from 256x."""
    short, long = _seconds_to_read(1 << 20), _seconds_to_read(16 << 20)
    assert long < 40 * short + 0.1, (short, long)


def test_a_long_line_gets_its_reply():
    out, _ = run_script("x" * (8 << 20) + "\n1 name\n" + "  ".join(["2", "known_command",
                                                                   "\tplay"]) + "\n")
    assert out == "? unknown command\n\n=1 Leela Zero\n\n=2 true\n\n\n"
