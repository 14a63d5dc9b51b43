#!/usr/bin/env python3
"""Play a match between two GTP engines and report the score, Elo and (optionally) an SPRT.

A Python 3 stand-in for gomill's ringmaster / gogui-twogtp / LZ's validation tool:
- colours alternate every game (engine 1 takes Black in games 1, 3, 5, ...);
- komi, board size 19, optional `time_settings` and extra start-up commands per engine;
- games end by resignation, two passes, or the move cap; they are then scored by Tromp-Taylor
  area counting with leelaz's own rules code (the default; it also rejects illegal moves, with
  positional superko), by a referee GTP engine's `final_score` (--referee, e.g. GNU Go, which
  also judges legality), or by engine 1's `final_score` (--referee engine1, as LZ's
  validation tool does);
- an engine that crashes, times out, answers garbage or plays an illegal move loses that game
  (and is restarted for the next one);
- each game is written as an SGF file (atomically) when --sgf-dir is given;
- the summary gives wins, the 95% confidence interval of the score, Elo = 400 log10(W/L) with
  its interval, and with --sprt a sequential test of elo0=0 against elo1=35 (alpha = beta =
  0.05) that stops the match as soon as it decides;
- --jobs N plays N games at once (each worker has its own engines, started lazily), so a
  many-core machine finishes a match inside one short run; --time-limit stops handing out games;
- --first-game K numbers the games from K, so a match can be split over several runs (colours
  and SGF names follow the absolute game number), and --tally DIR... re-scores the SGF files of
  all the runs together (RE, PB/PW and the GC ending class: forfeits and crashes are counted).

    python scripts/match.py --engine1 "leelaz -g -w net.gz --noponder -v 400" \
        --engine2 "/usr/games/leelaz --cpu-only -g -w net.gz --noponder -v 400" \
        --games 100 --referee "/usr/games/gnugo --mode gtp" --sgf-dir games/ --sprt
    python scripts/match.py --tally run1/sgf run2/sgf --name1 leelaz --sprt

Uses the standard library and leelaz.game (for the built-in referee); talks to the engines
over pipes (stderr goes to a log file per engine under --log-dir, or is discarded). An engine
that does not answer in time is killed and restarted, so a late reply cannot desynchronise it.
"""

from __future__ import annotations

import argparse
import math
import os
import queue
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

COLUMNS = "ABCDEFGHJKLMNOPQRST"


# ---------------------------------------------------------------------------------- GTP
class EngineFailure(Exception):
    """The engine died, timed out or answered something unusable. `cause` ("crash",
    "timeout", "error") goes into the SGF's GC so that --tally can count crashes."""

    cause = "crash"

    def __init__(self, message: str, cause: str | None = None):
        super().__init__(message)
        if cause is not None:
            self.cause = cause


