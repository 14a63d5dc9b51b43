"""`play_selfplay`: autogtp's job in one process, games in flight batched together.

Owns: `play_selfplay`, `run_games` (one process's share). Imports: selfplay.* (settings,
store, runner, game, summary: `SelfplaySummary` and the progress bar; workers, which runs
`run_games` in several processes), game.coords.

Per game: a seed (from the run seed and the game's index, or random), the 10 % no-resign draw,
a fresh search and Network (its own cache and symmetries) on the shared backend; then the
game's chunk, debug file and SGF are committed (selfplay/store.py). Games already finished in
the folder count towards `games`. One run at a time writes into a folder (selfplay/lifetime.py):
two runs counting the same finished games would each play the missing ones.
"""

from __future__ import annotations

import math
import os
import time

from leelaz.game.coords import BLACK, WHITE
from leelaz.selfplay.game import GameInPlay, Player
from leelaz.selfplay.lifetime import FolderBusy, FolderLock
from leelaz.selfplay.runner import EngineSide, GameRunner, SelfplayError, warn
from leelaz.selfplay.settings import SELFPLAY_DEFAULTS, SelfplaySettings
from leelaz.selfplay.store import GameStore, StoreError
from leelaz.selfplay.summary import ProgressBar, SelfplaySummary
from leelaz.selfplay.targets import full_search, game_komi
from leelaz.selfplay.workers import run_workers


def play_selfplay(weights: str, out_dir: str, games: int, *, visits: int = 1601,
                  parallel: int = 8, seed: int | None = None, cpu_only: bool = False,
                  gpus: tuple = (), progress: bool = True, seconds: float | None = None,
                  no_resign_share: float | None = None, max_moves: int | None = None,
                  workers: int = 1, backend=None, full_share: float = 1.0,
                  cheap_visits: int = 0, forced_k: float = 0.0, komi_spread: float = 0.0,
                  checked_resign: bool = False, resign_evidence: tuple = (),
                  network_server: bool = False, **engine_options) -> SelfplaySummary:
    """Play self-play games into `out_dir` until it holds `games` finished games.

    `engine_options`: EngineConfig fields of the engine's flags (resignpct, noise, randomcnt,
    dumbpass, threads, batchsize, precision, randomvisits, randomtemp, playouts, ...).
    `seconds` stops the run (dropping the games in flight) after that long: the benchmark.
    `workers` > 1 runs that many processes (selfplay/workers.py), each with `parallel` games;
    `network_server`: they share one network server where they would share one device.
    `backend(weights)`, when given, makes the backend instead of the device choice (the
    benchmark's instant network); it must be picklable with workers.
    KataGo's additions (selfplay/targets.py): `full_share` of the moves get the full search
    and are recorded, the others `cheap_visits` (0: a full search's / 8) without noise and
    unrecorded; `forced_k` > 0 forces playouts at full searches and prunes them from the
    targets; `komi_spread` draws each game's komi around 7.5. `checked_resign` plays without
    resigning until the no-resign games in `out_dir` and `resign_evidence` show a false
    resignation rate under 5 % at the threshold (selfplay/resign.py `resign_allowed`).
    Raises SelfplayError for bad input (weights, folder, disk); KeyboardInterrupt after the
    games in flight were dropped cleanly.
    """
    if games < 1:
        raise SelfplayError(f"--games must be at least 1, not {games}")
    check_additions(full_share, cheap_visits, forced_k, komi_spread,
                    engine_options.get("playouts") or 0, visits)
    extra = {}
    if no_resign_share is not None:
        extra["no_resign_share"] = no_resign_share
    if max_moves is not None:
        extra["max_moves"] = max_moves
    settings = SelfplaySettings.build(SELFPLAY_DEFAULTS, seed=seed, cpu_only=cpu_only,
                                      gpus=gpus, weights=weights, visits=visits, **extra,
                                      full_share=full_share, cheap_visits=cheap_visits,
                                      forced_k=forced_k, komi_spread=komi_spread,
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
        if checked_resign:
            settings = _checked_resignation(settings, store.folder, resign_evidence, progress)
        wanted = games - len(store.finished())
        if workers > 1 and wanted > 1:
            first = store.highest_index() + 1
            store.close()
            return run_workers(run_games, settings, weights, store.folder, wanted,
                               min(workers, wanted), max(1, parallel), progress, seconds, first,
                               backend, network_server)
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
        return SelfplaySummary(out_dir, len(store.finished()), 0, 0, 0.0, already_done=True)
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
                          on_move=runner.on_move,
                          komi=game_komi(game_seed, settings.komi_spread),
                          plan=_move_plan(settings, params, game_seed),
                          prune_k=settings.forced_k)

    def commit(index: int, game) -> None:
        try:
            store.commit(index, sgf=game.sgf, chunk=game.chunk, debug=game.debug)
        except OSError as exc:
            raise SelfplayError(f"cannot write games to {out_dir}: "
                                f"{exc.strerror or exc}") from None
        if counters is not None:
            counters.add(0, 0, 1, game.moves)

    if progress and (seconds is None or seconds > SLOW_RUN_SECONDS):
        note = slow_run_note(side, settings, wanted, parallel)
        if note:
            warn(note)
    bar = ProgressBar(wanted, side.describe(), settings.max_moves) if progress else None
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


