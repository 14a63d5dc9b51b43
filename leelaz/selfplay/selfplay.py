"""`play_selfplay`: autogtp's job in one process, games in flight batched together.

Owns: `play_selfplay`, `SelfplaySummary`, `run_games` (one process's share). Imports:
selfplay.* (settings, store, runner, game), game.coords.

Per game: a seed (from the run seed and the game's index, or random), the 10 % no-resign draw,
a fresh search and Network (its own cache and symmetries) on the shared backend; then the
game's chunk, debug file and SGF are committed (selfplay/store.py). Games already finished in
the folder count towards `games`. One run at a time writes into a folder (selfplay/lifetime.py):
two runs counting the same finished games would each play the missing ones.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from leelaz.game.coords import BLACK, WHITE
from leelaz.selfplay.game import GameInPlay, Player
from leelaz.selfplay.lifetime import FolderBusy, FolderLock
from leelaz.selfplay.runner import EngineSide, GameRunner, RunStats, SelfplayError
from leelaz.selfplay.settings import SELFPLAY_DEFAULTS, SelfplaySettings
from leelaz.selfplay.store import GameStore, StoreError


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
        ms = 1000 * self.seconds / self.moves if self.moves else 0.0
        return (f"{self.games} games in {self.out_dir} ({self.games_this_run} this run); "
                f"{self.moves} moves in {self.seconds:.1f} s: {self.moves_per_second:.2f} "
                f"moves/s ({ms:.0f} ms/move), {self.visits_per_second:.0f} visits/s, "
                f"{self.evaluations_per_second:.0f} evals/s, mean batch {self.mean_batch:.1f}")


def play_selfplay(weights: str, out_dir: str, games: int, *, visits: int = 1601,
                  parallel: int = 8, seed: int | None = None, cpu_only: bool = False,
                  gpus: tuple = (), progress: bool = True, seconds: float | None = None,
                  no_resign_share: float | None = None, max_moves: int | None = None,
                  workers: int = 1, backend=None, **engine_options) -> SelfplaySummary:
    """Play self-play games into `out_dir` until it holds `games` finished games.

    `engine_options`: EngineConfig fields of the engine's flags (resignpct, noise, randomcnt,
    dumbpass, threads, batchsize, precision, randomvisits, randomtemp, playouts, ...).
    `seconds` stops the run (dropping the games in flight) after that long: the benchmark.
    `workers` > 1 runs that many processes (selfplay/workers.py), each with `parallel` games.
    `backend(weights)`, when given, makes the backend instead of the device choice (the
    benchmark's instant network); it must be picklable with workers.
    Raises SelfplayError for bad input (weights, folder, disk); KeyboardInterrupt after the
    games in flight were dropped cleanly.
    """
    if games < 1:
        raise SelfplayError(f"--games must be at least 1, not {games}")
    extra = {}
    if no_resign_share is not None:
        extra["no_resign_share"] = no_resign_share
    if max_moves is not None:
        extra["max_moves"] = max_moves
    settings = SelfplaySettings.build(SELFPLAY_DEFAULTS, seed=seed, cpu_only=cpu_only,
                                      gpus=gpus, weights=weights, visits=visits, **extra,
                                      **engine_options)
    if not os.path.isfile(weights):  # before the folder is made: bad input leaves nothing
        raise SelfplayError(f"weights file not found: {weights}")
    try:
        store = GameStore(out_dir)
    except StoreError as exc:
        raise SelfplayError(str(exc)) from None
    try:
        lock = FolderLock(store.folder, "selfplay")
    except FolderBusy as exc:
        store.close()
        raise SelfplayError(str(exc)) from None
    try:
        wanted = games - len(store.finished())
        if workers > 1 and wanted > 1:
            from leelaz.selfplay.workers import run_workers
            first = store.highest_index() + 1
            store.close()
            return run_workers(settings, weights, store.folder, wanted, min(workers, wanted),
                               max(1, parallel), progress, seconds, first, backend)
        return run_games(settings, weights, store, wanted, max(1, parallel), progress,
                         seconds, backend=backend)
    finally:
        store.close()
        lock.release()


def run_games(settings: SelfplaySettings, weights: str, store: GameStore, wanted: int,
              parallel: int, progress: bool, seconds: float | None,
              counters=None, backend=None, orphaned=None) -> SelfplaySummary:
    """Play `wanted` more games into the store's folder, `parallel` at a time, in this
    process. `counters` (moves, playouts, games; shared with a parent) count along."""
    out_dir = store.folder
    if wanted <= 0:
        return SelfplaySummary(out_dir, len(store.finished()), 0, 0, 0.0)
    parallel = min(parallel, wanted)
    cfg = settings.engine
    side = EngineSide(weights, cpu_only=cfg.cpu_only, gpus=cfg.gpus, precision=cfg.precision,
                      batch_rows=parallel * settings.leaves_per_batch,
                      full_tuner=cfg.full_tuner, backend=backend, max_batch=cfg.batchsize,
                      network_backend=cfg.network_backend)
    handed_out = [0]

    def next_job():
        if handed_out[0] >= wanted:
            return None
        handed_out[0] += 1
        return store.next_index()

    lookups = not cfg.noise and cfg.randomcnt == 0

    def new_game(index: int, group: int, runner: GameRunner) -> GameInPlay:
        game_seed = settings.game_seed(index)
        no_resign = settings.no_resign(game_seed)
        params = settings.search_params(no_resign)
        player = Player.create(side.weights, side.backend_for(group), weights, params,
                               game_seed, settings.cache_size(), symmetric_lookups=lookups)
        return GameInPlay({BLACK: player, WHITE: player},
                          options=settings.option_text(game_seed, no_resign),
                          max_moves=settings.max_moves, record=True,
                          resign_pct=params.resign_pct, should_stop=runner.stopping,
                          on_move=runner.on_move)

    def commit(index: int, game) -> None:
        try:
            store.commit(index, sgf=game.sgf, chunk=game.chunk, debug=game.debug)
        except OSError as exc:
            raise SelfplayError(f"cannot write games to {out_dir}: "
                                f"{exc.strerror or exc}") from None
        if counters is not None:
            counters.add(0, 0, 1)

    done_before = len(store.finished())
    bar = _ProgressBar(done_before + wanted, done_before, side.describe()) if progress else None
    runner = GameRunner(parallel, next_job, new_game, commit, [side], counters=counters,
                        orphaned=orphaned,
                        progress=bar.update if bar else None,
                        deadline=None if seconds is None else time.monotonic() + seconds)
    try:
        stats = runner.run()
    finally:
        if bar is not None:
            bar.close(runner)
    return SelfplaySummary(out_dir, len(store.finished()), stats.games, stats.moves,
                           stats.seconds, stats.playouts, stats.root_visits, side.rows,
                           side.calls, side.describe())


class _ProgressBar:
    """leelaz.progress's bar (tqdm on a terminal, else nothing): games done of the total
    (earlier runs included), moves/s and visits/s of this run."""

    def __init__(self, total: int, initial: int, what: str):
        from leelaz.progress import progress
        self._began = time.monotonic()
        self._bar = progress(total, f"selfplay {what}", unit="game")
        self._bar.update(initial)
        self._shown = 0

    def update(self, runner: GameRunner) -> None:
        stats: RunStats = runner.stats
        self.update_counts(stats.moves, stats.playouts, stats.games)

    def update_counts(self, moves: int, playouts: int, games: int) -> None:
        s = max(1e-9, time.monotonic() - self._began)
        if games > self._shown:
            self._bar.update(games - self._shown)
            self._shown = games
        self._bar.set_postfix_str(f"{moves / s:.1f} moves/s, {playouts / s:.0f} visits/s")

    def close(self, runner: GameRunner | None) -> None:
        if runner is not None:
            self.update(runner)
        self._bar.close()
