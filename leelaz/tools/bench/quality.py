"""`leelaz bench analyze --quality`: what a few seconds of lz-analyze are worth, measured
against a long search, for our engine and Leela Zero 0.17 in the same run.

Owns: the choice of positions (`pick_positions`), reading an analysis's answer (`top_line`:
the first move and its winrate of an `info` line), and the agreement table. Imports:
game.sgf (the games), gtp.client, tools.bench.common; the speed mode (tools/bench/analyze.py,
its caller) hands it its reading of one lz-analyze and its engine start and stop.

Why: visits per second say how much searching a setting does, not how good its answer is.
Root parallelism's merged trees report several times the visits of one tree without playing
any better (docs/performance.md), so a figure of analysis has to be a figure of its answers.
Here each position is searched once for `--long-seconds` by the long search (by default the
installed Leela Zero 0.17 with its default threads: a strong, independent reference), and
its top move and winrate are the answer to match. Then every engine of the bench (ours and
the references, the same command lines as the speed mode) analyses the position for
`--seconds`, one after the other, and its top move (the `order 0` move of its last `info`
line) and winrate are compared with the long search's: the table gives the share of
positions whose top move agrees, with its 95% interval (Wilson's, selfplay/sprt.py `score_interval`), the mean absolute winrate
difference and the mean visits shown.

The positions are real: `--sgf` (a game, or a collection such as the 9-dan games, plain or
.gz), `--positions` of them drawn with `--seed` from the games' main lines between moves 20
and 250 (a position after move k: loadsgf FILE k+1). Each engine keeps its process over the
positions, as Lizzie or Sabaki keep theirs over a game; the long search runs in its own
process, so it warms no engine's cache.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile

from leelaz.game.sgf import SgfError, SgfGame, format_game, iter_file_games
from leelaz.gtp.client import GtpFailure
from leelaz.selfplay.sprt import score_interval
from leelaz.tools import ToolError
from leelaz.tools.bench.common import load_line, say, table

#: The range of move numbers a position is drawn from: past the opening book, before the
#: end of most games' fighting.
FIRST_MOVE, LAST_MOVE = 20, 250
#: One move's analysis in an `info` line: `info move D4 visits 12 winrate 5123 ... order 0`.
_MOVE = re.compile(r"move (\S+) visits (\d+) winrate (\d+)")
_ORDER = re.compile(r"\border (\d+)")


def top_line(line: str) -> tuple[str, float, int] | None:
    """(move, winrate in [0, 1], visits) of the `order 0` move of an lz-analyze info line
    (the first move listed when no order is given), or None without a move."""
    moves = []
    for i, part in enumerate(line.split("info ")):
        found = _MOVE.match(part.strip())
        if found:
            order = _ORDER.search(part)
            moves.append((int(order.group(1)) if order else i, found.group(1).upper(),
                          int(found.group(3)) / 10000.0, int(found.group(2))))
    if not moves:
        return None
    _, move, winrate, visits = min(moves)
    return move, winrate, visits


def pick_positions(path: str, count: int, seed: int) -> list[tuple[SgfGame, int]]:
    """`count` (game, move number) pairs drawn without repeats from the games of `path` whose
    main line reaches FIRST_MOVE + 1 moves; a ToolError when the file has too few."""
    try:
        games = [g for g in iter_file_games(path) if not isinstance(g, SgfError)]
    except SgfError as exc:
        raise ToolError(str(exc)) from None
    choices = []
    for i, game in enumerate(games):
        moves = sum(1 for node in game.mainline() if node.move() is not None)
        choices += [(i, m) for m in range(FIRST_MOVE, min(moves, LAST_MOVE) + 1)]
    if len(choices) < count:
        raise ToolError(f"{path}: {len(choices)} positions between moves {FIRST_MOVE} and "
                        f"{LAST_MOVE} in its games, fewer than --positions {count}")
    drawn = random.Random(seed).sample(choices, count)
    return [(games[i], m) for i, m in drawn]


def run_quality(commands: list[tuple[str, list]], long_search: list[str], sgf: str,
                count: int, seed: int, seconds: float, long_seconds: float,
                interval_cs: int, logs: dict, *, analyze_once, start_engine,
                quit_seconds: float) -> dict:
    """Analyse every position with the long search, then with each engine; print and return
    the per-engine figures. `analyze_once`, `start_engine` and `quit_seconds` are the speed
    mode's (tools/bench/analyze.py, which calls this): one lz-analyze is read one way."""
    positions = pick_positions(sgf, count, seed)
    say(f"{count} positions of {sgf} (seed {seed}); long search {long_seconds:g} s: "
        f"{' '.join(long_search)}; {seconds:g} s each engine; {load_line()}")
    folder = tempfile.mkdtemp(prefix="leelaz-bench-quality-")
    files = []
    for n, (game, move) in enumerate(positions):
        path = os.path.join(folder, f"position-{n:03d}.sgf")
        with open(path, "w") as f:
            f.write(format_game(game))
        files.append((path, move))
    answers: dict[str, list] = {name: [] for name, _ in commands}
    truth = []
    engines = []
    try:
        reference = start_engine("long search", long_search, logs.get("long search"))
        engines.append(reference)
        for path, move in files:
            truth.append(_answer(analyze_once(reference, path, move + 1, long_seconds,
                                              interval_cs, keep_line=True)))
        reference.close(quit_seconds)
        engines.remove(reference)
        started = [(name, start_engine(name, argv, logs.get(name))) for name, argv in commands]
        engines += [engine for _, engine in started]
        for n, (path, move) in enumerate(files):
            for name, engine in started:
                answers[name].append(_answer(analyze_once(engine, path, move + 1, seconds,
                                                          interval_cs, keep_line=True)))
            say(f"  position {n + 1}/{count} (move {move + 1}): long search "
                f"{_show(truth[n])}; " + "; ".join(f"{name} {_show(answers[name][n])}"
                                                    for name, _ in started))
    except GtpFailure as exc:
        raise ToolError(str(exc)) from None
    finally:
        for engine in engines:
            engine.close(quit_seconds)
        shutil.rmtree(folder, ignore_errors=True)
    figures = {name: agreement(truth, answers[name]) for name, _ in commands}
    rows = []
    for name, _ in commands:
        f = figures[name]
        low, high = f["interval"]
        rows.append([name, f"{f['agree']}/{f['positions']}", f"{100 * f['share']:.0f}%",
                     f"{100 * low:.0f}-{100 * high:.0f}%", f"{100 * f['winrate_error']:.1f}",
                     f"{f['visits']:,.0f}"])
    say(table(["engine", "top move agrees", "share", "95%", "winrate off (points)",
               "visits shown"], rows))
    return figures


