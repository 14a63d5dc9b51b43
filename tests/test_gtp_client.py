"""leelaz.gtp.client against a scripted engine whose every byte is known: replies with and
without ids, `?` errors, lines before a reply, multi-line and extra-blank-line replies, stderr
read at the same time, timeouts, an engine that dies, and the shutdown."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from leelaz.gtp.client import GtpClient, GtpErrorReply, GtpFailure, GtpTimeout, parse_head

ENGINE = textwrap.dedent(r'''
    import sys, time
    for line in sys.stdin:
        words = line.split()
        ident = words[0] if words and words[0].isdigit() else ""
        if ident:
            words = words[1:]
        name = words[0] if words else ""
        if name == "quit":
            sys.stdout.write(f"={ident}\n\n"); sys.stdout.flush(); sys.exit(7)
        elif name == "two":
            sys.stdout.write(f"={ident} first\nsecond\n\n")
        elif name == "bad":
            sys.stdout.write(f"?{ident} no such thing\n\n")
        elif name == "chatty":
            sys.stdout.write(f"info 1\ninfo 2\n={ident} done\n\n")
        elif name == "blanks":
            sys.stdout.write(f"={ident} a\n\n\n\n")
        elif name == "err":
            sys.stderr.write("line one\nthe end\n"); sys.stderr.flush()
            sys.stdout.write(f"={ident}\n\n")
        elif name == "slow":
            sys.stdout.flush(); time.sleep(5); sys.stdout.write(f"={ident} late\n\n")
        elif name == "die":
            sys.exit(3)
        else:
            sys.stdout.write(f"={ident} {' '.join(words[1:])}\n\n")
        sys.stdout.flush()
''')


@pytest.fixture
def engine_argv(tmp_path):
    path = tmp_path / "engine.py"
    path.write_text(ENGINE)
    return [sys.executable, str(path)]


def test_replies_ids_errors_and_lines_before(engine_argv):
    with GtpClient(engine_argv, numbered=True) as gtp:
        assert gtp.ask("echo hello  world") == "hello world"
        assert gtp.number == 1
        reply = gtp.reply("two")
        assert (reply.ok, reply.id, reply.text, reply.lines) == (True, 2, "first\nsecond",
                                                                  ["=2 first", "second"])
        with pytest.raises(GtpErrorReply, match="^no such thing$"):
            gtp.ask("bad")
        reply = gtp.reply("chatty")
        assert reply.before == ["info 1", "info 2"] and reply.text == "done"


def test_exchange_keeps_every_byte(engine_argv):
    with GtpClient(engine_argv) as gtp:
        assert gtp.exchange("blanks") == "= a\n\n\n\n"
        assert gtp.exchange("bad") == "? no such thing\n\n"
        assert gtp.ask("echo x") == "x"  # the fence's reply was consumed


def test_stderr_is_read_while_replies_come(engine_argv):
    with GtpClient(engine_argv, stderr="capture") as gtp:
        gtp.ask("err")
        assert gtp.stderr_until(r"the end\n", timeout=10) == "line one\nthe end\n"
        assert gtp.take_stderr() == ""
        with pytest.raises(GtpTimeout):
            gtp.stderr_until("never", timeout=0.2)


def test_stderr_to_a_log_file_and_merged(engine_argv, tmp_path):
    log = tmp_path / "engine.log"
    with GtpClient(engine_argv, stderr=str(log)) as gtp:
        gtp.ask("err")
    assert log.read_text() == "line one\nthe end\n"
    with GtpClient(engine_argv, stderr="stdout") as gtp:
        reply = gtp.reply("err")
        assert reply.before == ["line one", "the end"]


def test_timeout_death_and_shutdown(engine_argv):
    gtp = GtpClient(engine_argv)
    began = time.monotonic()
    with pytest.raises(GtpTimeout, match="slow"):
        gtp.ask("slow", timeout=0.3)
    assert time.monotonic() - began < 3
    gtp.restart()  # the late answer must not be read as the next reply
    assert gtp.ask("echo fresh") == "fresh"
    assert gtp.close() == 7  # quit answered, then the engine's own exit status
    with pytest.raises(GtpFailure, match="not running"):
        gtp.ask("echo again")
    gtp = GtpClient(engine_argv)
    with pytest.raises(GtpFailure, match="exited during 'die'"):
        gtp.ask("die")
    assert gtp.close() == 3
    with pytest.raises(GtpFailure, match="cannot start"):
        GtpClient(["/nonexistent/engine"])


def test_parse_head():
    assert parse_head("=12 text\n") == (True, 12, "text")
    assert parse_head("= \n") == (True, None, "")
    assert parse_head("?3\n") == (False, 3, "")
    assert parse_head("info move D4") is None
