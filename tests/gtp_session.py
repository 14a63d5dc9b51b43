"""Helpers to drive GTP engines in tests: ours in-process, Leela Zero as a subprocess.

- `run_script(engine_or_none, text)` feeds a whole script (lines as one string) through our
  engine's real loop and returns (stdout, stderr).
- `split_replies(stdout)` cuts a GTP stream into replies (each ends with a blank line).
- `Session` keeps one in-process engine and answers `ask(line) -> (stdout, stderr)` per
  command, for tests that interleave commands and checks.
- `LzProcess` keeps one C++ Leela Zero process (a `leelaz.gtp.client.GtpClient`) and answers
  `ask(line)` with the reply byte for byte; `ask_err(line, until)` also returns the stderr text
  it wrote, read until a pattern shows it is complete (`showboard()` uses the board's last line).
"""

from __future__ import annotations

import io

from leelaz.config import EngineConfig
from leelaz.gtp.client import GtpClient, GtpFailure, GtpTimeout


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
    """The C++ Leela Zero 0.17 binary, one process for many commands (leelaz.gtp.client)."""

    def __init__(self, binary: str, weights: str, extra: tuple[str, ...] = ()):
        args = [binary, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", weights, *extra]
        self.client = GtpClient(args, name="leelaz", stderr="capture")
        self.proc = self.client.proc
        self.ask_err("protocol_version", r"Setting max tree size[^\n]*\n")  # drop start-up lines

    def ask(self, line: str) -> str:
        """Send one command and return its reply exactly as sent, extra blank lines included
        (printsgf and time_left send more than one)."""
        try:
            return self.client.exchange(line, timeout=600)
        except GtpFailure as exc:
            raise EOFError(f"leelaz exited: {exc}: {self.client.take_stderr()}") from None

    def ask_err(self, line: str, until: str) -> tuple[str, str]:
        """Send one command; (its reply, the stderr it wrote), reading stderr until the
        regular expression `until` matches it."""
        reply = self.ask(line)
        try:
            return reply, self.client.stderr_until(until, timeout=10)
        except GtpTimeout as exc:
            raise TimeoutError(f"after {line!r}: {exc}") from None

    def showboard(self) -> str:
        """The showboard text on stderr."""
        return self.ask_err("showboard", r"White time: [^\n]*\n\n")[1]

    def close(self) -> None:
        self.client.close(timeout=10)
