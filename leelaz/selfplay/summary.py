"""What a self-play run reports: `SelfplaySummary` (what it left in its folder, and how fast it
went) and `ProgressBar` (its bar while it plays), for one process's games
(selfplay/selfplay.py) and for several worker processes' (selfplay/workers.py) alike.

Owns: `SelfplaySummary`, `ProgressBar`. Imports: stdlib, leelaz.progress, selfplay.runner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from leelaz.selfplay.runner import GameRunner, RunStats


@dataclass
class SelfplaySummary:
    """What a run left in its folder, and how fast it went."""

    out_dir: str
    games: int  # finished games in out_dir, earlier runs included
    games_this_run: int
    moves: int  # moves played in this run (games dropped at a stop included)
    seconds: float
    playouts: int = 0  # new visits made by the searches in this run
    root_visits: int = 0
    evaluations: int = 0  # rows the network computed
    network_calls: int = 0
    backend: str = ""
    already_done: bool = False  # the folder held the games asked for: nothing was played

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.seconds if self.seconds > 0 else 0.0

    @property
    def visits_per_second(self) -> float:
        return self.playouts / self.seconds if self.seconds > 0 else 0.0

    @property
    def evaluations_per_second(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else 0.0

    @property
    def mean_batch(self) -> float:
        return self.evaluations / self.network_calls if self.network_calls else 0.0

    def line(self) -> str:
        if self.already_done:
            return (f"{self.games} games in {self.out_dir}: they were all there already; "
                    "nothing to play (ask for more with --games)")
        ms = 1000 * self.seconds / self.moves if self.moves else 0.0
        return (f"{self.games} games in {self.out_dir} ({self.games_this_run} this run); "
                f"{self.moves} moves in {self.seconds:.1f} s: {self.moves_per_second:.2f} "
                f"moves/s ({ms:.0f} ms/move), {self.visits_per_second:.0f} visits/s, "
                f"{self.evaluations_per_second:.0f} evals/s, mean batch {self.mean_batch:.1f}")


class ProgressBar:
    """leelaz.progress's bar in moves (tqdm on a terminal, else nothing): the moves of this
    run's games with the time left, games finished, visits/s."""

    def __init__(self, games: int, what: str, max_moves: int):
        from leelaz.progress import MoveBar
        self._began = time.monotonic()
        self._bar = MoveBar(games, f"selfplay {what}", max_moves)

    def update(self, runner: GameRunner) -> None:
        stats: RunStats = runner.stats
        self.update_counts(stats.moves, stats.playouts, stats.games, stats.finished_moves)

    def update_counts(self, moves: int, playouts: int, games: int,
                      finished_moves: int = 0) -> None:
        s = max(1e-9, time.monotonic() - self._began)
        self._bar.update(moves, games, finished_moves, f"{playouts / s:.0f} visits/s")

    def close(self, runner: GameRunner | None) -> None:
        if runner is not None:
            self.update(runner)
        self._bar.close()
