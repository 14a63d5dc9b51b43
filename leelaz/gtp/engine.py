"""The GTP loop: read lines, dispatch by exact command name, write replies.

Owns: GtpEngine (command table, reader thread, reply writing, logging, session objects).
Imports: gtp.protocol, gtp.session, config, stdlib; game.state only lazily for the default
GameState.
Command groups live in their own modules and call `engine.add_command(name, handler)`.

Reading. A daemon reader thread reads stdin line by line and appends to a queue; the main
thread takes lines from the queue and runs the handlers. Because stdin is always being
drained, a client that writes thousands of commands before reading any reply cannot deadlock
against our replies, and `input_pending()` sees every line (no `select()` on a buffered file).

Handlers. `handler(cmd: Command) -> str` returns the reply text (`= text`), or raises
`GtpError(message)` for `? message`. Any other exception becomes `? internal error: <msg>`,
its traceback goes to stderr, and the engine keeps serving.

The seam for long-running and streaming commands (search, lz-analyze, pondering):

- `engine.input_pending() -> bool`: a new line (any line, even empty) has arrived or stdin
  is closed. Long loops poll it (cheap) and stop when it is True; the line is then executed
  normally. `engine.wait_input(timeout)` blocks until then or the timeout. Only pondering and
  lz-analyze do: a genmove always gets its full search, whatever follows it (quit or end of
  input included), as in Leela Zero; commands run in order.
- Streaming: `stream = engine.stream_reply(cmd)` writes `=id\\n` (no space, as lz-analyze
  does) and flushes; `stream.write(text)` writes raw text and flushes (info lines must end
  with `\\n` themselves); `stream.close()` writes the final `\\n` that ends the reply. Once a
  stream is open the handler's return value is ignored; if the handler forgets to close it,
  or raises after opening it, the engine closes it (the error goes to stderr, since a `?`
  can no longer be sent). `engine.write_raw(text)` writes arbitrary flushed text to stdout.
- Work after the reply (pondering after genmove or time_left): call
  `engine.after_reply(fn)` inside the handler; fn() runs once the reply has been written and
  flushed, and must return when `input_pending()` becomes True.
- Diagnostics: `engine.diag(text)` writes to stderr (and the log) unless quiet;
  `engine.show(text)` is the same, for output that is part of a command (showboard).

What several groups share is one typed object, `engine.session` (gtp/session.py: config,
state, network, search, recorder and the two hooks the board commands call); `engine.state`,
`engine.config`, `engine.network`, `engine.search`, `engine.recorder` and
`engine.weights_path` read and write its fields. loadsgf and place_free_handicap *replace*
the state: always read it afresh.

Events: `engine.subscribe(event, fn)` and `engine.notify(event)`; board commands notify
"clear_board", "boardsize" and "loadsgf" after changing the state, so the search can drop
its tree and training can drop its buffer.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import traceback
from typing import Callable, Iterable, TextIO

from leelaz.config import EngineConfig
from leelaz.gtp.protocol import EXIT, Command, GtpError, parse_line, reply_head, serialize
from leelaz.gtp.session import Session

Handler = Callable[[Command], "str | None"]

#: list_commands order of Leela Zero 0.17 (GTP::s_commands). Registered commands are listed in
#: this order; registered commands outside it and not hidden follow in registration order.
LZ_COMMAND_ORDER = (
    "protocol_version", "name", "version", "quit", "known_command", "list_commands",
    "boardsize", "clear_board", "komi", "play", "genmove", "showboard", "undo", "final_score",
    "final_status_list", "time_settings", "time_left", "fixed_handicap", "last_move",
    "move_history", "place_free_handicap", "set_free_handicap", "loadsgf", "printsgf",
    "kgs-genmove_cleanup", "kgs-time_settings", "kgs-game_over", "heatmap", "lz-analyze",
    "lz-genmove_analyze", "lz-memory_report", "lz-setoption", "gomill-explain_last_move",
)
#: Commands that work but are not listed (and `known_command` says false), as in Leela Zero.
HIDDEN = frozenset({"kgs-chat", "dump_training", "dump_supervised", "dump_debug",
                    "save_training", "load_training", "netbench", "go", "auto"})


class ReplyStream:
    """A reply written in pieces: `=id\\n`, raw text, then a blank line (see module doc)."""

    def __init__(self, engine: "GtpEngine", cmd: Command):
        self._engine = engine
        self.closed = False
        engine.write_raw(reply_head(True, cmd.id) + "\n")

    def write(self, text: str) -> None:
        if not self.closed:
            self._engine.write_raw(text)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._engine.write_raw("\n")


class _LineQueue:
    """Lines from the reader thread; None marks end of input. Thread-safe, peekable.

    """

    def __init__(self):
        self._lines: collections.deque[str | None] = collections.deque()
        self._cond = threading.Condition()

    def put(self, line: str | None) -> None:
        with self._cond:
            self._lines.append(line)
            self._cond.notify_all()

    def get(self) -> str | None:
        with self._cond:
            while not self._lines:
                self._cond.wait()
            line = self._lines.popleft()
            if line is None:
                self._lines.appendleft(line)  # end of input stays visible
            return line

    def pending(self) -> bool:
        return bool(self._lines)

    def wait(self, timeout: float | None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._lines), timeout)


def _decode(line: bytes | str) -> str:
    if isinstance(line, bytes):
        return line.decode("utf-8", "surrogateescape")
    return line


def _session_field(name: str) -> property:
    """engine.<name> reads and writes engine.session.<name>."""
    return property(lambda engine: getattr(engine.session, name),
                    lambda engine, value: setattr(engine.session, name, value),
                    doc=f"engine.session.{name}")


class GtpEngine:
    """Runs GTP commands against one game. Streams are injectable for in-process tests."""

    def __init__(self, state=None, out: TextIO | None = None, err: TextIO | None = None,
                 config: EngineConfig | None = None, log: TextIO | None = None):
        if state is None:
            from leelaz.game.state import GameState
            state = GameState(komi=7.5)
        #: What the command groups share (gtp/session.py).
        self.session = Session(config or EngineConfig(), state)
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.log = log
        self._commands: dict[str, Handler] = {}
        self._hidden: set[str] = set(HIDDEN)
        self._listeners: dict[str, list[Callable[[], None]]] = {}
        self._queue = _LineQueue()
        self._stream: ReplyStream | None = None
        self._after: list[Callable[[], None]] = []
        self._quit = False
        #: Console mode (no -g): before reading each line, Leela Zero shows the position on
        #: stderr (`display_state()`, set by the board commands) and a `Leela: ` prompt on
        #: stdout.
        self.console = False
        self.display_state: Callable[[], str] | None = None

    # ---- the session's fields, through the engine --------------------------------------
    state = _session_field("state")
    config = _session_field("config")
    network = _session_field("network")
    weights_path = _session_field("weights_path")
    search = _session_field("search")
    recorder = _session_field("recorder")

    # ---- registration -------------------------------------------------------------------
    def add_command(self, name: str, handler: Handler, hidden: bool = False) -> None:
        """Register (or replace) the handler of an exact command name."""
        self._commands[name] = handler
        if hidden:
            self._hidden.add(name)

    def listed_commands(self) -> list[str]:
        """What list_commands prints: LZ's order first, then extras; hidden ones left out."""
        names = [n for n in LZ_COMMAND_ORDER if n in self._commands]
        names += [n for n in self._commands
                  if n not in LZ_COMMAND_ORDER and n not in self._hidden]
        return names

    def subscribe(self, event: str, fn: Callable[[], None]) -> None:
        self._listeners.setdefault(event, []).append(fn)

    def notify(self, event: str) -> None:
        for fn in self._listeners.get(event, ()):
            fn()

    # ---- output -------------------------------------------------------------------------
    def write_raw(self, text: str) -> None:
        """Text to stdout as it is, flushed (and logged)."""
        _write(self.out, text)
        self._to_log(text)

    def diag(self, text: str) -> None:
        """Diagnostic text to stderr and the log, unless quiet. Add the newline yourself."""
        if self.config.quiet:
            return
        self._to_stderr(text)
        self._to_log(text)

    show = diag

    def _to_stderr(self, text: str) -> None:
        """stderr is only for people: a client that closed it (or a full pipe device) must
        not stop the engine, nor lose a pending reply. Writing stops after the first failure."""
        if self.err is None:
            return
        try:
            _write(self.err, text)
        except (OSError, ValueError):
            self.err = None

    def _to_log(self, text: str) -> None:
        """-l: a log that fails (a full disk) is closed with one line on stderr; the engine
        goes on without it."""
        if self.log is None:
            return
        try:
            _write(self.log, text)
        except (OSError, ValueError) as exc:
            log, self.log = self.log, None
            reason = getattr(exc, "strerror", None) or _one_line(exc)
            self._to_stderr(f"Cannot write the log file {getattr(log, 'name', '')} ({reason}); "
                            "logging stopped.\n")
            try:
                log.close()
            except (OSError, ValueError):
                pass

    def stream_reply(self, cmd: Command) -> ReplyStream:
        """Start a streamed reply for cmd (see the module docstring)."""
        self._stream = ReplyStream(self, cmd)
        return self._stream

    def after_reply(self, fn: Callable[[], None]) -> None:
        """Run fn after the current command's reply is flushed (pondering)."""
        self._after.append(fn)

    def request_quit(self) -> None:
        """Stop the loop after the current reply (quit)."""
        self._quit = True

    # ---- input --------------------------------------------------------------------------
    def input_pending(self) -> bool:
        """True when a line is waiting (or stdin is closed): stop searching/pondering."""
        return self._queue.pending()

    def wait_input(self, timeout: float | None = None) -> bool:
        """Block until input_pending() or the timeout; returns input_pending()."""
        return self._queue.wait(timeout)

    def start_reader(self, inp) -> threading.Thread:
        """Start the daemon thread that moves lines from inp (text or binary) to the queue.

        A stream with a file descriptor (stdin, a pipe) is read with os.read on the
        descriptor: a daemon thread blocked inside a buffered file object holds its lock,
        and the interpreter aborts at exit when it cannot take that lock.
        """
        fd = _fileno(inp)
        target, arg = (self._read_fd, fd) if fd is not None else \
            (self._read_lines, getattr(inp, "buffer", inp))
        thread = threading.Thread(target=target, args=(arg,), name="gtp-reader", daemon=True)
        thread.start()
        return thread

    def _read_fd(self, fd: int) -> None:
        # Linear in the line's length: a long line is kept as a list of pieces and joined
        # once (appending to one bytes object and splitting it again at every read made a
        # 64 MB line take 30 s).
        pieces: list[bytes] = []
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                start = 0
                end = chunk.find(b"\n") + 1
                while end:
                    pieces.append(chunk[start:end])
                    self._queue.put(_decode(b"".join(pieces)))
                    pieces, start = [], end
                    end = chunk.find(b"\n", start) + 1
                if start < len(chunk):
                    pieces.append(chunk[start:])
        except (OSError, ValueError):
            pass
        finally:
            if pieces:
                self._queue.put(_decode(b"".join(pieces)))
            self._queue.put(None)

    def _read_lines(self, source) -> None:
        try:
            for line in iter(source.readline, b"" if _is_binary(source) else ""):
                self._queue.put(_decode(line))
        except (OSError, ValueError):
            pass
        finally:
            self._queue.put(None)

    def feed(self, lines: Iterable[str]) -> None:
        """Queue lines directly (tests, scripted sessions); call end_input() after."""
        for line in lines:
            self._queue.put(line)

    def end_input(self) -> None:
        self._queue.put(None)

    # ---- the loop -----------------------------------------------------------------------
    def run(self, inp=None) -> int:
        """Serve until quit, exit or end of input; returns the exit status (0).

        With inp, a reader thread drains it; without, lines come from feed()/end_input().
        """
        if inp is not None:
            self.start_reader(inp)
        try:
            while not self._quit:
                if self.console:
                    self._prompt()
                line = self._queue.get()
                if line is None:
                    self.write_raw("\n")  # Leela Zero prints a newline at end of input
                    break
                self._to_log(">>" + line.rstrip("\r\n") + "\n")
                cmd = parse_line(line)
                if cmd is None:
                    continue
                if cmd is EXIT:
                    break
                self.execute(cmd)
        except BrokenPipeError:
            pass  # the client went away: nothing left to answer
        return 0

    def _prompt(self) -> None:
        if self.display_state is not None:
            self.show(self.display_state())
        self.write_raw("Leela: ")

    def execute(self, cmd: Command) -> None:
        """Run one command and write its reply (then any after_reply work)."""
        self._stream, self._after = None, []
        handler = self._commands.get(cmd.name)
        if handler is None:
            self.write_raw(serialize(False, cmd.id, "unknown command"))
            return
        ok, text = True, ""
        try:
            result = handler(cmd)
            text = "" if result is None else result
        except GtpError as exc:
            ok, text = False, exc.message
        except BrokenPipeError:
            raise
        except Exception as exc:  # a bug: report it, keep serving
            ok, text = False, "internal error: " + _one_line(exc)
            self._to_stderr(traceback.format_exc())
        if self._stream is not None:
            if not ok:
                self._to_stderr(f"error after the reply started: {text}\n")
            self._stream.close()
        else:
            self.write_raw(serialize(ok, cmd.id, text))
        self._run_after_reply()

    def _run_after_reply(self) -> None:
        after, self._after = self._after, []
        for fn in after:
            try:
                fn()
            except BrokenPipeError:
                raise
            except Exception:
                self._to_stderr(traceback.format_exc())


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # StringIO and friends
        return None


def _is_binary(source) -> bool:
    mode = getattr(source, "mode", "")
    if "b" in mode:
        return True
    import io
    return isinstance(source, (io.BufferedIOBase, io.RawIOBase))


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _write(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
    except UnicodeEncodeError:
        stream.write(text.encode("utf-8", "backslashreplace").decode("ascii", "replace"))
    stream.flush()
