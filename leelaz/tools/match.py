"""`leelaz match`: play a match between two GTP engines; report the score, Elo and an SPRT.

Owns: the verb's command line, the scoreboard the parallel tables share, and `--tally`.
Imports: click, leelaz.files, tools.match_games, tools.match_stats, selfplay.sprt (the
arithmetic), leelaz.progress.

A stand-in for gomill's ringmaster / gogui-twogtp / Leela Zero's validation tool:
- colours alternate every game (engine 1 takes Black in games 1, 3, 5, ...), or engine 1
  keeps one colour (--engine1-colour); --handicap N gives Black Leela Zero's fixed stones and
  White the first move;
- komi, board size 19, optional `time_settings` and extra start-up commands per engine;
- games end by resignation, two passes, or the move cap; they are then scored by Tromp-Taylor
  area counting with leelaz's own rules code (the default; it also rejects illegal moves, with
  positional superko), by a referee GTP engine's `final_score` (--referee, e.g. GNU Go, which
  also judges legality), or by engine 1's `final_score` (--referee engine1, as Leela Zero's
  validation tool does);
- an engine that crashes, times out, answers garbage or plays an illegal move loses that game
  (and is restarted for the next one);
- each game is written as an SGF file (atomically) when --sgf-dir is given;
- the summary gives wins, the 95% confidence interval of the score, Elo = 400 log10(W/L) with
  its interval, and with --sprt a sequential test of elo0=0 against elo1=35 (alpha = beta =
  0.05) that stops the match as soon as it decides, and engine 1's mean margin (with its
  interval) over the games counted to the end;
- --jobs N plays N games at once (each worker has its own engines, started lazily);
  --time-limit stops handing out games;
- --first-game K numbers the games from K, so a match can be split over several runs (colours
  and SGF names follow the absolute game number), and --tally DIR... re-scores the SGF files of
  all the runs together (RE, PB/PW and the GC ending class: forfeits and crashes are counted).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import threading
import time

import click

from leelaz.files import write_text_atomic
# The arithmetic is the gating match's; `sprt_llr` and `sprt_bounds` are this verb's names for
# Wald's test, which `--sprt` stops on.
from leelaz.selfplay.sprt import bounds as sprt_bounds
from leelaz.selfplay.sprt import elo, score_interval, wald_decided
from leelaz.selfplay.sprt import wald_llr as sprt_llr
from leelaz.tools import ToolError, make_folder
from leelaz.tools.match_games import GameRecord, MatchSettings, MatchTable, read_game, sgf_text
from leelaz.tools.match_stats import forfeit_line, margin_line, summary
from leelaz.tools.options import (backend_option, cpu_only_option, gpu_option,
                                  processes_by_default)
from leelaz.progress import MoveBar

__all__ = ["command", "main", "play", "tally", "elo", "margin_line", "score_interval",
           "sprt_bounds", "sprt_llr", "summary"]


def engine1_score(game: GameRecord, name1: str) -> float:
    """Engine 1's point for a game: 1 for a win, 0 for a loss, 1/2 with no result."""
    if game.winner is None:
        return 0.5
    return 1.0 if (game.black if game.winner == "B" else game.white) == name1 else 0.0


def engine1_margin(game: GameRecord, name1: str) -> float | None:
    """Engine 1's signed score (points it won by, negative when it lost) for a game counted
    to the end (RE B+x / W+x, 0 for a draw); None for a resignation, forfeit or no result."""
    result = game.result
    if result == "0":
        return 0.0
    if result[:2] not in ("B+", "W+"):
        return None
    try:
        points = float(result[2:])
    except ValueError:
        return None
    won = (game.black if result[0] == "B" else game.white) == name1
    return points if won else -points


