"""A GTP engine as a child process: the one GTP client of the package and its tests.

Owns: starting an engine, sending commands (with or without ids), reading its `=`/`?` replies
with timeouts, reading its stderr at the same time, and a clean shutdown. Used by `leelaz match`,
`leelaz bench analyze`, scripts/time_check.py and the tests that drive the C++ Leela Zero, GNU Go
or our own engine as a subprocess. Imports: stdlib only.

Why threads: a reply can only time out if nobody blocks on the pipe, so stdout is read line by
line by a daemon thread into a queue; stderr is drained by another thread (an engine that fills
its stderr pipe would otherwise stall), into a log file, a buffer the caller reads, or nowhere.

Replies are read as GTP 2 says and GUIs do: lines before the `=`/`?` line (analysis `info`
lines, a stderr merged into stdout) are handed back apart, and the reply ends at its blank line.
`exchange` returns an engine's output byte for byte, extra blank lines included (printsgf and
time_left send more than one): a fence command with a unique id follows the command, and
everything before the fence's reply belongs to it.
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

#: The fence of `exchange`: a command every GTP engine knows, with an id nobody else uses.
FENCE_ID = 918273645
FENCE = f"{FENCE_ID} protocol_version"


class GtpFailure(Exception):
    """The engine died, did not answer in time, or answered something unusable.

    `cause` ("crash", "timeout", "error") says which, for callers that count them."""

    cause = "crash"

    def __init__(self, message: str, cause: str | None = None):
        super().__init__(message)
        if cause is not None:
            self.cause = cause


class GtpTimeout(GtpFailure):
    """No complete reply in time; the engine's stream is then out of step (restart it)."""

    cause = "timeout"


class GtpErrorReply(GtpFailure):
    """A `? message` reply; the exception's text is the message."""

    cause = "error"


@dataclass
class Reply:
    """One reply: `ok` for `=`, the id if it had one, `text` after the id and its space
    (further lines joined with newlines), `lines` the reply's raw lines without their
    newline, and `before` the lines that came before its first line."""

    ok: bool
    id: int | None
    text: str
    lines: list[str] = field(default_factory=list)
    before: list[str] = field(default_factory=list)


_HEAD = re.compile(r"([=?])(\d*)(?: (.*))?$", re.S)


def parse_head(line: str) -> tuple[bool, int | None, str] | None:
    """`=12 text` -> (True, 12, "text"); None for a line that is not a reply's first line."""
    m = _HEAD.match(line.rstrip("\r\n"))
    if m is None:
        return None
    return m.group(1) == "=", int(m.group(2)) if m.group(2) else None, m.group(3) or ""


