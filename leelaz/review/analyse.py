"""The searches of a review: each game's positions in order on kept trees (the default), or
each position in a fresh tree; many in flight, one network call a round.

Owns: `Analysis` (what a position's search says), `ReviewSettings`, `PositionSearch`,
`GameSearch`, `stretches` and `analyse`. Imports: gtp.search_commands (the engine's search
settings), nn.network, search.*, selfplay.game and selfplay.runner (the batching machinery),
memory, config.

Two modes, both checked against our own engine (`leelaz -g -t 1 -v N -s SEED`) by
tests/test_review.py:

- **Tree kept** (`reuse`, the default): a game's positions are searched in order on one tree
  and one Network (its cache, its random symmetries drawn from SEED), exactly as the engine
  searches them when it is given the game's moves with `play` and asked `lz-analyze` at
  each position: the subtree of the move played is kept (search/root.py `advance`, Leela
  Zero's UCTSearch::update_root), and a search stops at N ROOT visits, the kept ones
  counted, as Leela Zero's `-v N` counts them. So a position costs only the visits the tree
  lacked, about half of N on the 9-dan games, as in Leela Zero's own `genmove`-`undo`-`play`
  loop (the way GoReviewPartner drives it: the reference of `leelaz bench review`).
  Within a game the positions go one after another, so a round's call holds one leaf per
  tree: a one-game review on one tree would send its rows one at a time, on one of NumPy's
  workers. So a game is cut into `--trees` stretches (8; none shorter than MIN_STRETCH
  positions, `stretches`), each on its own tree and Network, all searched at once: a
  stretch's first position is searched from a fresh tree (lz-analyze right after `loadsgf`
  of it, the fresh mode's numbers), the others after `play`. That costs little: on the
  bench game at 100 visits the stretches together made as many rows as one tree (12,868
  against 12,867), and the batches of eight rows or more keep both NumPy workers busy. The
  games of a review and their stretches all go at once, their leaves in one call a round.
  Why it is the default: on the CPU the network is nearly all the time, and the fresh mode
  sends about twice the rows for the same N (`leelaz bench review`, docs/performance.md:
  1.9-2.5x the speed of Leela Zero driven GoReviewPartner's way, against 1.4x fresh); and
  a position's numbers are those a user's engine shows after `play`ing the game to it, as
  Lizzie and GoReviewPartner show them.
  A stretch's Network cache is the engine's size, bounded so that all the trees in flight
  together keep at most REUSE_CACHE_ROWS answers (an engine of that cache size gives the same
  numbers; with the engine's own size the difference is only in transpositions to positions
  evaluated long before).
- **Fresh tree** (`--fresh`): each position searched exactly as `lz-analyze` searches it in a
  freshly started engine (the position loaded with `loadsgf`): a new tree, a new Network
  view (its own cache, its symmetries drawn from SEED). So a position's numbers do not depend
  on the positions searched before it, and all the positions of all the games can be in
  flight at once: the fuller batches pay on a device, and a single game's review still fills
  them. The positions share one thing: the network's answers to the same input rows
  (review/memo.py). Position n+1's tree repeats much of position n's, and a leaf evaluated
  there under the symmetry that n+1's search draws for it is answered without the network;
  that answer is the row evaluated again, so the numbers stay those of the fresh engine.

In both, one leaf per playout and no early stop (a ponder's limits), and the numbers are
those of lz-analyze's last `info` line (`SearchRun.snapshot` when the search stops at N
visits). `PositionSearch` is a `selfplay.game.GameInPlay` whose "game" is one search that
plays nothing (`GameSearch`: a game's positions, one after another): the runner
(selfplay/runner.py) steps every search in flight, their leaves go to the backend in ONE
call per round (backends/mux.py), and a finished search hands back its `Analysis`.

With --seconds, a position is searched for SECONDS x the searches in flight (wall time, all
in flight sharing the device), so the whole review takes about SECONDS per position.

On NumPy a batch's rows may differ from the same rows sent alone in the last bits of the
policy (BLAS blocks differently); a search then takes another path on a near tie, rarely.
`--parallel 1` sends each search's leaves alone, as the engine does with -t 1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from leelaz.config import EngineConfig
from leelaz.memory import DEFAULT_CACHE_PCT, DEFAULT_MAX_MEMORY_BYTES, split_memory
from leelaz.nn.network import Network
from leelaz.review import DEFAULT_PARALLEL, DEFAULT_TREES
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
#: Network cache answers all the games in flight keep at most when each game keeps its tree
#: (about 1.5 kB each: some 400 MB): a game's cache is the engine's size (316,254 answers by
#: default) or its share of these, whichever is smaller, but never below REUSE_CACHE_MIN.
REUSE_CACHE_ROWS = 262_144
REUSE_CACHE_MIN = 8_192
#: With the tree kept, a game is cut into DEFAULT_TREES stretches (review/__init__.py; see
#: `stretches`), but no stretch shorter than this many positions (a short game gets fewer trees).
MIN_STRETCH = 8


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
    reuse: bool = True  # a game's positions in order on one tree (else each one fresh)
    trees: int = DEFAULT_TREES  # with reuse: stretches of a game searched at once (stretches())


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


@dataclass
class GameDone:
    """What the runner gets when a `GameSearch` is over: its positions, counted as moves."""

    moves: int


class GameSearch(PositionSearch):
    """A stretch of a game's positions searched one after another on one tree, as the
    engine searches
    them between `play` commands: each search starts from the subtree of the move played
    (UCTSearch.start's reuse), stops at N root visits (the kept ones counted), and keeps its
    tree for the next (UCTSearch.end_run). `done(key, analysis)` gets each position's
    Analysis as its search stops; the runner's "game" is over after the last."""

    def __init__(self, jobs: list, search: UCTSearch, limits: Limits, done):
        super().__init__(jobs[0][1], search, limits)
        self._jobs = jobs
        self._index = 0
        self._done = done

    def _play_move(self) -> bool:
        run = self._run
        super()._play_move()
        self.search.end_run(run)
        self._done(self._jobs[self._index][0], self._analysis)
        self._index += 1
        if self._index == len(self._jobs):
            return True
        self.state = self._jobs[self._index][1]
        return False

    def _finished(self) -> GameDone:
        return GameDone(len(self._jobs))


def analyse(games: list, side: EngineSide, settings: ReviewSettings,
            done: Callable[[object, Analysis], None]) -> RowMemo:
    """Search every `(key, state)` of `games` (a list per game, its positions in order),
    `settings.parallel` searches at a time: with `settings.reuse` a game's positions one
    after another on one tree, else each on its own; `done(key, analysis)` is called as each
    position's search stops (the positions of a game in order when the tree is kept, else in
    any order). Errors propagate. Returns the memo the searches shared (its counters say how
    many rows reached the network)."""
    params, cache_entries = search_params(settings, network_bytes(side))
    games = [game for game in games if game]
    if not settings.reuse:
        jobs = [job for game in games for job in game]
    else:
        jobs = [game[a:b] for game in games for a, b in stretches(len(game), settings.trees)]
    in_flight = max(1, min(settings.parallel, len(jobs)))
    if settings.reuse and cache_entries is not None:
        cache_entries = min(cache_entries, max(REUSE_CACHE_MIN, REUSE_CACHE_ROWS // in_flight))
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
        if settings.reuse:
            return GameSearch(job, search, limits, done)
        return PositionSearch(job[1], search, limits)

    def commit(job, finished):
        if not settings.reuse:  # a kept tree's positions were handed to `done` one by one
            done(job[0], finished)

    GameRunner(in_flight, next_job, new_game, commit, [side]).run()
    return memo


def stretches(positions: int, trees: int) -> list[tuple[int, int]]:
    """The stretches (first, last + 1) a game of `positions` positions is cut into when the
    tree is kept: `trees` of them, as equal as can be (the first of k of n positions begins
    at position k*n // trees), but fewer when they would be shorter than MIN_STRETCH
    positions; at least one. Each stretch is one search after another on one tree, its
    first position from a fresh tree (lz-analyze after `loadsgf` of that position), the
    others after `play` of the game's move; the stretches go at once."""
    count = max(1, min(trees, positions // MIN_STRETCH))
    cuts = [k * positions // count for k in range(count)] + [positions]
    return list(zip(cuts[:-1], cuts[1:]))


def network_bytes(side: EngineSide) -> int:
    """The network's size in Leela Zero's accounting (what the engine's memory split uses)."""
    return Network(side.weights, side.backend).estimated_size()
