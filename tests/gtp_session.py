"""Helpers to drive GTP engines in tests: ours in-process, Leela Zero as a subprocess.

- `run_script(engine_or_none, text)` feeds a whole script (lines as one string) through our
  engine's real loop and returns (stdout, stderr).
- `split_replies(stdout)` cuts a GTP stream into replies (each ends with a blank line).
- `Session` keeps one in-process engine and answers `ask(line) -> (stdout, stderr)` per
  command, for tests that interleave commands and checks.
- `LzProcess` keeps one C++ Leela Zero process and answers `ask(line)` with the reply and the
  `ask_err(line, until)` also returns the stderr text it wrote, read by a thread until a
  pattern shows it is complete (`showboard()` uses the board's last line).
"""

from __future__ import annotations

import io
import os
import queue
import subprocess
import threading

from leelaz.config import EngineConfig


class _Buffer(io.StringIO):
    """A StringIO whose content can be taken (and cleared) between commands."""

    def take(self) -> str:
        text = self.getvalue()
        self.seek(0)
        self.truncate()
        return text


def make_engine(config: EngineConfig | None = None, register_board: bool = True, state=None):
    from leelaz.gtp.engine import GtpEngine

    out, err = _Buffer(), _Buffer()
    engine = GtpEngine(state=state, out=out, err=err, config=config or EngineConfig())
    if register_board:
        from leelaz.gtp import board_commands
        board_commands.register(engine)
    return engine, out, err


def run_script(text: str, engine=None, config: EngineConfig | None = None) -> tuple[str, str]:
    """Run a script through the engine loop (reader thread over a text stream)."""
    if engine is None:
        engine, out, err = make_engine(config)
    else:
        out, err = engine.out, engine.err
    engine.run(io.StringIO(text))
    return out.getvalue(), err.getvalue()


def split_replies(stream: str) -> list[str]:
    """`=1 a\\n\\n= \\n\\n` -> [`=1 a`, `= `]; multi-line replies stay whole."""
    replies = stream.split("\n\n")
    if replies and replies[-1].strip() == "":
        replies.pop()
    return [r.lstrip("\n") for r in replies]


class Session:
    """One in-process engine; `ask(line)` runs one command and returns (reply, stderr)."""

    def __init__(self, config: EngineConfig | None = None, state=None):
        self.engine, self.out, self.err = make_engine(config, state=state)

    def ask(self, line: str) -> tuple[str, str]:
        from leelaz.gtp.protocol import EXIT, parse_line

        cmd = parse_line(line)
        if cmd is not None and cmd is not EXIT:
            self.engine.execute(cmd)
        return self.out.take(), self.err.take()

    def reply(self, line: str) -> str:
        return self.ask(line)[0]


class LzProcess:
    """The C++ Leela Zero 0.17 binary, one process for many commands."""

    MARKER = "918273645 protocol_version"
    MARKER_REPLY = "=918273645 2\n\n"

    def __init__(self, binary: str, weights: str, extra: tuple[str, ...] = ()):
        args = [binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", weights, *extra]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self._err: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._drain_err, daemon=True).start()
        self._stdout = self.proc.stdout
        self.ask_err("protocol_version", r"Setting max tree size[^\n]*\n")  # drop start-up lines

    def _drain_err(self) -> None:
        for chunk in iter(lambda: os.read(self.proc.stderr.fileno(), 65536), b""):
            self._err.put(chunk)

    def _take_err(self) -> str:
        parts = []
        while True:
            try:
                parts.append(self._err.get_nowait())
            except queue.Empty:
                return b"".join(parts).decode("utf-8", "replace")

    def ask(self, line: str) -> str:
        """Send one command and return its reply exactly as sent, extra blank lines included
        (printsgf and time_left send more than one): a marker command with a unique id
        follows, and everything before the marker's reply belongs to the command."""
        self.proc.stdin.write((line + "\n" + self.MARKER + "\n").encode())
        self.proc.stdin.flush()
        end = self.MARKER_REPLY.encode()
        data = b""
        while not data.endswith(end):
            chunk = self._stdout.readline()
            if not chunk:
                raise EOFError("leelaz exited: " + self._take_err())
            data += chunk
        return data[:-len(end)].decode("utf-8", "replace")

    def ask_err(self, line: str, until: str) -> tuple[str, str]:
        """Send one command; (its reply, the stderr it wrote), reading stderr until the
        regular expression `until` matches it (stderr is a separate pipe, so the reply alone
        does not prove that our drain thread has seen all of it)."""
        import re
        import time

        reply = self.ask(line)
        text = self._take_err()
        deadline = time.monotonic() + 10
        while not re.search(until, text):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {until!r} on leelaz stderr after {line!r}: {text!r}")
            try:
                text += self._err.get(timeout=0.1).decode("utf-8", "replace")
            except queue.Empty:
                pass
        return reply, text

    def showboard(self) -> str:
        """The showboard text on stderr."""
        return self.ask_err("showboard", r"White time: [^\n]*\n\n")[1]

    def close(self) -> None:
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