def agreement(truth: list, answers: list) -> dict:
    """The share of positions whose top move is the long search's, its interval, the mean
    absolute winrate difference and the mean visits (positions without an answer on either
    side count as disagreeing and are left out of the means)."""
    pairs = [(t, a) for t, a in zip(truth, answers)]
    agree = sum(1 for t, a in pairs if t is not None and a is not None and t[0] == a[0])
    both = [(t, a) for t, a in pairs if t is not None and a is not None]
    error = sum(abs(t[1] - a[1]) for t, a in both) / len(both) if both else float("nan")
    visits = sum(a[2] for _, a in both) / len(both) if both else 0.0
    return {"agree": agree, "positions": len(pairs), "share": agree / max(1, len(pairs)),
            "interval": score_interval(agree, len(pairs))[1:], "winrate_error": error, "visits": visits}


def _answer(got: dict) -> tuple[str, float, int] | None:
    """(top move, its winrate, the visits of the whole line) of one analysis."""
    top = top_line(got["line"])
    return None if top is None else (top[0], top[1], got["visits"])


def _show(answer) -> str:
    return "-" if answer is None else f"{answer[0]} {100 * answer[1]:.1f}% ({answer[2]})"


def default_long_search(flags: list[str]) -> list[str] | None:
    """The installed Leela Zero 0.17 with the bench's flags (its own default threads)."""
    from leelaz.tools.bench.common import reference_binary

    binary = reference_binary()
    return [binary, *flags] if binary else None

