"""GTP commands about rules, the board, SGF files and the clock (src/GTP.cpp).

Owns: the handlers of protocol_version ... kgs-chat that need no network and no search.
Imports: gtp.engine, gtp.protocol, game.*, stdlib.

Reply texts are Leela Zero 0.17's, checked against the binary. Where the binary aborts or
misbehaves, this module answers sanely instead (each case is marked LZ-DIFF):
- `play` refuses occupied points, off-board vertices (`a0`), suicide and simple-ko recaptures
  with `? illegal move` (LZ accepts suicide and ko, and aborts on `a0`).
- `set_free_handicap` sends exactly one reply: `? illegal move` (nothing placed) if any
  vertex is bad, repeated or illegal, else the stone list.
- `move_history` echoes the id like every other command.
- `known_command` with no name: `? syntax not understood` (LZ answers `true`).
- `loadsgf` of a file with no game in it (garbage, empty): `? cannot load file` (LZ loads an
  empty game); a failed loadsgf never touches the game.
- `fixed_handicap`/`place_free_handicap` on points that are taken: `? board not empty` (LZ
  aborts).
- Numbers are read like C++ `>>` (leading part: `19x` is 19), but values outside a C `int`
  (or a non-finite komi) are `? syntax not understood`, never an abort.

Hooks for the search (fields of engine.session, set by search_commands; None until then):
- `session.choose_handicap_stone(state) -> vertex`: place_free_handicap asks it for each stone
  beyond the fixed pattern and the grid (Black to move, no passing). Without it a simple
  fallback places the stone (see _fallback_handicap_stone).
- `session.ponder()`: run after `time_left` replies, when nobody has resigned (it must check
  whether pondering is allowed and stop on input_pending()).
"""

from __future__ import annotations

import os
import time

from leelaz import GTP_VERSION
from leelaz.files import write_text_atomic
from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, NO_VERTEX, PASS, RESIGN, WHITE,
                                color_name, gtp_vertex, parse_color, parse_gtp_vertex, xy)
from leelaz.game.numbers import leading_float, leading_int
from leelaz.gtp.protocol import Command, GtpError

SYNTAX = "syntax not understood"
ILLEGAL = "illegal move"
BAD_HANDICAP = "Not a valid number of handicap stones"

# ---- argument parsing like C++ istream >> (game/numbers.py) ----------------------------------

def int_args(cmd: Command, count: int, first: int = 0) -> list[int]:
    """count integers from cmd.args[first:], or GtpError(syntax not understood)."""
    values = [leading_int(a) for a in cmd.args[first:first + count]]
    if len(values) < count or any(v is None for v in values):
        raise GtpError(SYNTAX)
    return values


# ---- text helpers ------------------------------------------------------------------------

def stone_list(board) -> str:
    """Every stone on the board, column A..T and row 1..19 inside a column (`D4 Q16`)."""
    stones = [v for v in sorted(ALL_VERTICES, key=lambda v: xy(v)) if board.square[v] != EMPTY]
    return " ".join(gtp_vertex(v) for v in stones)


def score_text(score: float) -> str:
    """final_score's text: `B+%3.1f`, `W+%3.1f`, or `0` within 0.1 of a tie."""
    if score < -0.1:
        return f"W+{-score:3.1f}"
    if score > 0.1:
        return f"B+{score:3.1f}"
    return "0"


def alive_strings(board) -> str:
    """final_status_list alive: each string's stones in the board's linked-list order, one
    string per line, the lines sorted as strings."""
    lines = set()
    for v in ALL_VERTICES:
        if board.square[v] in (BLACK, WHITE):
            lines.add(" ".join(gtp_vertex(s) for s in board.string_stones(v)))
    return "\n".join(sorted(lines))


# ---- the command group -------------------------------------------------------------------

