"""Progress of long work: a tqdm bar on a terminal, a plain line every 30 s in a log.

Owns: `progress(total, desc, unit, enabled)`, the one way the verbs and the trainer show
progress, and `MoveBar`, the bar in moves of work counted in games whose lengths are not known
in advance (self-play, matches). Imports: tqdm (a dependency), lazily; any module may use it.

On a terminal the bar goes to stderr with tqdm's estimate of the time left (it has one when
`total` is given). When stderr is not a terminal (a log file, `nohup`, a pipe), a bar's
carriage returns would be noise, so a plain line goes to stderr instead, at most every
LINE_SECONDS: `desc: done/total unit (percent), elapsed, about N left`, so that the logs of
long runs show how far they are too. `say` prints a line on stdout without breaking the bar.

Work done before this run (the finished games of a resumed self-play folder or Zero run) is
given as `initial`: it counts towards done/total but not towards the rate, so the estimate is
this run's pace. (Guessing it from how early an update comes would take a fast run's first
real work for old work.)
"""

from __future__ import annotations

import sys
import time

#: The least time between two plain progress lines when stderr is not a terminal.
LINE_SECONDS = 30.0


class _NoBar:
    """Progress that shows nothing: enabled=False."""

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


def _clock() -> float:
    """Seconds on a monotonic clock (a test replaces it)."""
    return time.monotonic()


class _Pace:
    """Done so far, and the rate of this run (the `initial` work of earlier runs excluded)."""

    def __init__(self, initial: int | float = 0):
        self.clock = lambda: _clock()
        self.started = self.base_time = _clock()
        self.done = self.base_done = initial

    def add(self, n: int) -> None:
        self.done += n

    def seconds_left(self, total) -> float | None:
        elapsed = self.clock() - self.base_time
        rate = (self.done - self.base_done) / elapsed if elapsed > 0 else 0.0
        if not total or rate <= 0:
            return None
        return max(0.0, (total - self.done) / rate)


class _LineProgress(_NoBar):
    """A plain line on stderr at most every LINE_SECONDS (stderr is not a terminal)."""

    def __init__(self, total, desc: str, unit: str, initial: int | float = 0):
        self.total, self.desc, self.unit = total, desc, unit
        self.pace = _Pace(initial)
        self.postfix = ""
        self.last_line = self.pace.started

    def update(self, n: int = 1) -> None:
        self.pace.add(n)
        self._maybe_line()

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text
        self._maybe_line()

    def set_total(self, total: float) -> None:
        self.total = total

    def _maybe_line(self) -> None:
        now = self.pace.clock()
        if now - self.last_line >= LINE_SECONDS:
            self.last_line = now
            print(self.line(), file=sys.stderr, flush=True)

    def line(self) -> str:
        done, total = self.pace.done, self.total
        head = f"{self.desc}: " if self.desc else ""
        if total:
            count = f"{_number(done)}/{_number(total)} {self.unit} ({100 * done / total:.0f}%)"
        else:
            count = f"{_number(done)} {self.unit}"
        parts = [count, f"{duration(self.pace.clock() - self.pace.started)} elapsed"]
        left = self.pace.seconds_left(total)
        if left is not None:
            parts.append(f"about {duration(left)} left")
        if self.postfix:
            parts.append(self.postfix)
        return head + ", ".join(parts)


class _TqdmBar(_NoBar):
    """tqdm's bar; work from before this run is tqdm's `initial`, so not in its rate."""

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


def _number(x: int | float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def duration(seconds: float) -> str:
    """`45 s`, `12 min 5 s`, `3 h 20 min`: a duration as a log reader wants it."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def progress(total: int | float | None, desc: str, unit: str = "it",
             enabled: bool = True, initial: int | float = 0) -> _NoBar:
    """Progress counting to `total` (None: open-ended) from `initial` (work of earlier runs):
    a bar on a terminal, plain lines in a log, nothing when not enabled."""
    if not enabled:
        return _NoBar()
    if not sys.stderr.isatty():
        return _LineProgress(total, desc, unit, initial)
    from tqdm import tqdm
    return _TqdmBar(tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                         dynamic_ncols=True, initial=initial))


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
