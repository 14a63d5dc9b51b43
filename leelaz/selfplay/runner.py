"""Many games at once in one process: a thread per game slot, one network call per round.

Owns: `EngineSide` (a network loaded once, its backend and its coalescer), `GameRunner` (the
slots, stopping, progress and counters), `RunStats`. Imports: threading, time,
backends (weights, device choice), selfplay.*.

Each of the `parallel` slots is a thread that plays one game after another; the games' leaves
meet in the coalescer (selfplay/coalesce.py). Under the GIL only one game walks its tree at a
time; the network call runs with the GIL released (NumPy, OpenCL), and that is where the
other games' searches wait. Threads, rather than a step API on the search, because they need
nothing but the search's public `think()` and the evaluator seam.

Stopping: `stop()` (Ctrl-C, an error in one game) makes each game raise SelfplayStopped at its
next move or network call; the time limit (`deadline`, the benchmark) lets each game finish
its current move first. A stopped game writes nothing. Only finished games are committed
(selfplay/store.py), so an interrupted run leaves whole games.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from leelaz.selfplay.coalesce import BatchCoalescer, SelfplayStopped


class SelfplayError(Exception):
    """A problem the user must fix (bad weights, unwritable folder, full disk): one line."""


@dataclass
class RunStats:
    """Throughput figures of one run (all games, finished or not)."""

    moves: int = 0
    playouts: int = 0
    root_visits: int = 0
    games: int = 0  # games finished (and committed) in this run
    seconds: float = 0.0

    def rates(self) -> str:
        s = max(self.seconds, 1e-9)
        return (f"{self.moves / s:.2f} moves/s, {self.playouts / s:.0f} visits/s, "
                f"{1000 * s / max(1, self.moves):.0f} ms/move")


class EngineSide:
    """A network file loaded once, its backend and the coalescer its games share."""

    def __init__(self, weights_path: str, *, cpu_only: bool, gpus: tuple, precision: str,
                 batch_rows: int, full_tuner: bool = False, log=None, backend=None,
                 max_batch: int = 0):
        from leelaz.backends.device_choice import choose_backend
        from leelaz.backends.weights import WeightsError, load_weights

        self.weights_path = weights_path
        try:
            self.weights = load_weights(weights_path)
        except FileNotFoundError:
            raise SelfplayError(f"weights file not found: {weights_path}") from None
        except (OSError, WeightsError, ValueError, EOFError) as exc:
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise SelfplayError(f"cannot load weights {weights_path}: {text}") from None
        if backend is not None:  # a stand-in (bench's instant network, tests)
            self.backend = backend(self.weights)
        else:
            self.backend = choose_backend(self.weights, cpu_only=cpu_only,
                                          gpus=list(gpus) or None, precision=precision,
                                          batch_size=batch_rows,
                                          tune="full" if full_tuner else "fast", quiet=True,
                                          log=log)
        # --batchsize caps a network call (sent as soon as that many rows wait); by default
        # every game's leaves go together.
        self.coalescer = BatchCoalescer(self.backend,
                                        max_rows=max_batch or max(64, 2 * batch_rows))

    def describe(self) -> str:
        w = self.weights
        return f"{w.blocks}x{w.filters} on {getattr(self.backend, 'name', '?')}"


class GameRunner:
    """Runs `play(slot, job)` for the jobs `next_job()` hands out, `parallel` at a time.

    `play` returns a finished game or raises SelfplayStopped; `commit(job, game)` stores it
    (called under the runner's lock, so counters and files stay in step)."""

    def __init__(self, parallel: int, next_job: Callable[[], object | None],
                 play: Callable, commit: Callable, coalescers: list[BatchCoalescer],
                 progress=None, deadline: float | None = None, counters=None,
                 orphaned: Callable[[], bool] | None = None):
        self.parallel = max(1, parallel)
        self.next_job = next_job
        self.play = play
        self.commit = commit
        self.coalescers = coalescers
        self.progress = progress
        self.deadline = deadline
        self.counters = counters  # shared with a parent process (workers.py), or None
        self.orphaned = orphaned  # a worker whose parent died stops (its games are dropped)
        self._no_new = False
        self.stats = RunStats()
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.interrupted = False

    # ---- control ------------------------------------------------------------------------
    def stop(self, reason: BaseException | None = None) -> None:
        self._stop.set()
        for c in self.coalescers:
            c.cancel(reason)

    def stopping(self) -> bool:
        if not self._stop.is_set():
            if self.deadline is not None and time.monotonic() >= self.deadline:
                # Softly: each game ends after its current move (so a benchmark counts the
                # moves in flight, and the time they take), and writes nothing.
                self._stop.set()
            elif self.orphaned is not None and self.orphaned():
                self.stop(SelfplayStopped("the parent process is gone"))
        return self._stop.is_set()

    def finish_soft(self) -> None:
        """No new games; the games in flight finish (an SPRT decision, enough games)."""
        self._no_new = True

    # ---- running --------------------------------------------------------------------------
    def run(self) -> RunStats:
        """Play until the jobs run out or a stop; Ctrl-C drops the games in flight and is
        re-raised once every thread is done. An error in a game is re-raised likewise."""
        began = time.monotonic()
        threads = [threading.Thread(target=self._slot, args=(slot,), daemon=True,
                                    name=f"selfplay-{slot}") for slot in range(self.parallel)]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.25)
                    if self.progress is not None:
                        self.progress(self)
                    self.stopping()
        except KeyboardInterrupt:
            self.interrupted = True
            self.stop(SelfplayStopped("interrupted"))
            for t in threads:
                t.join()
            raise
        finally:
            self.stats.seconds = time.monotonic() - began
        if self.error is not None:
            raise self.error
        return self.stats

    def on_move(self, playouts: int, root_visits: int) -> None:
        with self.lock:
            self.stats.moves += 1
            self.stats.playouts += playouts
            self.stats.root_visits += root_visits
        if self.counters is not None:
            self.counters.add(1, playouts, 0)

    def _slot(self, slot: int) -> None:
        while not self.stopping() and not self._no_new:
            with self.lock:
                job = self.next_job()
            if job is None:
                return
            try:
                game = self.play(slot, job)
            except SelfplayStopped:
                return
            except BaseException as exc:  # noqa: BLE001 - the run stops and reports it
                with self.lock:
                    if self.error is None:
                        self.error = exc
                self.stop(SelfplayStopped(f"another game failed: {exc}"))
                return
            with self.lock:
                if self._stop.is_set() and self.interrupted:
                    return  # Ctrl-C arrived during the last move: drop it
                try:
                    self.commit(job, game)
                    self.stats.games += 1
                except BaseException as exc:  # noqa: BLE001 - disk full and the like
                    if self.error is None:
                        self.error = exc
                    self.stop(SelfplayStopped(f"cannot store games: {exc}"))
                    return


def warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