class BoardCommands:
    """Handlers bound to one engine; each reads engine.session.state afresh."""

    def __init__(self, engine):
        self.engine = engine
        # (position, handicap) right after a handicap command: Leela Zero's printsgf scores
        # the snapshot of that position, taken before the handicap was recorded (see _result).
        self._handicap_snapshot: tuple[object, int] | None = None

    @property
    def state(self):
        return self.engine.session.state

    # -- identity and protocol
    def protocol_version(self, cmd):
        return "2"

    def name(self, cmd):
        return "Leela Zero"

    def version(self, cmd):
        return GTP_VERSION

    def quit(self, cmd):
        self.engine.request_quit()
        return ""

    def known_command(self, cmd):
        if not cmd.args:
            raise GtpError(SYNTAX)
        return "true" if cmd.args[0] in self.engine.listed_commands() else "false"

    def list_commands(self, cmd):
        return "\n".join(self.engine.listed_commands())

    # -- game setup
    def boardsize(self, cmd):
        (size,) = int_args(cmd, 1)
        if size != 19:
            raise GtpError("unacceptable size")
        self.state.reset()
        self.engine.notify("boardsize")
        return ""

    def clear_board(self, cmd):
        self.state.reset()
        self.engine.notify("clear_board")
        return ""

    def komi(self, cmd):
        value = leading_float(cmd.args[0]) if cmd.args else None
        if value is None:
            raise GtpError(SYNTAX)
        self.state.komi = value
        return ""

    # -- moves
    def play(self, cmd):
        if len(cmd.args) < 2:
            raise GtpError(SYNTAX)
        try:
            color = parse_color(cmd.args[0])
            vertex = parse_gtp_vertex(cmd.args[1])
        except ValueError:
            raise GtpError(ILLEGAL) from None
        state = self.state
        if vertex not in (PASS, RESIGN) and not state.is_legal(color, vertex):
            raise GtpError(ILLEGAL)  # LZ-DIFF: LZ only refuses occupied points
        state.play(color, vertex)
        return ""

    def undo(self, cmd):
        if not self.state.undo():
            raise GtpError("cannot undo")
        return ""

    def last_move(self, cmd):
        state = self.state
        if state.last_move == NO_VERTEX:  # survives anchoring: handicap stones count, as in LZ
            raise GtpError("no previous move known")
        return f"{color_name(1 - state.to_move)} {gtp_vertex(state.last_move)}"

    def move_history(self, cmd):
        moves = self.state.moves()
        return "\n".join(f"{color_name(c)} {gtp_vertex(v)}" for c, v in reversed(moves))

    # -- scoring and display
    def final_score(self, cmd):
        return score_text(self.state.final_score())

    def final_status_list(self, cmd):
        if cmd.args and "alive" in cmd.text.lower():
            return alive_strings(self.state.board)
        return ""

    def display_state(self) -> str:
        """What Leela Zero shows on stderr before each prompt in console mode (and for
        showboard): the board, hashes and clocks."""
        from leelaz.game.display import showboard_text
        return showboard_text(self.state)

    def showboard(self, cmd):
        from leelaz.game.display import showboard_text
        text = showboard_text(self.state)
        self.engine.after_reply(lambda: self.engine.show(text))  # LZ: reply first, then board
        return ""

    # -- clock
    def time_settings(self, cmd):
        from leelaz.game.timecontrol import TimeControl
        main, byo, stones = int_args(cmd, 3)
        self._set_clock(TimeControl.from_time_settings(main, byo, stones))
        return ""

    def kgs_time_settings(self, cmd):
        from leelaz.game.timecontrol import TimeControl
        kind = cmd.args[0] if cmd.args else ""
        if "none" in kind:
            tc = TimeControl.kgs_none()
        elif "absolute" in kind:
            tc = TimeControl.kgs_absolute(*int_args(cmd, 1, 1))
        elif "canadian" in kind:
            tc = TimeControl.kgs_canadian(*int_args(cmd, 3, 1))
        elif "byoyomi" in kind:
            tc = TimeControl.kgs_byoyomi(*int_args(cmd, 3, 1))
        else:
            raise GtpError(SYNTAX)
        self._set_clock(tc)
        return ""

    def _set_clock(self, tc) -> None:
        self.state.time_control = tc

    def time_left(self, cmd):
        if len(cmd.args) < 3:
            raise GtpError(SYNTAX)
        seconds, stones = int_args(cmd, 2, 1)
        try:
            color = parse_color(cmd.args[0])
        except ValueError:
            raise GtpError("Color in time adjust not understood.\n") from None
        self.state.time_control.adjust_time(color, seconds * 100, stones)
        ponder = self.engine.session.ponder
        if ponder is not None and self.state.resigned is None:
            self.engine.after_reply(ponder)
        return ""

    # -- handicap
    def fixed_handicap(self, cmd):
        from leelaz.game import handicap
        n = leading_int(cmd.args[0]) if cmd.args else None
        if n is None or not handicap.fixed_pattern(n):
            raise GtpError(BAD_HANDICAP)
        before = self.state.handicap
        try:
            handicap.place_fixed_handicap(self.state, n)
        except ValueError:
            raise GtpError("board not empty") from None  # LZ-DIFF: LZ aborts
        self._handicap_snapshot = (self.state.board, before)
        return stone_list(self.state.board)

    def place_free_handicap(self, cmd):
        from leelaz.game import handicap
        n = leading_int(cmd.args[0]) if cmd.args else None
        if n is None or n < 0:
            raise GtpError(BAD_HANDICAP)
        chooser = self.engine.session.choose_handicap_stone or _fallback_handicap_stone
        trial = self.state.copy()
        try:
            handicap.place_free_handicap(trial, n, chooser)
        except ValueError:
            raise GtpError("board not empty") from None  # LZ-DIFF: LZ aborts
        # LZ anchors twice: after the fixed part (recording its count), then at the end.
        first = min(handicap.MAX_FIXED, n)
        snap = first if handicap.fixed_pattern(first) else self.state.handicap
        self._handicap_snapshot = (trial.board, snap)
        self.engine.session.state = trial
        return stone_list(trial.board)

    def set_free_handicap(self, cmd):
        trial = self.state.copy()
        try:
            vertices = [parse_gtp_vertex(a) for a in cmd.args]
        except ValueError:
            raise GtpError(ILLEGAL) from None
        for v in vertices:  # LZ-DIFF: all or nothing, one reply
            if v in (PASS, RESIGN) or not trial.is_legal(BLACK, v):
                raise GtpError(ILLEGAL)
            trial.play(BLACK, v)
        state = self.state
        before = state.handicap
        for v in vertices:
            state.play(BLACK, v)
        state.handicap += len(vertices)
        if vertices:  # LZ counts each stone after playing it: the last snapshot lacks one
            self._handicap_snapshot = (state.board, before + len(vertices) - 1)
        return stone_list(state.board)

    # -- SGF
    def loadsgf(self, cmd):
        if not cmd.args:
            raise GtpError("Missing filename.")
        if not os.path.isfile(cmd.args[0]):
            raise GtpError("cannot load file")
        from leelaz.game.sgf_replay import state_from_sgf
        movenum = leading_int(cmd.args[1]) if len(cmd.args) > 1 else None
        if movenum is None:
            movenum = 999
        try:
            new_state = state_from_sgf(cmd.args[0], movenum)
        except (OSError, ValueError, UnicodeError, RecursionError, IndexError) as exc:
            if "cannot read" in str(exc):  # too big, not a regular file: say why on stderr
                self.engine.diag(f"{exc}\n")
            raise GtpError("cannot load file") from None
        self.engine.session.state = new_state
        self.engine.notify("loadsgf")
        return ""

    def printsgf(self, cmd):
        text = self._sgf_text()
        if not cmd.args:
            return text + "\n"
        try:
            write_text_atomic(cmd.args[0], text)
        except OSError:
            raise GtpError("cannot write file") from None
        return ""

    def _sgf_text(self) -> str:
        from leelaz.game.sgf_replay import sgf_from_state
        options = self.engine.session.config.sgf_options
        return sgf_from_state(self.state, weights_path=self._weights_path(), options=options,
                              result=self._result(), date=time.strftime("%Y-%m-%d"))

    def _result(self) -> str | None:
        """RE when Leela Zero's quirk applies, else None (the default result).

        Leela Zero scores the last history snapshot, and its handicap commands record the
        handicap only after that snapshot was taken; so until the next move (or again after
        undoing back to it) RE counts the handicap from before the command
        (fixed_handicap 2 on an empty board: RE[B+353.5] while final_score says B+351.5).
        """
        snap = self._handicap_snapshot
        state = self.state
        if snap is None or snap[0] is not state.board or state.resigned is not None:
            return None
        from leelaz.game.sgf import result_text
        return result_text(state.board.area_score(state.komi + snap[1]))

    def _weights_path(self) -> str:
        session = self.engine.session
        return session.config.weights or session.weights_path or ""

    # -- KGS
    def kgs_game_over(self, cmd):
        return ""

    def kgs_chat(self, cmd):
        raise GtpError("I'm a go bot, not a chat bot.")


def _fallback_handicap_stone(state):
    """Without a search: the first legal point (index order) whose neighbours are all empty,
    else the first legal point that is not Black's own eye."""
    board = state.board
    legal = state.legal_moves(BLACK)
    for v in legal:
        if all(board.square[v + d] == EMPTY for d in (-21, 1, 21, -1)):
            return v
    for v in legal:
        if not board.is_eye(BLACK, v):
            return v
    return PASS


#: The commands of this group, in Leela Zero's list order; the handler of `kgs-game_over` is
#: the method `kgs_game_over`.
COMMANDS = (
    "protocol_version", "name", "version", "quit", "known_command", "list_commands",
    "boardsize", "clear_board", "komi", "play", "showboard", "undo", "final_score",
    "final_status_list", "time_settings", "time_left", "fixed_handicap", "last_move",
    "move_history", "place_free_handicap", "set_free_handicap", "loadsgf", "printsgf",
    "kgs-time_settings", "kgs-game_over", "kgs-chat",
)


def register(engine) -> BoardCommands:
    """Add this group's commands to engine; returns the handler object."""
    group = BoardCommands(engine)
    for name in COMMANDS:
        engine.add_command(name, getattr(group, name.replace("-", "_")))
    engine.display_state = group.display_state
    return group
