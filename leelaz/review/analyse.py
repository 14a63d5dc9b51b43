"""The searches of a review: one search per position, many in flight, one network call a round.

Owns: `Analysis` (what a position's search says), `ReviewSettings`, `PositionSearch` and
`analyse`. Imports: gtp.search_commands (the engine's search settings), nn.network,
search.*, selfplay.game and selfplay.runner (the batching machinery), memory, config.

Each position is searched exactly as `lz-analyze` searches it in a freshly started engine
(`leelaz -g -t 1 -v N -s SEED`, the position loaded with `loadsgf`): a new tree, a new
Network view (its own cache, its random symmetries drawn from SEED), one leaf per playout,
no early stop (a ponder's limits), and the numbers are those of lz-analyze's last `info`
line (`SearchRun.snapshot` when the search stops at N visits). So a position's numbers do not
depend on the positions searched beside it, and a review can be checked against the engine.

Why one search per position rather than one tree walking through the game: the positions
are independent, so all of them can be in flight at once; the review is self-play's problem
(many searches, few leaves each) and uses self-play's machinery. `PositionSearch` is a
`selfplay.game.GameInPlay` whose "game" is one search that plays nothing: the runner
(selfplay/runner.py) steps every search in flight, their leaves go to the backend in ONE
call per round (backends/mux.py), and a finished search hands back its `Analysis`.
The positions share one thing: the network's answers to the same input rows (review/memo.py).
Position n+1's tree repeats much of position n's, and a leaf evaluated there under the
symmetry that n+1's search draws for it is answered without the network; that answer is the
row evaluated again, so the numbers stay those of the fresh engine.

With --seconds, a position is searched for SECONDS x the positions in flight (wall time,
all in flight sharing the device), so the whole review takes about SECONDS per position.

On NumPy a batch's rows may differ from the same rows sent alone in the last bits of the
policy (BLAS blocks differently); a search then takes another path on a near tie, rarely.
`--parallel 1` sends each position's leaves alone, as the engine does with -t 1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from leelaz.config import EngineConfig
from leelaz.memory import DEFAULT_CACHE_PCT, DEFAULT_MAX_MEMORY_BYTES, split_memory
from leelaz.nn.network import Network
from leelaz.review import DEFAULT_PARALLEL
from leelaz.review.memo import MemoBackend, RowMemo
from leelaz.search.params import UNLIMITED, SearchParams
from leelaz.search.run import Limits
from leelaz.search.search import UCTSearch
from leelaz.selfplay.game import GameInPlay
from leelaz.selfplay.runner import EngineSide, GameRunner

#: Network answers the positions of a review share at most (review/memo.py), about 1.8 kB
#: each with their keys, so about 120 MB: an answer is asked for again by positions in flight
#: at the same time as its own (the positions of a game advance together, a round at a time).
DEFAULT_MEMO_ROWS = 65_536


@dataclass
class Analysis:
    """A position's search, as lz-analyze's last info line gives it (side to move's view)."""

    to_move: int
    visits: int  # root visits
    winrate: float  # the best move's winrate (lz-analyze's `order 0`), for `to_move`
    best: int | None  # the best move (vertex or PASS); None when there was nothing to search
    pv: list[int]  # the best move, then its principal variation

    def winrate_for(self, color: int) -> float:
        return self.winrate if color == self.to_move else 1.0 - self.winrate

    @property
    def moves(self) -> int:
        """What the runner counts of a finished item for its progress (self-play: a game's
        moves): a position's search is one."""
        return 1


@dataclass(frozen=True)
class ReviewSettings:
    """How each position is searched."""

    visits: int = 200  # root visits per position (lz-analyze's -v)
    seconds: float | None = None  # else: seconds per position (see the module docstring)
    seed: int = 1  # -s of the engine the numbers match
    parallel: int = DEFAULT_PARALLEL  # positions in flight
    memo_rows: int = DEFAULT_MEMO_ROWS  # answers shared by the positions (0: none; memo.py)


def search_params(settings: ReviewSettings, net_bytes: int):
    """The engine's search settings for `-g -t 1 -v N --noponder` (SearchParams.from_config),
    with the tree limit its default memory budget gives (leelaz/memory.py)."""
    cfg = EngineConfig(cpu_only=True, threads=1, ponder=False, quiet=True, timemanage="off",
                       visits=0 if settings.seconds else settings.visits)
    params = SearchParams.from_config(cfg, batch_size=1)
    try:
        split = split_memory(DEFAULT_MAX_MEMORY_BYTES, DEFAULT_CACHE_PCT, net_bytes)
    except ValueError:
        return params, None
    return dataclasses.replace(params, max_tree_bytes=split.max_tree_bytes), split.cache_entries


class PositionSearch(GameInPlay):
    """One position's search, stepped by the self-play runner like a game's move: the
    root's evaluation and the leaves go into the round's network call; when the search
    stops, `advance` returns its Analysis (the runner's "finished game")."""

    def __init__(self, state, search: UCTSearch, limits: Limits, restrictions=None):
        # GameInPlay's stepping state only: this "game" plays no move.
        self.state = state
        self.search = search
        self.restrictions = restrictions  # lz-analyze's avoid/allow (gtp/analysis.py)
        self.should_stop = None
        self.on_move = None
        self._position_limits = limits
        self._run = None
        self._limits = None
        self._searching = False
        self._waiting = None
        self._analysis: Analysis | None = None
        self.result = None  # the final SearchResult (lz-analyze's last report)
        self.root_state = None  # the position searched, side to move set

    def snapshot(self):
        """The search so far (a report during the search), or None before it began."""
        return self._run.snapshot() if self._run is not None and self._searching else None

    def stop_soon(self) -> None:
        """End the search after the batch under way (its result is what it has by then)."""
        stop = Limits(0, 0, 0, pondering=True)
        self._position_limits = stop
        if self._run is not None:
            self._limits = stop
            if self._searching:
                self._run.limits = stop

    def _start_move(self) -> bool:
        """lz-analyze's start: a fresh tree for the side to move, a ponder's limits."""
        search = self.search
        self._run = search.start(self.state, self.state.to_move, self.restrictions)
        self.root_state = self._run.root_state
        self._limits = self._position_limits
        if self._run.root_needs_evaluation():
            self._waiting = search.evaluator.submit([self._run.root_state])
            return True
        self._prepare()
        return False

    def _play_move(self) -> bool:
        """The search stopped: take lz-analyze's last report; the "game" is over."""
        result = self.result = self._run.snapshot()
        self._run, self._searching = None, False
        best = result.best()
        if best is None or best.visits == 0:
            self._analysis = Analysis(result.color, result.root_visits, result.root_winrate,
                                      None, [])
        else:
            self._analysis = Analysis(result.color, result.root_visits, best.winrate,
                                      best.move, list(best.pv))
        return True

    def _finished(self) -> Analysis:
        return self._analysis


def analyse(jobs: list, side: EngineSide, settings: ReviewSettings,
            done: Callable[[object, Analysis], None]) -> RowMemo:
    """Search every `(key, state)` of `jobs`, `settings.parallel` at a time; `done(key,
    analysis)` is called as each finishes (in any order). Errors propagate. Returns the
    memo the positions shared (its counters say how many rows reached the network)."""
    params, cache_entries = search_params(settings, network_bytes(side))
    in_flight = max(1, min(settings.parallel, len(jobs)))
    if settings.seconds:
        limits = Limits(UNLIMITED, UNLIMITED, max(1, int(settings.seconds * in_flight * 100)))
    else:
        limits = Limits(settings.visits, UNLIMITED, UNLIMITED, pondering=True)
    queue = iter(jobs)
    memo = RowMemo(settings.memo_rows)
    views = {}  # group -> the memo's view of its round batches (or the batches)

    def next_job():
        return next(queue, None)

    def new_game(job, group, runner):
        backend = views.get(group)
        if backend is None:
            backend = views[group] = MemoBackend(side.backend_for(group), memo) \
                if settings.memo_rows else side.backend_for(group)
        network = Network(side.weights, backend, seed=settings.seed, symmetric_lookups=True)
        if cache_entries is not None:
            network.set_cache_size(cache_entries)
        search = UCTSearch(network, params, rng=settings.seed, log=lambda text: None)
        return PositionSearch(job[1], search, limits)

    def commit(job, analysis):
        done(job[0], analysis)

    GameRunner(in_flight, next_job, new_game, commit, [side]).run()
    return memo


def network_bytes(side: EngineSide) -> int:
    """The network's size in Leela Zero's accounting (what the engine's memory split uses)."""
    return Network(side.weights, side.backend).estimated_size()