def check_additions(full_share: float, cheap_visits: int, forced_k: float,
                    komi_spread: float, playouts: int, visits: int) -> None:
    """SelfplayError (one line, naming the option and value) for bad values of KataGo's
    additions."""
    if not 0.0 < full_share <= 1.0:
        raise SelfplayError(f"--full-share must be above 0 and at most 1, not {full_share:g}")
    if cheap_visits < 0:
        raise SelfplayError(f"--cheap-visits must be at least 1, not {cheap_visits}")
    limit = min(v for v in (visits, playouts, 2**62) if v > 0)
    if full_share < 1.0 and limit == 2**62:
        raise SelfplayError("--full-share below 1 needs a visit limit (-v or -p) for its "
                            "full searches")
    if full_share < 1.0 and cheap_visits >= limit:
        raise SelfplayError(f"--cheap-visits {cheap_visits} must be below the full search's "
                            f"{limit} visits")
    if not (forced_k >= 0.0 and math.isfinite(forced_k)):
        raise SelfplayError(f"--forced-playouts must be 0 (off) or more, not {forced_k:g}")
    if not (komi_spread >= 0.0 and komi_spread <= MAX_KOMI_SPREAD):
        raise SelfplayError(f"--komi-spread must be 0 to {MAX_KOMI_SPREAD:g} points, "
                            f"not {komi_spread:g}")


#: Komi randomisation's largest standard deviation: komi stays within a board's worth of points.
MAX_KOMI_SPREAD = 60.0


def _checked_resignation(settings: SelfplaySettings, folder: str, evidence: tuple,
                         say: bool) -> SelfplaySettings:
    """The settings with resignation off (-r 0) unless the no-resign games of `folder` and
    `evidence` allow the threshold (selfplay/resign.py `resign_allowed`); the decision is
    said in one line when `say`."""
    from leelaz.selfplay.resign import resign_allowed
    pct = settings.engine.resignpct
    if pct == 0:
        return settings
    allowed, why = resign_allowed((folder, *evidence), pct)
    if say:
        warn(f"selfplay: resignation at {pct if pct > 0 else 10}% "
             f"{'on' if allowed else 'off for this run'}: {why}")
    return settings if allowed else settings.with_engine(resignpct=0)


def _move_plan(settings: SelfplaySettings, full, game_seed: int):
    """Playout-cap randomisation's plan for a game: move_num -> (its search's parameters,
    recorded); None (every search full and recorded, Leela Zero's way) when it is off."""
    if not settings.capped:
        return None
    cheap = settings.cheap_params(full)
    share = settings.full_share

    def plan(move_num: int):
        if full_search(game_seed, move_num, share):
            return full, True
        return cheap, False
    return plan


#: A run expected to take longer than this says so at its start, with a hint.
SLOW_RUN_SECONDS = 180.0
#: The host's own time per visit (the tree walk, in Python), added to the network's time.
HOST_SECONDS_PER_VISIT = 0.0003


def slow_run_note(side: EngineSide, settings: SelfplaySettings, games: int,
                  parallel: int) -> str:
    """A line for a run that will take long on this machine, else "": the network's speed
    measured on one batch of the size the run sends (after a warm-up call), the search's
    visits per move and a guessed game length give the run's time. -v 1601 on a CPU is many
    seconds a move, which a user starting `leelaz selfplay` with its defaults should hear
    before the first game, not after an hour of silence."""
    import numpy as np

    from leelaz.progress import PRIOR_GAME_MOVES
    cfg = settings.engine
    visits = min(v for v in (cfg.visits, cfg.playouts, 10**9) if v > 0)
    if visits == 10**9:
        return ("selfplay: -v 0 and -p 0 set no limit on a move's search: each move runs until "
                "memory is full; give -v (or --seconds to stop the run)")
    rows = max(1, min(parallel * settings.leaves_per_batch, 64))
    planes = np.zeros((rows, 18, 19, 19), np.float32)
    planes[:, 17] = 1.0  # Black to move
    try:
        side.backend.forward(planes)  # warm-up: first calls compile or allocate
        began = time.perf_counter()
        side.backend.forward(planes)
        per_visit = (time.perf_counter() - began) / rows + HOST_SECONDS_PER_VISIT
    except Exception:  # noqa: BLE001 - an estimate only: the run itself reports failures
        return ""
    moves = games * min(PRIOR_GAME_MOVES, settings.max_moves)
    seconds = moves * visits * per_visit
    if seconds < SLOW_RUN_SECONDS:
        return ""
    return (f"selfplay: {games} games of about {min(PRIOR_GAME_MOVES, settings.max_moves)} "
            f"moves at {visits} visits take about {_duration(seconds)} here "
            f"({side.describe()}: {visits * per_visit:.1f} s of search a move); fewer visits "
            f"(e.g. -v 100) or fewer --games make a quicker run")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