class GtpClient:
    """One GTP engine on pipes.

    argv: the command line, as a list or a shell-like string. stderr: None (discarded),
    "capture" (kept for `take_stderr` / `stderr_until`), "stdout" (merged into stdout, as
    Lizzie runs engines) or a file name (appended to). new_session: the engine gets its own
    session, so a Ctrl-C meant for the caller does not reach it. numbered: `send` puts an id
    in front of each command (1, 2, ...). on_line: called with every stdout line read.
    The engine starts at once unless start=False.
    """

    def __init__(self, argv: Sequence[str] | str, *, name: str | None = None,
                 stderr: str | None = None, new_session: bool = False, numbered: bool = False,
                 on_line: Callable[[str], None] | None = None, env: dict | None = None,
                 cwd: str | None = None, start: bool = True):
        self.argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        self.name = name or os.path.basename(self.argv[0])
        self.stderr_mode = stderr
        self.new_session = new_session
        self.numbered = numbered
        self.on_line = on_line
        self.env, self.cwd = env, cwd
        self.proc: subprocess.Popen | None = None
        self.number = 0
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._err_parts: list[str] = []
        self._err_cond = threading.Condition()
        if start:
            self.start()

    # ---- process -----------------------------------------------------------------------
    def start(self) -> None:
        """Start (or start again) the engine with fresh queues."""
        mode = self.stderr_mode
        log = None
        if mode is None:
            err = subprocess.DEVNULL
        elif mode == "capture":
            err = subprocess.PIPE
        elif mode == "stdout":
            err = subprocess.STDOUT
        else:
            log = err = open(mode, "ab")  # noqa: SIM115 (the child holds it; closed below)
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err,
                                         start_new_session=self.new_session, env=self.env,
                                         cwd=self.cwd)
        except OSError as exc:
            raise GtpFailure(f"{self.name}: cannot start {self.argv[0]}: "
                             f"{exc.strerror or exc}") from None
        finally:
            if log is not None:
                log.close()
        self.number = 0
        self._lines = queue.Queue()
        self._err_parts = []
        threading.Thread(target=self._read_stdout, args=(self.proc.stdout, self._lines),
                         daemon=True).start()
        if mode == "capture":
            threading.Thread(target=self._read_stderr, args=(self.proc.stderr,),
                             daemon=True).start()

    @staticmethod
    def _read_stdout(stream, lines: queue.Queue) -> None:
        for raw in iter(stream.readline, b""):
            lines.put(raw.decode("utf-8", "replace"))
        lines.put(None)

    def _read_stderr(self, stream) -> None:
        for chunk in iter(lambda: os.read(stream.fileno(), 65536), b""):
            with self._err_cond:
                self._err_parts.append(chunk.decode("utf-8", "replace"))
                self._err_cond.notify_all()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self, timeout: float = 3.0) -> int | None:
        """Send `quit` and wait up to `timeout` seconds; kill the engine if it is still there.
        Returns the exit status (None if it never started)."""
        if self.proc is None:
            return None
        if self.alive():
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        return self.proc.returncode

    def kill(self) -> None:
        """Stop at once (a caller that is interrupted cannot wait for a genmove to end)."""
        if self.alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def restart(self) -> None:
        self.close()
        self.start()

    # ---- commands ----------------------------------------------------------------------
    def send(self, command: str) -> int | None:
        """Write one command line; returns its id when numbered."""
        if not self.alive():
            raise GtpFailure(f"{self.name} is not running")
        ident = None
        if self.numbered:
            self.number += 1
            ident = self.number
            command = f"{ident} {command}"
        try:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise GtpFailure(f"{self.name}: cannot write: {exc}") from None
        return ident

    def next_line(self, timeout: float = 60.0) -> str:
        """The next stdout line, newline included; GtpTimeout or GtpFailure (exited)."""
        try:
            line = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise GtpTimeout(f"{self.name}: no output in {timeout:g} s") from None
        if line is None:
            self._lines.put(None)  # every later read sees the end too
            raise GtpFailure(f"{self.name} exited")
        if self.on_line is not None:
            self.on_line(line)
        return line

    def read_reply(self, ident: int | None = None, timeout: float = 60.0) -> Reply:
        """Lines up to the next `=`/`?` line (with id `ident` when given), then the rest of
        that reply up to its blank line."""
        deadline = time.monotonic() + timeout
        before: list[str] = []
        while True:
            line = self._line_before(deadline, "a reply")
            head = parse_head(line)
            if head is not None and (ident is None or head[1] == ident):
                break
            before.append(line.rstrip("\n"))
        lines = [line.rstrip("\n")]
        while True:
            more = self._line_before(deadline, "the end of a reply")
            if more.strip("\r\n") == "":
                break
            lines.append(more.rstrip("\n"))
        ok, got_id, first = head
        text = "\n".join([first.rstrip("\r")] + [x.rstrip("\r") for x in lines[1:]])
        return Reply(ok, got_id, text, lines, before)

    def _line_before(self, deadline: float, what: str) -> str:
        left = deadline - time.monotonic()
        if left <= 0:
            raise GtpTimeout(f"{self.name}: no {what} in time")
        return self.next_line(left)

    def reply(self, command: str, timeout: float = 60.0) -> Reply:
        """Send one command and read its reply (`?` included: see `ok`)."""
        ident = self.send(command)
        try:
            return self.read_reply(ident, timeout)
        except GtpTimeout:
            raise GtpTimeout(f"{self.name}: no answer to {command!r} in {timeout:g} s") from None
        except GtpFailure:
            raise GtpFailure(f"{self.name} exited during {command!r}") from None

    def ask(self, command: str, timeout: float = 60.0) -> str:
        """Send one command; the reply's text. `?` raises GtpErrorReply with its message."""
        answer = self.reply(command, timeout)
        if not answer.ok:
            raise GtpErrorReply(answer.text)
        return answer.text

    def exchange(self, command: str, timeout: float = 60.0) -> str:
        """Send one command; everything the engine wrote on stdout for it, byte for byte."""
        self.send(command)
        self.send(FENCE)
        fence = f"={FENCE_ID} "
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        while True:
            line = self._line_before(deadline, f"reply to {command!r}")
            if line.startswith(fence):
                self._line_before(deadline, "the fence's blank line")
                return "".join(lines)
            lines.append(line)

    # ---- stderr ------------------------------------------------------------------------
    def take_stderr(self) -> str:
        """The captured stderr text not taken yet."""
        with self._err_cond:
            text = "".join(self._err_parts)
            self._err_parts = []
        return text

    def stderr_until(self, pattern: str, timeout: float = 10.0) -> str:
        """Captured stderr up to the moment the regular expression `pattern` matches all of
        it that has not been taken yet (stderr is a separate pipe: a reply on stdout does not
        prove the engine's stderr lines have arrived)."""
        deadline = time.monotonic() + timeout
        with self._err_cond:
            while True:
                text = "".join(self._err_parts)
                if re.search(pattern, text):
                    self._err_parts = []
                    return text
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GtpTimeout(f"{self.name}: no {pattern!r} on stderr in "
                                     f"{timeout:g} s: {text[-500:]!r}")
                self._err_cond.wait(left)

    def __enter__(self) -> GtpClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