class GtpProcess:
    """One GTP engine on pipes. `ask(command, timeout)` -> reply text (raises on failure).

    Not started until the first `restart()` (Match.play_game does it), so workers that never
    get a game never load a network. The engine runs in its own session: a Ctrl-C or a
    `timeout -s INT` meant for the match reaches only the match, which then records nothing
    more and kills the engines, instead of racing their deaths into forfeits."""

    def __init__(self, name: str, command: str, log_path: str | None = None):
        self.name = name
        self.command = command
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()

    def start(self) -> None:
        err = (open(self.log_path, "ab")  # noqa: SIM115 (the child holds it; closed below)
               if self.log_path else subprocess.DEVNULL)
        self.proc = subprocess.Popen(shlex.split(self.command), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=err, bufsize=0,
                                     start_new_session=True)
        if self.log_path:
            err.close()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                         daemon=True).start()

    @staticmethod
    def _read(stream, lines: queue.Queue) -> None:
        for raw in iter(stream.readline, b""):
            lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        lines.put(None)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ask(self, command: str, timeout: float = 60.0) -> str:
        """Send a command; return the reply text after `= ` (raise EngineFailure on `?`,
        death or timeout). Lines before the `=`/`?` line are skipped, as GUIs do."""
        if not self.alive():
            raise EngineFailure(f"{self.name} is not running")
        try:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise EngineFailure(f"{self.name}: cannot write: {exc}") from None
        deadline = time.monotonic() + timeout
        head = None
        body: list[str] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.restart()  # a late answer would desynchronise the stream
                raise EngineFailure(f"{self.name}: no answer to {command!r} in {timeout:.0f} s",
                                    "timeout")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise EngineFailure(f"{self.name} exited during {command!r}")
            if head is None:
                if line[:1] in ("=", "?"):
                    head = line
                continue
            if line == "":
                break
            body.append(line)
        text = head.split(" ", 1)[1] if " " in head else ""
        text = "\n".join([text] + body) if body else text
        if head.startswith("?"):
            raise GtpError(text)
        return text

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.alive():
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
                self.proc.wait(3)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.alive():
            self.kill()

    def kill(self) -> None:
        """Stop at once (an interrupted match cannot wait for a genmove to end)."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.close()
        self.start()


class GtpError(EngineFailure):
    """A `? message` reply."""

    cause = "error"


# ---------------------------------------------------------------------------------- games
@dataclass
class GameRecord:
    black: str
    white: str
    komi: float
    moves: list[tuple[str, str]] = field(default_factory=list)  # ("B", "D4")
    winner: str | None = None  # "B", "W" or None (no result)
    result: str = ""  # SGF RE value
    reason: str = ""
    ending: str = ""  # SGF GC value: "resign", "score", "forfeit <cause>", "no result"


def sgf_point(vertex: str) -> str:
    if vertex.lower() == "pass":
        return ""
    x = COLUMNS.index(vertex[0].upper())
    y = int(vertex[1:]) - 1
    return chr(ord("a") + x) + chr(ord("a") + 18 - y)


def sgf_text(game: GameRecord) -> str:
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("]", "\\]")

    head = (f"(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[{game.komi:g}]RU[Chinese]"
            f"PB[{esc(game.black)}]PW[{esc(game.white)}]RE[{esc(game.result)}]"
            f"GC[{esc(game.ending)}]C[{esc(game.reason)}]")
    body = "".join(f";{c}[{sgf_point(v)}]" + ("\n" if i % 10 == 9 else "")
                   for i, (c, v) in enumerate(game.moves))
    return head + "\n" + body + ")\n"


def write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".match-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parse_score(text: str) -> tuple[str | None, str]:
    """`B+3.5` / `W+Resign` / `0` -> (winner, RE value)."""
    t = text.strip().split()[0] if text.strip() else ""
    if t[:2].upper() in ("B+", "W+"):
        return t[0].upper(), t[0].upper() + t[1:]
    if t in ("0", "Draw", "draw"):
        return None, "0"
    raise EngineFailure(f"unreadable score {text!r}")


class RulesReferee:
    """Legality (occupied, ko, suicide, positional superko) and Tromp-Taylor scoring with
    leelaz.game, the same rules as Leela Zero's final_score."""

    name = "tromp-taylor"

    def __init__(self, komi: float):
        from leelaz.game.state import GameState
        self.state = GameState(komi=komi)

    def play(self, color: str, move: str) -> bool:
        from leelaz.game.coords import BLACK, PASS, WHITE, parse_gtp_vertex
        c = BLACK if color == "B" else WHITE
        v = parse_gtp_vertex(move)
        if v == PASS:
            self.state.play(c, v)
            return True
        if not self.state.is_legal(c, v):
            return False
        self.state.play(c, v)
        return not self.state.superko()

    def score(self) -> str:
        s = self.state.final_score()
        return f"B+{s:.1f}" if s > 0 else f"W+{-s:.1f}" if s < 0 else "0"


