"""Many games at once in one process: one loop steps every game, one network call per round.

Owns: `EngineSide` (a network loaded once, its backend and its round batches),
`load_verb_weights` (the file read, or one line of error), `GameRunner` (the game slots, the
round loop, stopping, progress and counters), `RunStats`, `SelfplayError`. Imports: time,
backends (weights), nn.loading (the backend, chosen as the engine chooses it), config,
selfplay.game, backends.mux.

The round (minigo's way: the searches never call the network, the driver batches): every game
of a group takes the evaluations of the group's last call and searches on until its next
leaves (or its next root) wait for the network (`GameInPlay.advance`, the search's own steps
and stopping rules); then ONE backend call per network evaluates all of them
(backends/mux.py). Before the games of a group take their turns, the leaves they
all wait to expand are expanded in one call (`GameInPlay.expand_waiting`). A game whose
move is decided plays it and starts the next search in the same turn; a finished game is
committed (selfplay/store.py) and its slot starts the next one. No threads: the host's
time goes to the trees alone, and the games' order in a round does not matter to their
moves (each has its own search, cache and symmetries), so `--parallel 1` and `--parallel 8`
play the same games.

With an asynchronous backend (OpenCL) the games form two groups, each with its own round
batches: while one group's call runs on the device, the other group walks its trees, so the
device and Python overlap as the search's own pipelining does.

Stopping: the time limit (`deadline`, the benchmark) lets each game finish its current move
and drops it at the next, and drops every game still searching DEADLINE_GRACE_SECONDS later
(a move of unlimited visits never ends by itself); `finish_soft()` (the SPRT decided)
starts no new game and lets the games in flight finish; a worker whose parent died stops at
once. Ctrl-C drops the games in flight. A dropped game writes nothing: only finished games are committed, so an
interrupted run leaves whole games.
"""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import dataclass
from typing import Callable

from leelaz.search.expansion import request_compiled
from leelaz.selfplay.game import GameInPlay, SelfplayStopped
from leelaz.backends.mux import RoundBatch, SharedBackend

#: Seconds between progress updates (and checks of the deadline and the parent process).
POLL_SECONDS = 0.25
#: Seconds past the deadline that a move under way may take to finish before it is dropped.
DEADLINE_GRACE_SECONDS = 1.0
#: Seconds between the runner's own garbage collections (see `_no_automatic_collection`).
COLLECT_SECONDS = 60.0


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
    finished_moves: int = 0  # moves of the games finished in this run (the progress estimate)

    def rates(self) -> str:
        s = max(self.seconds, 1e-9)
        return (f"{self.moves / s:.2f} moves/s, {self.playouts / s:.0f} visits/s, "
                f"{1000 * s / max(1, self.moves):.0f} ms/move")


class EngineSide:
    """A network file loaded once, its backend, and a round batch per group of games."""

    def __init__(self, weights_path: str, *, cpu_only: bool, gpus: tuple, precision: str,
                 batch_rows: int, full_tuner: bool = False, log=None, backend=None,
                 max_batch: int = 0, network_backend: str = "auto"):
        """`network_backend`: --backend's choice (auto: PyTorch where it sees CUDA, else
        OpenCL or NumPy, as the engine chooses, nn/loading.py; opencl; torch)."""
        from leelaz.backends.base import BackendUnavailable

        self.weights_path = weights_path
        self.weights = load_verb_weights(weights_path)
        if backend is not None:  # a stand-in (bench's instant network, tests)
            self.backend = backend(self.weights)
        else:
            plan = verbs_plan(self.weights, batch_rows, cpu_only=cpu_only, gpus=gpus,
                              precision=precision, network_backend=network_backend,
                              full_tuner=full_tuner)
            try:
                self.backend = plan.open_backend(self.weights, log=log)
            except BackendUnavailable as exc:  # a backend asked for by name cannot run
                raise SelfplayError(" ".join(str(exc).split())) from None
        # --batchsize caps a network call (sent as soon as that many rows wait); by default
        # every game's leaves of a group go together.
        groups = 2 if self.backend.asynchronous else 1
        self.batches = [RoundBatch(self.backend, max_batch) for _ in range(groups)]
        if self.backend.asynchronous:  # a device's games: the search's Python is the limit
            request_compiled()

    def backend_for(self, group: int) -> SharedBackend:
        """The backend to give the Network of a game in `group`."""
        return SharedBackend(self.batches[group % len(self.batches)])

    @property
    def calls(self) -> int:
        return sum(b.calls for b in self.batches)

    @property
    def rows(self) -> int:
        return sum(b.rows for b in self.batches)

    def describe(self) -> str:
        w = self.weights
        return f"{w.blocks}x{w.filters} on {getattr(self.backend, 'name', '?')}"


