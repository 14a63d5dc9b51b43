"""Progress bars for long work: tqdm when it is installed, nothing when it is not.

Owns: `progress(total, desc)`, the one way the verbs and the trainer show progress, and
`MoveBar`, the bar in moves of work counted in games whose lengths are not known in advance
(self-play, matches). Imports: tqdm (a dependency; without it, no bar), lazily; any module
may use it.

The bar goes to stderr and only when stderr is a terminal, so piped output and logs hold just
the verb's own lines; `say` prints a line above the bar without breaking it.
"""

from __future__ import annotations

import sys


class _NoBar:
    """The stand-in when tqdm is missing or the output is not a terminal."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def set_total(self, total: float) -> None:
        pass

    def say(self, text: str) -> None:
        print(text, flush=True)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _TqdmBar(_NoBar):
    def __init__(self, bar):
        self.bar = bar

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_postfix_str(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=True)

    def set_total(self, total: float) -> None:
        self.bar.total = total
        self.bar.refresh()

    def say(self, text: str) -> None:
        self.bar.write(text, file=sys.stdout)
        sys.stdout.flush()

    def close(self) -> None:
        self.bar.close()


def progress(total: int | float | None, desc: str, unit: str = "it",
             enabled: bool = True) -> _NoBar:
    """A bar counting to `total` (None: open-ended), or a silent stand-in."""
    if not enabled or not sys.stderr.isatty():
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return _TqdmBar(tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                         dynamic_ncols=True))


#: Moves a game is guessed to last before any game of the run has finished (Leela Zero's
#: self-play games on 19x19 average a little over 200 moves with resignation).
PRIOR_GAME_MOVES = 250


class MoveBar:
    """A bar counting moves, for work counted in games: its total is the moves played plus,
    for each game not finished, the mean length of the games finished so far (PRIOR_GAME_MOVES
    until one has), capped at `max_moves`; so the bar's rate and time left are in moves, and
    its estimate sharpens as games finish. The postfix says how many games are done."""

    def __init__(self, games: int, desc: str, max_moves: int = 722, enabled: bool = True):
        self.games = games
        self.max_moves = max_moves
        self.moves = 0
        self.finished = 0
        self.finished_moves = 0
        self.bar = progress(self.estimate(), desc, unit="move", enabled=enabled)

    def estimate(self) -> int:
        """The moves the run is expected to play in all, on what is known now."""
        per_game = (self.finished_moves / self.finished if self.finished
                    else min(PRIOR_GAME_MOVES, self.max_moves))
        in_flight = max(0, self.games - self.finished)
        return max(self.moves, round(self.finished_moves + in_flight * per_game))

    def update(self, moves: int, finished: int, finished_moves: int, extra: str = "") -> None:
        """The run's totals now: moves played (all games), games finished and their moves."""
        if moves > self.moves:
            self.bar.update(moves - self.moves)
            self.moves = moves
        if finished != self.finished:
            self.finished, self.finished_moves = finished, finished_moves
        self.bar.set_total(self.estimate())
        self.bar.set_postfix_str(f"{self.finished}/{self.games} games" +
                                 (f", {extra}" if extra else ""))

    def say(self, text: str) -> None:
        self.bar.say(text)

    def close(self) -> None:
        self.bar.close()