class Match:
    """One worker's table: its own pair of engines (and referee process), which play the games
    handed to it one after another. Several Matches run side by side under --jobs."""

    def __init__(self, args, worker: int | None = None):
        self.args = args
        log = args.log_dir
        if log:
            os.makedirs(log, exist_ok=True)

        def log_path(role: str) -> str | None:
            suffix = "" if worker is None else f"-w{worker}"
            return log and os.path.join(log, f"{role}{suffix}.log")

        self.engines = [GtpProcess(args.name1, args.engine1, log_path("engine1")),
                        GtpProcess(args.name2, args.engine2, log_path("engine2"))]
        self.referee = (GtpProcess("referee", args.referee, log_path("referee"))
                        if args.referee not in ("", "engine1") else None)
        self.rules: RulesReferee | None = None
        if args.sgf_dir:
            os.makedirs(args.sgf_dir, exist_ok=True)

    def kill(self) -> None:
        for e in self.engines + ([self.referee] if self.referee else []):
            e.kill()

    def close(self) -> None:
        for e in self.engines + ([self.referee] if self.referee else []):
            e.close()

    def _setup(self, engine: GtpProcess, extra: list[str]) -> None:
        for command in ["boardsize 19", "clear_board", f"komi {self.args.komi:g}"]:
            engine.ask(command, self.args.timeout)
        if self.args.time_settings:
            engine.ask(f"time_settings {self.args.time_settings}", self.args.timeout)
        for command in extra:
            engine.ask(command, self.args.timeout)

    def play_game(self, number: int) -> GameRecord:
        """Game `number` (0-based): engine 1 is Black in even-numbered games."""
        first_black = number % 2 == 0
        black, white = (self.engines if first_black else self.engines[::-1])
        game = GameRecord(black.name, white.name, self.args.komi)
        extras = {self.engines[0].name: self.args.setup1, self.engines[1].name: self.args.setup2}
        for engine in (black, white):
            try:
                if not engine.alive():
                    engine.restart()
                self._setup(engine, extras[engine.name])
            except EngineFailure as exc:
                return self._forfeit(game, engine is black, f"setup failed: {exc}", "setup")
        if self.referee is not None:
            if not self.referee.alive():
                self.referee.restart()
            self._setup(self.referee, [])
        self.rules = RulesReferee(self.args.komi)
        players = {"B": black, "W": white}
        passes = 0
        color = "B"
        while True:
            mover = players[color]
            other = players["W" if color == "B" else "B"]
            try:
                move = mover.ask(f"genmove {color.lower()}", self.args.move_timeout).strip()
            except EngineFailure as exc:
                return self._forfeit(game, color == "B", str(exc), exc.cause, restart=mover)
            if move.lower() == "resign":
                game.winner = "W" if color == "B" else "B"
                game.result = f"{game.winner}+Resign"
                game.reason = f"{mover.name} resigned"
                game.ending = "resign"
                return game
            if not _looks_like_move(move):
                return self._forfeit(game, color == "B", f"{mover.name} answered {move!r}",
                                     "answer")
            if not self.rules.play(color, move):
                return self._forfeit(game, color == "B",
                                     f"{mover.name} played illegal {move} (rules)", "illegal")
            for judge in ([other] + ([self.referee] if self.referee else [])):
                try:
                    judge.ask(f"play {color.lower()} {move}", self.args.timeout)
                except GtpError:
                    return self._forfeit(game, color == "B",
                                         f"{mover.name} played illegal {move} ({judge.name})",
                                         "illegal")
                except EngineFailure as exc:
                    if judge is other:
                        return self._forfeit(game, color == "W", str(exc), exc.cause,
                                             restart=other)
                    raise
            game.moves.append((color, move.upper() if move.lower() != "pass" else "pass"))
            passes = passes + 1 if move.lower() == "pass" else 0
            color = "W" if color == "B" else "B"
            if passes >= 2 or len(game.moves) >= self.args.max_moves:
                return self._score(game, "two passes" if passes >= 2 else "move cap")

    def _score(self, game: GameRecord, why: str) -> GameRecord:
        game.ending = "score"
        if self.args.referee == "":
            game.winner, game.result = parse_score(self.rules.score())
            game.reason = f"{why}, scored by Tromp-Taylor"
            return game
        scorer = self.referee or self.engines[0]
        try:
            game.winner, game.result = parse_score(scorer.ask("final_score", self.args.timeout))
        except EngineFailure as exc:
            game.winner, game.result, game.ending = None, "?", "no result"
            game.reason = f"{why}; scoring failed: {exc}"
            return game
        game.reason = f"{why}, scored by {scorer.name}"
        return game

    @staticmethod
    def _forfeit(game: GameRecord, black_lost: bool, why: str, cause: str,
                 restart: GtpProcess | None = None) -> GameRecord:
        game.winner = "W" if black_lost else "B"
        game.result = f"{game.winner}+Forfeit"
        game.reason = why
        game.ending = f"forfeit {cause}"
        if restart is not None:
            try:
                restart.restart()
            except OSError:
                pass
        return game


def _looks_like_move(text: str) -> bool:
    t = text.lower()
    if t == "pass":
        return True
    return (len(t) >= 2 and t[0].upper() in COLUMNS and t[1:].isdigit()
            and 1 <= int(t[1:]) <= 19)


# ---------------------------------------------------------------------------------- stats
def score_interval(wins: float, games: int, z: float = 1.96) -> tuple[float, float, float]:
    """Score p = wins / games and its normal-approximation 95% interval, clipped to [0, 1]."""
    if games == 0:
        return 0.5, 0.0, 1.0
    p = wins / games
    half = z * math.sqrt(max(p * (1 - p), 0.0) / games)
    return p, max(0.0, p - half), min(1.0, p + half)