class Scoreboard:
    """What the workers share: the next game number, the score, and whether to stop.

    Everything goes through one lock, so the per-game lines and running summaries of parallel
    games never interleave, and an SPRT decision or the time limit stops new games at once
    (games already being played still finish and count: dropping them would bias the score
    towards the faster results)."""

    def __init__(self, settings: MatchSettings, bar: MoveBar | None = None):
        self.settings = settings
        self.bar = bar if bar is not None else MoveBar(0, "", enabled=False)
        self.moves = 0  # moves played in this run (all games, finished or not): the bar
        self.finished_moves = 0  # moves of the games counted
        self._shown = 0.0  # when the bar was last brought up to date
        self.lock = threading.Lock()
        self.next_number = settings.first_game
        self.end_number = settings.first_game + settings.games
        self.deadline = (time.monotonic() + settings.time_limit) if settings.time_limit else None
        self.wins = 0.0
        self.played = 0
        self.forfeits: dict[str, dict[str, int]] = {settings.name1: {}, settings.name2: {}}
        self.margins: list[float] = []  # engine 1's signed score in games counted to the end
        self.resigned = 0
        self.stopped = False  # SPRT decided, or the match was interrupted
        self.closed = False  # interrupted: record nothing more
        self.write_error = ""  # an SGF could not be written: the match stops, exit status 1

    def add(self, game: GameRecord) -> None:
        """Count a game (played here, or read back by --tally: the same arithmetic)."""
        self.played += 1
        self.wins += engine1_score(game, self.settings.name1)
        margin = engine1_margin(game, self.settings.name1)
        if margin is not None:
            self.margins.append(margin)
        elif game.result.endswith("+Resign"):
            self.resigned += 1
        for name in (game.black, game.white):
            self.forfeits.setdefault(name, {})
        if game.ending.startswith("forfeit") and game.winner is not None:
            loser = game.white if game.winner == "B" else game.black
            cause = game.ending.split(" ", 1)[-1]
            self.forfeits[loser][cause] = self.forfeits[loser].get(cause, 0) + 1

    def next_game(self) -> int | None:
        """The next absolute game number to play, or None when the match is over."""
        with self.lock:
            if self.stopped or self.next_number >= self.end_number:
                return None
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return None
            number = self.next_number
            self.next_number += 1
            return number

    def record(self, number: int, game: GameRecord) -> None:
        """Write the SGF, print the game's line and the running summary."""
        s = self.settings
        with self.lock:
            if self.closed or self.write_error:
                return
            if s.sgf_dir:  # stored first: a game that is not stored is not counted
                path = os.path.join(s.sgf_dir, f"game-{number + 1:03d}.sgf")
                try:
                    write_text_atomic(path, sgf_text(game))
                except OSError as exc:
                    self.write_error = (f"cannot write {path}: {exc.strerror or exc}; the match "
                                        f"stopped after {self.played} stored games")
                    self.stopped = True
                    return
            self.add(game)
            self.finished_moves += len(game.moves)
            self.bar.say(f"game {number + 1}: B {game.black} W {game.white} {game.result} "
                         f"({len(game.moves)} moves; {game.reason})")
            line = summary(s.name1, self.wins, self.played, s.sprt)
            self.bar.say("  " + line)
            self._show()
            if s.sprt and wald_decided(self.wins, self.played):
                self.stopped = True

    def moved(self) -> None:
        """A move was played at some table: the bar counts it (updated twice a second)."""
        with self.lock:
            self.moves += 1
            if time.monotonic() - self._shown >= 0.5:
                self._show()

    def _show(self) -> None:
        self._shown = time.monotonic()
        self.bar.update(self.moves, self.played, self.finished_moves,
                        f"{self.settings.name1} {self.wins:g}/{self.played}")

    def close(self) -> None:
        with self.lock:
            self.stopped = self.closed = True


def worker(table: MatchTable, board: Scoreboard, failures: list[str]) -> None:
    """Play games from the shared counter until none is left. A failure that is not an
    engine's fault (the referee process, the SGF folder) ends this worker only; the game it
    was playing is reported and not counted."""
    try:
        while (number := board.next_game()) is not None:
            try:
                game = table.play_game(number)
            except Exception as exc:  # noqa: BLE001 (reported, the other workers go on)
                failures.append(f"game {number + 1} abandoned: {exc!r}")
                print(f"game {number + 1} abandoned: {exc!r}", file=sys.stderr, flush=True)
                return
            board.record(number, game)
    finally:
        if not board.closed:
            table.close()


