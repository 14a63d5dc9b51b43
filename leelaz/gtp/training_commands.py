"""GTP commands that write training data: dump_training and dump_supervised (src/Training.cpp).

Owns: argument parsing, error replies and progress output of the two commands, and the
session's TrainingRecorder (`engine.session.recorder`, cleared on clear_board and boardsize).
Imports: gtp.protocol, game.coords, training.recorder, training.supervised.

Where Leela Zero aborts (an empty training buffer, an unreadable SGF file, an empty last
chunk) or corrupts the GTP stream (messages on stdout), these commands reply `? message`, send
every message to stderr, and keep serving. Like Leela Zero, the file arguments are *not*
lower-cased here (the protocol keeps their case). Both are hidden commands, as in Leela Zero.

Search commands record by calling `session.recorder.record(state, result)` after each search
and before playing the chosen move.
"""

from __future__ import annotations

from leelaz.game.coords import parse_color
from leelaz.gtp.protocol import Command, GtpError
from leelaz.training.recorder import EmptyTrainingBuffer, TrainingRecorder
from leelaz.training.supervised import SupervisedError, dump_supervised

SYNTAX = "syntax not understood"


def recorder_of(engine) -> TrainingRecorder:
    """The session's recorder, created on first use (a search module may ask before us)."""
    session = engine.session
    if session.recorder is None:
        session.recorder = TrainingRecorder()
    return session.recorder


def register(engine) -> None:
    rec = recorder_of(engine)
    engine.subscribe("clear_board", rec.clear)
    engine.subscribe("boardsize", rec.clear)

    def log(line: str) -> None:
        engine.diag(line + "\n")

    def dump_training(cmd: Command) -> str:
        """dump_training COLOR FILE: the buffer as one game to FILE.0.gz, COLOR the winner.
        The buffer is kept (LZ clears it only on clear_board and boardsize)."""
        if len(cmd.args) < 2:
            raise GtpError(SYNTAX)
        try:
            winner = parse_color(cmd.args[0])
        except ValueError:
            raise GtpError(SYNTAX) from None
        rec = recorder_of(engine)
        if len(rec):
            log("Writing chunk 0")
        try:
            rec.dump(winner, cmd.args[1])
        except EmptyTrainingBuffer:
            raise GtpError("no training data recorded") from None
        except OSError as err:
            raise GtpError(f"cannot write training data: {err.strerror or err}") from None
        return ""

    def dump_supervised_cmd(cmd: Command) -> str:
        """dump_supervised SGF OUT: every game of SGF to OUT.0.gz, OUT.1.gz, ... (32 each)."""
        if len(cmd.args) < 2:
            raise GtpError(SYNTAX)
        try:
            dump_supervised(cmd.args[0], cmd.args[1], log=log)
        except SupervisedError as err:
            raise GtpError(str(err)) from None
        except OSError as err:
            raise GtpError(f"cannot write training data: {err.strerror or err}") from None
        return ""

    engine.add_command("dump_training", dump_training, hidden=True)
    engine.add_command("dump_supervised", dump_supervised_cmd, hidden=True)