def elo(p: float) -> float:
    """Elo difference for score p: 400 log10(p / (1 - p)) (infinite at 0 and 1)."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return 400.0 * math.log10(p / (1.0 - p))


def sprt_llr(wins: int, losses: int, elo0: float = 0.0, elo1: float = 35.0) -> float:
    """Log-likelihood ratio of H1 (elo1) against H0 (elo0) for a win/loss record, with the
    logistic win probability 1 / (1 + 10^(-elo/400)) (Go has no draws)."""
    p0 = 1.0 / (1.0 + 10 ** (-elo0 / 400.0))
    p1 = 1.0 / (1.0 + 10 ** (-elo1 / 400.0))
    return wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def summary(name1: str, wins: float, games: int, sprt: bool) -> str:
    p, lo, hi = score_interval(wins, games)
    text = (f"{name1}: {wins:g}/{games} = {100 * p:.1f}% "
            f"(95% CI {100 * lo:.1f}%..{100 * hi:.1f}%), "
            f"Elo {elo(p):+.0f} ({elo(lo):+.0f}..{elo(hi):+.0f})")
    if sprt:
        llr = sprt_llr(int(wins), games - int(wins))
        low, high = sprt_bounds()
        verdict = "H1 accepted" if llr >= high else "H0 accepted" if llr <= low else "continue"
        text += f"; SPRT(0,35) LLR {llr:.2f} [{low:.2f}, {high:.2f}] {verdict}"
    return text


# ---------------------------------------------------------------------------------- running
def engine1_score(game: GameRecord, name1: str) -> float:
    """Engine 1's point for a game: 1 for a win, 0 for a loss, 1/2 with no result."""
    if game.winner is None:
        return 0.5
    return 1.0 if (game.black if game.winner == "B" else game.white) == name1 else 0.0


def sprt_decided(wins: float, games: int) -> bool:
    llr = sprt_llr(int(wins), games - int(wins))
    low, high = sprt_bounds()
    return llr <= low or llr >= high


def forfeit_line(forfeits: dict[str, dict[str, int]]) -> str:
    """`forfeits: A 2 (crash 1, timeout 1); B 0`: who lost games without playing them out."""
    parts = []
    for name, causes in forfeits.items():
        detail = ", ".join(f"{c} {n}" for c, n in sorted(causes.items()))
        parts.append(f"{name} {sum(causes.values())}" + (f" ({detail})" if detail else ""))
    return "forfeits: " + "; ".join(parts)


class Scoreboard:
    """What the workers share: the next game number, the score, and whether to stop.

    Everything goes through one lock, so the per-game lines and running summaries of parallel
    games never interleave, and an SPRT decision or the time limit stops new games at once
    (games already being played still finish and count: dropping them would bias the score
    towards the faster results)."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.next_number = args.first_game
        self.end_number = args.first_game + args.games
        self.deadline = (time.monotonic() + args.time_limit) if args.time_limit else None
        self.wins = 0.0
        self.played = 0
        self.forfeits: dict[str, dict[str, int]] = {args.name1: {}, args.name2: {}}
        self.stopped = False  # SPRT decided, or the match was interrupted
        self.closed = False  # interrupted: record nothing more

    def add(self, game: GameRecord) -> None:
        """Count a game (played here, or read back by --tally: the same arithmetic)."""
        self.played += 1
        self.wins += engine1_score(game, self.args.name1)
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
        with self.lock:
            if self.closed:
                return
            self.add(game)
            if self.args.sgf_dir:
                write_atomically(os.path.join(self.args.sgf_dir, f"game-{number + 1:03d}.sgf"),
                                 sgf_text(game))
            print(f"game {number + 1}: B {game.black} W {game.white} {game.result} "
                  f"({len(game.moves)} moves; {game.reason})", flush=True)
            print("  " + summary(self.args.name1, self.wins, self.played, self.args.sprt),
                  flush=True)
            if self.args.sprt and sprt_decided(self.wins, self.played):
                self.stopped = True

    def close(self) -> None:
        with self.lock:
            self.stopped = self.closed = True


def worker(match: Match, board: Scoreboard, failures: list[str]) -> None:
    """Play games from the shared counter until none is left. A failure that is not an
    engine's fault (the referee process, the SGF folder) ends this worker only; the game it
    was playing is reported and not counted."""
    try:
        while (number := board.next_game()) is not None:
            try:
                game = match.play_game(number)
            except Exception as exc:  # noqa: BLE001 (reported, the other workers go on)
                failures.append(f"game {number + 1} abandoned: {exc!r}")
                print(f"game {number + 1} abandoned: {exc!r}", file=sys.stderr, flush=True)
                return
            board.record(number, game)
    finally:
        if not board.closed:
            match.close()


def play(args) -> int:
    """Run the match with args.jobs workers; print the final summary."""
    board = Scoreboard(args)
    jobs = max(1, min(args.jobs, args.games))
    tables = [Match(args, None if jobs == 1 else i) for i in range(jobs)]
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
    print(summary(args.name1, board.wins, board.played, args.sprt))
    if any(board.forfeits.values()):
        print(forfeit_line(board.forfeits))
    return 1 if failures else 0


# ---------------------------------------------------------------------------------- tally
SGF_PROPERTY = r"(?<![A-Z]){key}\[((?:\\.|[^\]\\])*)\]"


def sgf_property(text: str, key: str) -> str | None:
    """The (unescaped) value of a root property written by sgf_text, or None."""
    found = re.search(SGF_PROPERTY.format(key=key), text)
    return re.sub(r"\\(.)", r"\1", found.group(1)) if found else None


def read_game(path: str) -> GameRecord:
    """The parts of a game-NNN.sgf that scoring needs: players, winner, ending."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    black, white = sgf_property(text, "PB"), sgf_property(text, "PW")
    if black is None or white is None:
        raise ValueError(f"{path}: no PB/PW")
    result = sgf_property(text, "RE") or ""
    komi = float(sgf_property(text, "KM") or 0)
    game = GameRecord(black, white, komi, result=result,
                      reason=sgf_property(text, "C") or "",
                      ending=sgf_property(text, "GC") or "")
    game.winner = result[0].upper() if result[:2].upper() in ("B+", "W+") else None
    if not game.ending and result.endswith("+Forfeit"):
        game.ending = "forfeit unknown"  # written before GC recorded the cause
    return game