def play(settings: MatchSettings) -> int:
    """Run the match with settings.jobs workers; print the final summary."""
    bar = MoveBar(settings.games, "match", settings.max_moves)
    try:
        board = Scoreboard(settings, bar)
        jobs = max(1, min(settings.jobs, settings.games))
        tables = [MatchTable(settings, None if jobs == 1 else i) for i in range(jobs)]
        for table in tables:
            table.on_move = board.moved
        failures: list[str] = []
        threads = [threading.Thread(target=worker, args=(t, board, failures), daemon=True)
                   for t in tables]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
        except KeyboardInterrupt:
            board.close()
            print("interrupted", file=sys.stderr, flush=True)
            for table in tables:
                table.kill()
    finally:
        bar.close()
    print(margin_line(settings.name1, board.margins, board.resigned))
    print(summary(settings.name1, board.wins, board.played, settings.sprt))
    if any(board.forfeits.values()):
        print(forfeit_line(board.forfeits))
    if board.write_error:
        raise ToolError(board.write_error)
    return 1 if failures else 0


def tally(settings: MatchSettings) -> int:
    """Re-score the SGF files of one or more runs as a single match."""
    paths = []
    for folder in dict.fromkeys(os.path.realpath(d) for d in settings.tally):
        try:
            names = os.listdir(folder)
        except OSError as exc:
            raise ToolError(f"{folder}: {exc.strerror or exc}") from None
        paths += sorted(os.path.join(folder, n) for n in names
                        if re.fullmatch(r"game-\d+\.sgf", n))
    names = [os.path.basename(p) for p in paths]
    for name in sorted({n for n in names if names.count(n) > 1}):
        print(f"warning: {name} appears in several folders (all are counted)", file=sys.stderr)
    board = Scoreboard(settings)
    board.forfeits = {}
    for path in paths:
        try:
            game = read_game(path)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ToolError(f"{path}: not a game written by leelaz match ({exc})") from None
        if settings.name1 not in (game.black, game.white):
            print(f"warning: {path}: {settings.name1} did not play; skipped", file=sys.stderr)
            continue
        board.add(game)
    print(f"{board.played} games from {len(paths)} files")
    print(margin_line(settings.name1, board.margins, board.resigned))
    print(summary(settings.name1, board.wins, board.played, settings.sprt))
    print(forfeit_line(board.forfeits))
    return 0 if board.played else 1


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
EPILOG = """\b
Examples:
  leelaz match --engine1 "leelaz -g -w net.gz --noponder -v 400" \\
      --engine2 "/usr/games/leelaz --cpu-only -g -w net.gz --noponder -v 400" \\
      --games 100 --referee "/usr/games/gnugo --mode gtp" --sgf-dir games/ --sprt
  leelaz match --tally run1/sgf run2/sgf --name1 leelaz --sprt
  leelaz match --preset lz-gate --weights1 new.gz --weights2 best.gz --out gate/ \
      --games 400 --sprt --parallel 16          (the server's gating, games batched)
"""


@click.command(context_settings=CONTEXT, epilog=EPILOG,
               short_help="A match between two GTP engines: score, Elo and SPRT.")
@click.option("--engine1", default="", help="[required unless --tally or --preset] Command "
              "line of engine 1.")
@click.option("--engine2", default="", help="[required unless --tally or --preset] Command "
              "line of engine 2.")
@click.option("--name1", default="engine1", show_default=True,
              help="Engine 1's name in the SGFs and the summary.")
@click.option("--name2", default="engine2", show_default=True,
              help="Engine 2's name in the SGFs and the summary.")
@click.option("--games", type=click.IntRange(1, None), default=10, show_default=True,
              help="Games to play in this run.")
@click.option("--first-game", type=click.IntRange(0, None), default=0,
              help="Number of this run's first game (0-based), to continue a match.")
@click.option("--jobs", type=click.IntRange(1, None), default=None,
              help="Games played at the same time [default: 1]. lz-gate: processes, each "
                   "playing a share of the match (--parallel games at once) on a GPU of its "
                   "own [default: one per NVIDIA GPU when no --gpu, --cpu-only or --backend "
                   "opencl says where to run, else 1].")