def load_verb_weights(weights_path: str):
    """The network file read for a verb's games; SelfplayError with one line naming the file
    when it is missing or cannot be read."""
    from leelaz.backends.weights import WeightsError, load_weights

    try:
        return load_weights(weights_path)
    except FileNotFoundError:
        raise SelfplayError(f"weights file not found: {weights_path}") from None
    except (OSError, WeightsError, ValueError, EOFError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise SelfplayError(f"cannot load weights {weights_path}: {text}") from None


def verbs_plan(weights, batch_rows: int, *, cpu_only: bool, gpus=(), precision: str = "auto",
               network_backend: str = "auto", full_tuner: bool = False):
    """The verbs' games' LoadPlan (nn/loading.choose, the engine's rule): quiet, for calls of
    `batch_rows` rows; a --precision other than auto counts as given."""
    from leelaz.config import EngineConfig
    from leelaz.nn.loading import choose

    config = EngineConfig(cpu_only=cpu_only, gpus=tuple(gpus), precision=precision,
                          precision_given=precision != "auto", network_backend=network_backend,
                          full_tuner=full_tuner, quiet=True)
    return choose(config, weights, batch_size=batch_rows)


class _Slot:
    """A game in flight: its job (what `commit` needs) and the game."""

    __slots__ = ("job", "game")

    def __init__(self, job, game: GameInPlay):
        self.job = job
        self.game = game


class GameRunner:
    """Plays the jobs `next_job()` hands out, `parallel` games at a time, in rounds.

    `new_game(job, group, runner)` makes a job's GameInPlay (its players' Networks on the
    sides' backends for `group`; its should_stop and on_move the runner's); `commit(job,
    game)` stores a finished game. `sides` are the EngineSides whose round batches the loop
    sends."""

    def __init__(self, parallel: int, next_job: Callable[[], object | None],
                 new_game: Callable, commit: Callable, sides: list[EngineSide],
                 progress=None, deadline: float | None = None, counters=None,
                 orphaned: Callable[[], bool] | None = None):
        self.parallel = max(1, parallel)
        self.next_job = next_job
        self.new_game = new_game
        self.commit = commit
        self.sides = sides
        self.progress = progress
        self.deadline = deadline
        self.counters = counters  # shared with a parent process (workers.py), or None
        self.orphaned = orphaned  # a worker whose parent died stops (its games are dropped)
        self.stats = RunStats()
        self._no_new = False
        self._stopping = False  # no new move: each game is dropped at its next one
        self._halted = False  # stop now: every game is dropped
        self._collected = time.monotonic()  # the last garbage collection

    # ---- control ------------------------------------------------------------------------
    def stopping(self) -> bool:
        """Asked by each game before each move: past the deadline, it is dropped."""
        if not self._stopping and self.deadline is not None \
                and time.monotonic() >= self.deadline:
            self._stopping = True
        return self._stopping

    def finish_soft(self) -> None:
        """No new games; the games in flight finish (an SPRT decision, enough games)."""
        self._no_new = True

    def on_move(self, playouts: int, root_visits: int) -> None:
        stats = self.stats
        stats.moves += 1
        stats.playouts += playouts
        stats.root_visits += root_visits
        if self.counters is not None:
            self.counters.add(1, playouts, 0)

    # ---- running --------------------------------------------------------------------------
    def run(self) -> RunStats:
        """Play until the jobs run out or a stop. Errors (a failed evaluation, a full disk)
        and Ctrl-C propagate; the games in flight are dropped."""
        began = time.monotonic()
        groups = min(self.parallel, max(len(side.batches) for side in self.sides))
        slots: list[list[_Slot]] = [[] for _ in range(groups)]
        collecting = gc.isenabled()
        gc.disable()  # see _collect
        try:
            for n in range(self.parallel):
                slot = self._start(n % groups)
                if slot is not None:
                    slots[n % groups].append(slot)
            polled = time.monotonic()
            while any(slots) and not self._halted:
                for group, members in enumerate(slots):
                    GameInPlay.expand_waiting([s.game for s in members])
                    members[:] = [s for s in (self._advance(s, group) for s in members)
                                  if s is not None]
                    for side in self.sides:
                        side.batches[group % len(side.batches)].send()
                now = time.monotonic()
                if now - polled >= POLL_SECONDS:
                    polled = now
                    self._poll()
        finally:
            self.stats.seconds = time.monotonic() - began
            if collecting:
                gc.enable()
        return self.stats

    def _poll(self) -> None:
        if self.progress is not None:
            self.progress(self)
        self._collect()
        if self.stopping() and time.monotonic() >= self.deadline + DEADLINE_GRACE_SECONDS:
            self._halted = True  # a move that does not end (unlimited visits) is dropped
        if self.orphaned is not None and self.orphaned():
            self._halted = True

    def _collect(self) -> None:
        """Python's cyclic garbage collector is off while the games run, and collects here,
        once in COLLECT_SECONDS. The trees hold no cycles (a node owns its children, nothing
        points back; a search's run is let go when its move is chosen), so reference
        counting frees them; but the collector's automatic passes walk every live tree's
        nodes, again and again as they grow, which cost a third of the host's time with 32
        games in flight (docs/performance.md). The rare cycle (an exception's traceback)
        waits for the next collection."""
        now = time.monotonic()
        if now - self._collected >= COLLECT_SECONDS:
            self._collected = now
            gc.collect()

    def _start(self, group: int) -> _Slot | None:
        """The next job's game in `group`, or None (no job left, or stopping)."""
        if self._no_new or self._stopping or self._halted:
            return None
        job = self.next_job()
        if job is None:
            return None
        return _Slot(job, self.new_game(job, group, self))

    def _advance(self, slot: _Slot | None, group: int) -> _Slot | None:
        """The slot's turn in a round: its game advances; a finished game is committed and
        the slot's next game takes its turn at once. None when the slot is empty now."""
        while slot is not None:
            try:
                finished = slot.game.advance()
            except SelfplayStopped:
                return None  # dropped: nothing is written
            if finished is None:
                return slot
            self.commit(slot.job, finished)
            self.stats.games += 1
            self.stats.finished_moves += finished.moves
            slot = self._start(group)
        return None


def warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