def tally(args) -> int:
    """Re-score the SGF files of one or more runs as a single match."""
    paths = []
    for folder in dict.fromkeys(os.path.realpath(d) for d in args.tally):
        paths += sorted(os.path.join(folder, n) for n in os.listdir(folder)
                        if re.fullmatch(r"game-\d+\.sgf", n))
    names = [os.path.basename(p) for p in paths]
    for name in sorted({n for n in names if names.count(n) > 1}):
        print(f"warning: {name} appears in several folders (all are counted)", file=sys.stderr)
    board = Scoreboard(args)
    board.forfeits = {}
    for path in paths:
        game = read_game(path)
        if args.name1 not in (game.black, game.white):
            print(f"warning: {path}: {args.name1} did not play; skipped", file=sys.stderr)
            continue
        board.add(game)
    print(f"{board.played} games from {len(paths)} files")
    print(summary(args.name1, board.wins, board.played, args.sprt))
    print(forfeit_line(board.forfeits))
    return 0 if board.played else 1


# ---------------------------------------------------------------------------------- main
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine1", help="command line of engine 1")
    ap.add_argument("--engine2", help="command line of engine 2")
    ap.add_argument("--name1", default="engine1")
    ap.add_argument("--name2", default="engine2")
    ap.add_argument("--games", type=int, default=10, help="games to play in this run")
    ap.add_argument("--first-game", type=int, default=0,
                    help="number of this run's first game (0-based), to continue a match")
    ap.add_argument("--jobs", type=int, default=1, help="games played at the same time")
    ap.add_argument("--time-limit", type=float, default=0.0,
                    help="start no game after this many seconds (0: no limit)")
    ap.add_argument("--tally", nargs="+", metavar="DIR",
                    help="play nothing: score the game-*.sgf files in these folders")
    ap.add_argument("--komi", type=float, default=7.5)
    ap.add_argument("--time-settings", default="", help='e.g. "0 5 1" (sent as time_settings)')
    ap.add_argument("--setup1", action="append", default=[], help="extra command for engine 1")
    ap.add_argument("--setup2", action="append", default=[], help="extra command for engine 2")
    ap.add_argument("--referee", default="",
                    help='scoring GTP engine, e.g. "gnugo --mode gtp"; "engine1" asks engine 1; '
                         'default: built-in Tromp-Taylor')
    ap.add_argument("--sgf-dir", default="", help="write game-NNN.sgf files here")
    ap.add_argument("--log-dir", default="", help="engines' stderr logs go here")
    ap.add_argument("--max-moves", type=int, default=722)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds for ordinary commands")
    ap.add_argument("--move-timeout", type=float, default=600.0, help="seconds per genmove")
    ap.add_argument("--sprt", action="store_true", help="stop early when SPRT(0,35) decides")
    args = ap.parse_args(argv)
    if not args.tally and not (args.engine1 and args.engine2):
        ap.error("--engine1 and --engine2 are required (unless --tally)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.name1 == args.name2:
        args.name2 += "'"
    return tally(args) if args.tally else play(args)


if __name__ == "__main__":
    sys.exit(main())