@click.option("--time-limit", type=click.FloatRange(0, None), default=0.0,
              help="Start no game after this many seconds (0: no limit).")
@click.option("--tally", "tally_dirs", multiple=True, metavar="DIR",
              help="Play nothing: score the game-*.sgf files in DIR (repeat, or list several "
                   "folders after it).")
@click.option("--komi", type=float, default=7.5, show_default=True, help="Komi of every game.")
@click.option("--time-settings", default="", help='E.g. "0 5 1" (sent as time_settings).')
@click.option("--setup1", multiple=True, help="Extra command for engine 1 (repeatable).")
@click.option("--setup2", multiple=True, help="Extra command for engine 2 (repeatable).")
@click.option("--referee", default="",
              help='Scoring GTP engine, e.g. "gnugo --mode gtp"; "engine1" asks engine 1; '
                   'default: built-in Tromp-Taylor.')
@click.option("--sgf-dir", default="", help="Write game-NNN.sgf files here.")
@click.option("--log-dir", default="", help="The engines' stderr logs go here.")
@click.option("--max-moves", type=click.IntRange(1, None), default=722, show_default=True,
              help="A game that reaches this many moves is scored as it stands.")
@click.option("--timeout", type=click.FloatRange(0, None, min_open=True), default=60.0,
              show_default=True, help="Seconds for ordinary commands.")
@click.option("--move-timeout", type=click.FloatRange(0, None, min_open=True), default=600.0,
              show_default=True, help="Seconds per genmove.")
@click.option("--sprt", is_flag=True, help="Stop early when SPRT(0,35) decides (with --preset "
              "lz-gate: the Leela Zero server's rule, 400-game / 55% rule included).")
@click.option("--preset", type=click.Choice(["lz-gate"]), default=None,
              help="lz-gate: the server's match between two networks (--weights1/--weights2, "
                   "--out): 1600 visits, resign 5%, no noise, no random moves, colours "
                   "alternated, games batched in this process, result.json in --out.")
@click.option("--weights1", default=None, metavar="FILE", help="lz-gate: the candidate (A).")
@click.option("--weights2", default=None, metavar="FILE", help="lz-gate: the best network (B).")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              help="lz-gate: folder for the SGFs, match.json and result.json (resumable).")
@click.option("--parallel", type=click.IntRange(1, None), default=8, show_default=True,
              help="lz-gate: games in flight, their leaves batched per network.")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=1600, show_default=True,
              help="lz-gate: visits per move.")
@cpu_only_option("lz-gate: NumPy, no OpenCL.")
@gpu_option("lz-gate: the device to use (repeatable).")
@backend_option("lz-gate: ")
@click.option("-s", "--seed", type=click.IntRange(0, None), default=None,
              help="lz-gate: run seed (game i's seed derives from it).")
@click.option("--json", "as_json", is_flag=True, help="lz-gate: print the result as JSON.")
@click.option("--handicap", type=click.IntRange(0, 9), default=0,
              help="fixed_handicap N (2..9) in every game, White moving first; the built-in "
                   "referee gives White komi + N, as Leela Zero counts (GNU Go's chinese "
                   "rules give komi only).")
@click.option("--engine1-colour", type=click.Choice(["alternate", "black", "white"]),
              default="alternate", show_default=True,
              help="Engine 1's colour in every game (a handicap match: white).")
