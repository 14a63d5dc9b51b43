#!/usr/bin/env python3
"""Time control check: leelaz plays GNU Go under a clock and must never run out of time.

Two games (UCTSearch::think and src/TimeControl.cpp):
- `time_settings 60 0 0` (60 s absolute): our clock is kept here from the wall time of every
  genmove (from writing the command to reading the reply); the game is lost on time if the
  total ever exceeds 60 s.
- `time_settings 0 5 1` (Canadian byo-yomi, 5 s per move): no genmove may take longer than
  5 s minus the lag buffer (-b, 100 cs by default), which is what the engine budgets for,
  plus --tolerance (0.2 s: LZ 0.17 itself answers 30-90 ms after its budget here), and never
  longer than the 5 s period.
Both engines get the clock; GNU Go (`--level 1`, fast) is the opponent and the referee: a move
it refuses as illegal ends the game as a failure. Games end by two passes, a resignation or
the move cap (--max-moves, --byo-moves: the byo-yomi game spends ~4 s on each of our moves).

    python scripts/time_check.py                       # default net in weights/, else 1x8
    python scripts/time_check.py -w net.gz --extra=--cpu-only --byo-moves 60 --log-dir /tmp/tc
    python scripts/time_check.py --only absolute --engine /usr/games/leelaz --extra=--cpu-only

The engine runs as a user would start it (`leelaz -g -w FILE`, pondering on unless
--noponder, no time_left: it keeps its own clock, as under Sabaki or Lizzie; --time-left
sends the clock kept here before each genmove, as a server does). Exit status 1 when any
game was lost on time, broke the byo-yomi limit, or had an illegal move or a dead engine.
The engines are subprocesses driven by leelaz.gtp.client; run it from the checkout with
PYTHONPATH=. (or with leelaz installed).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from leelaz.backends.random_weights import make_random_weights
from leelaz.gtp.client import GtpClient, GtpErrorReply, GtpFailure

ROOT = Path(__file__).resolve().parent.parent
COLOURS = ("b", "w")


class Gtp(GtpClient):
    """One GTP engine (leelaz.gtp.client): replies stripped, two minutes by default."""

    def __init__(self, argv: list[str], log_path: str | None = None):
        super().__init__(argv, stderr=log_path)

    def ask(self, command: str, timeout: float = 120) -> str:
        return super().ask(command, timeout).strip()

    def close(self) -> None:
        super().close(timeout=10)


@dataclass
class Game:
    setting: str
    ours: str  # our colour, b or w
    limit_s: float  # absolute: the whole game; byo-yomi: per move
    per_move: bool
    lag_s: float
    tolerance_s: float = 0.0  # allowed beyond limit - lag (the search's own overhead)
    moves: list[str] = field(default_factory=list)
    our_times: list[float] = field(default_factory=list)
    result: str = ""
    failure: str = ""

    @property
    def used(self) -> float:
        return sum(self.our_times)

    @property
    def longest(self) -> float:
        return max(self.our_times, default=0.0)

    def report(self) -> str:
        budget = (f"each move <= {self.limit_s - self.lag_s:.2f} s (byo {self.limit_s:.0f} s "
                  f"- lag {self.lag_s:.2f} s) + {self.tolerance_s:.2f} s; "
                  f"{sum(t > self.limit_s - self.lag_s for t in self.our_times)} moves over "
                  f"{self.limit_s - self.lag_s:.2f} s, none may pass {self.limit_s:.0f} s"
                  if self.per_move
                  else f"total <= {self.limit_s:.0f} s")
        status = "FAIL: " + self.failure if self.failure else "ok"
        return (f"time_settings {self.setting}, engine {'Black' if self.ours == 'b' else 'White'}"
                f": {len(self.moves)} moves, {len(self.our_times)} of ours; longest "
                f"{self.longest:.3f} s, total used {self.used:.3f} s ({budget}); "
                f"result {self.result or '?'}; {status}")


def play_game(ours_cmd: list[str], gnugo_cmd: list[str], game: Game, max_moves: int,
              send_time_left: bool, log_dir: str | None, index: int) -> Game:
    def log(name):
        return os.path.join(log_dir, f"game{index}-{name}.log") if log_dir else None

    ours = Gtp(ours_cmd, log("leelaz"))
    gnugo = Gtp(gnugo_cmd, log("gnugo"))
    try:
        _, byo_s, stones = game.setting.split()
        for engine in (ours, gnugo):
            engine.ask("boardsize 19")
            engine.ask("clear_board")
            engine.ask("komi 7.5")
            engine.ask(f"time_settings {game.setting}")
        passes, to_move = 0, 0
        while len(game.moves) < max_moves:
            colour = COLOURS[to_move]
            if colour == game.ours:
                if send_time_left:
                    if game.per_move:
                        ours.ask(f"time_left {colour} {byo_s} {stones}")
                    else:
                        left = max(0, int(game.limit_s - game.used))
                        ours.ask(f"time_left {colour} {left} 0")
                began = time.monotonic()
                move = ours.ask(f"genmove {colour}", timeout=game.limit_s + 60)
                elapsed = time.monotonic() - began
                game.our_times.append(elapsed)
                if game.per_move and elapsed > min(game.limit_s,
                                                   game.limit_s - game.lag_s + game.tolerance_s):
                    game.failure = game.failure or (
                        f"move {len(game.moves) + 1} took {elapsed:.2f} s")
                if not game.per_move and game.used > game.limit_s:
                    game.failure = f"lost on time at move {len(game.moves) + 1}"
                    game.result = f"{'W' if colour == 'b' else 'B'}+Time"
                    break
                if move.lower() != "resign":
                    try:
                        gnugo.ask(f"play {colour} {move}")
                    except GtpErrorReply as exc:
                        game.failure = f"GNU Go refused our move: {exc}"
                        break
            else:
                move = gnugo.ask(f"genmove {colour}")
                if move.lower() != "resign":
                    ours.ask(f"play {colour} {move}")
            game.moves.append(f"{colour} {move}")
            if move.lower() == "resign":
                game.result = f"{'W' if colour == 'b' else 'B'}+Resign"
                break
            passes = passes + 1 if move.lower() == "pass" else 0
            if passes >= 2:
                break
            to_move = 1 - to_move
        if not game.result and not game.failure:
            game.result = score(gnugo, passes >= 2, max_moves)
    except GtpFailure as exc:
        game.failure = game.failure or str(exc)
    finally:
        ours.close()
        gnugo.close()
    return game


def score(gnugo: Gtp, ended: bool, max_moves: int) -> str:
    """GNU Go's final_score after two passes, else its (faster) estimate at the move cap;
    scoring is not what is checked, so a slow or failed score only gives '?'."""
    try:
        if ended:
            return gnugo.ask("final_score", timeout=120)
        return gnugo.ask("estimate_score", timeout=60) + f" (estimate at the {max_moves}-move cap)"
    except GtpFailure:
        return "?"


def default_weights(folder: str) -> str:
    """The default network in weights/ if there is one, else a seeded random 1x8 net."""
    shipped = sorted(glob.glob(str(ROOT / "weights" / "*.gz")))
    if shipped:
        return shipped[0]
    return make_random_weights(os.path.join(folder, "net-1x8-s1.txt"), 1, 8, 1, tame=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-w", "--weights", help="network (default: weights/*.gz, else random 1x8)")
    ap.add_argument("--engine", default=f"{sys.executable} -m leelaz",
                    help="how to start leelaz (default: this Python's -m leelaz)")
    ap.add_argument("--extra", default="",
                    help="more leelaz options, given with '=': --extra='--cpu-only -t 2'")
    ap.add_argument("-b", "--lagbuffer", type=int, default=100, help="centiseconds (LZ: 100)")
    ap.add_argument("--noponder", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.2,
                    help="seconds a byo-yomi move may run past byo - lag: LZ 0.17 itself "
                         "answers 0.03-0.09 s after its budget (the search stops at the "
                         "budget; the root evaluation, stats and the pipes come on top)")
    ap.add_argument("--gnugo", default="/usr/games/gnugo --mode gtp --level 1")
    ap.add_argument("--max-moves", type=int, default=400, help="cap for the absolute game")
    ap.add_argument("--byo-moves", type=int, default=60, help="cap for the byo-yomi game")
    ap.add_argument("--time-left", action="store_true", help="send time_left before genmove")
    ap.add_argument("--log-dir", help="stderr of each engine per game goes here")
    ap.add_argument("--only", choices=("absolute", "byoyomi"), help="play one of the games")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        weights = args.weights or default_weights(folder)
        ours_cmd = [*args.engine.split(), "-g", "-w", weights, "-b", str(args.lagbuffer),
                    *args.extra.split(), *(["--noponder"] if args.noponder else [])]
        gnugo_cmd = args.gnugo.split()
        if args.log_dir:
            os.makedirs(args.log_dir, exist_ok=True)
        lag = args.lagbuffer / 100.0
        games = []
        if args.only in (None, "absolute"):
            games.append((Game("60 0 0", "b", 60.0, False, lag), args.max_moves))
        if args.only in (None, "byoyomi"):
            games.append((Game("0 5 1", "w", 5.0, True, lag, args.tolerance), args.byo_moves))
        print(f"leelaz: {' '.join(ours_cmd)}\nGNU Go: {' '.join(gnugo_cmd)}\n"
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        failed = False
        for i, (game, cap) in enumerate(games, 1):
            play_game(ours_cmd, gnugo_cmd, game, cap, args.time_left, args.log_dir, i)
            times = ", ".join(f"{t:.3f}" for t in game.our_times)
            print(game.report(), flush=True)
            print(f"  our move times (s): {times}", flush=True)
            failed |= bool(game.failure)
        print(f"load average {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