@click.argument("more_dirs", nargs=-1, metavar="")
def command(engine1, engine2, name1, name2, games, first_game, jobs, time_limit, tally_dirs,
            komi, time_settings, setup1, setup2, referee, sgf_dir, log_dir, max_moves, timeout,
            move_timeout, sprt, preset, weights1, weights2, out_dir, parallel, visits,
            cpu_only, gpu, backend, seed, as_json, handicap, engine1_colour,
            more_dirs) -> int:
    """Play a match between two GTP engines and report the score, Elo and an SPRT."""
    if preset == "lz-gate":
        if jobs is None:
            jobs = processes_by_default(cpu_only, gpu, backend)
        return _gate(weights1, weights2, out_dir, games, sprt, visits, parallel, seed,
                     cpu_only, gpu, max_moves, as_json, backend, jobs)
    jobs = jobs or 1
    if more_dirs and not tally_dirs:
        raise click.UsageError(f"unexpected argument {more_dirs[0]!r}")
    if not tally_dirs and not (engine1 and engine2):
        raise click.UsageError("--engine1 and --engine2 are required (unless --tally)")
    if handicap == 1:
        raise click.UsageError("--handicap must be 2..9 stones (or 0 for even games)")
    settings = MatchSettings(
        engine1=engine1, engine2=engine2, name1=name1,
        name2=name2 + "'" if name1 == name2 else name2, games=games, first_game=first_game,
        jobs=jobs, time_limit=time_limit, komi=komi, time_settings=time_settings,
        setup1=list(setup1), setup2=list(setup2), referee=referee, sgf_dir=sgf_dir,
        log_dir=log_dir, max_moves=max_moves, timeout=timeout, move_timeout=move_timeout,
        sprt=sprt, tally=list(tally_dirs) + list(more_dirs), handicap=handicap,
        engine1_colour=engine1_colour)
    if settings.tally:
        return tally(settings)
    for option, folder in (("--sgf-dir", sgf_dir), ("--log-dir", log_dir)):
        if folder:
            _check_folder(option, folder)
    checks = [("--engine1", engine1), ("--engine2", engine2)]
    if referee not in ("", "engine1"):
        checks.append(("--referee", referee))
    for role, line in checks:
        _check_command(role, line)
    return play(settings)


def _gate(weights1, weights2, out_dir, games, sprt, visits, parallel, seed, cpu_only, gpus,
          max_moves, as_json, backend="auto", jobs=1) -> int:
    """--preset lz-gate: leelaz.selfplay.play_match (both sides leelaz networks, batched), in
    `jobs` processes (selfplay/match_processes.py)."""
    import dataclasses
    import json

    from leelaz.selfplay import SelfplayError
    from leelaz.selfplay.match_processes import play_match_in_processes
    if not (weights1 and weights2 and out_dir):
        raise click.UsageError("--preset lz-gate needs --weights1, --weights2 and --out")
    try:
        result = play_match_in_processes(
            weights1, weights2, out_dir, jobs=jobs, max_games=games, sprt=sprt, visits=visits,
            parallel=parallel, seed=seed, cpu_only=cpu_only, gpus=tuple(gpus), progress=True,
            max_moves=max_moves, network_backend=backend)
    except SelfplayError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:  # a full disk or a read-only --out while publishing the match
        where = exc.filename or out_dir
        raise ToolError(f"cannot write in {out_dir}: {where}: {exc.strerror or exc}") from None
    if as_json:
        data = dataclasses.asdict(result)
        if abs(data["elo"]) == float("inf"):
            data["elo"] = None
        print(json.dumps(data, sort_keys=True))
    else:
        print(result.line())
    return 0


def _check_folder(option: str, folder: str) -> None:
    """A folder the match writes into must be one, and writable, before any game is played
    (a failure after an hour of games would lose them): made if missing, then probed with a
    file (as root, permission bits alone say nothing about a read-only filesystem)."""
    import tempfile
    make_folder(folder, f"{option} {folder}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".leelaz-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ToolError(f"{option} {folder}: cannot write in it: {exc.strerror or exc}") from None


def _check_command(role: str, line: str) -> None:
    """A command line that cannot start is bad input, not a forfeit in every game."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise ToolError(f"{role} {line!r}: {exc}") from None
    if not argv or shutil.which(argv[0]) is None:
        raise ToolError(f"{role} {line!r}: cannot find the program {argv[0] if argv else ''!r}")


def main(argv: list[str] | None = None) -> int:
    """`leelaz match ARGS` as a function (tests, scripts): returns the exit status."""
    from leelaz.tools import run_verb

    return run_verb(["match", *(sys.argv[1:] if argv is None else argv)])
