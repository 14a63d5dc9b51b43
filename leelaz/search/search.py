"""The tree search: Leela Zero's UCTSearch, with batched leaf evaluation instead of threads.

Owns: `UCTSearch` (think, ponder and the finish of a think: statistics, move choice,
explanation), the tree kept between calls (its root, node count and the state it was searched
from, for reuse), and the `Evaluator` / `MoveRestrictions` protocols the search needs.
Imports: game.coords, search.* (never nn/: an evaluator is handed in; tests pass a fake).

The search is three files by concern: this one orchestrates a call; search/root.py chooses and
prepares the root (tree reuse, noise); search/run.py is one call's batches, budgets and
counters (`SearchRun`, the hot path: descent, expansion, backup, pipelining), and the seam for
drivers that batch several searches into one network call (self-play) or act between batches
(dynamic komi): `UCTSearch.start_move` (or `start`) -> `SearchRun.prepare` -> `begin` and the
run's `collect` / `apply` / `after_batch` steps (or `run`, with its `between_batches` hook) ->
`UCTSearch.finish`. Where search/core/ covers the call (`core.covers`: genmove's
`start_move`, `ponder`) the run is its CoreRun, the same steps on compiled kernels; `finish`
starts loading them for the next calls.

Statistics are kept from Black's side (see node.py); reports use the side to move.

The clock: `think` starts and stops the state's TimeControl for the searching colour (the time
spent is charged to it), and asks it for the budget, as LZ's UCTSearch::think does; the
budget and the early stop live in search/timemanage.py.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Callable, Protocol, Sequence

from leelaz.game.coords import BLACK, PASS, gtp_vertex
from leelaz.memory import tree_bytes
from leelaz.search import stats, timemanage
from leelaz.search.choose import choose_move
from leelaz.search.core import run as core
from leelaz.search.node import ACTIVE, PRUNED, UCTNode
from leelaz.search.params import UNLIMITED, SearchParams
from leelaz.search.result import SearchResult
from leelaz.search.root import advance, kept_boards, moves_since, to_move
from leelaz.search.run import Limits, Progress, SearchRun

#: How many positions the tree may keep on its nodes (about 6.3 kB each, so ~130 MB): with
#: them a playout plays only its leaf's move instead of replaying its whole path. Deeper
#: nodes beyond this are replayed from the nearest kept position.
MAX_KEPT_BOARDS = 20_000


class Evaluation(Protocol):
    policy: Sequence[float]  # 362 probabilities (pass last)
    winrate: float  # for the side to move


class PendingEvaluations(Protocol):
    """A batch under way; `result()` waits for it (once)."""

    def result(self) -> list[Evaluation]: ...


class Evaluator(Protocol):
    """What the search needs from the network (nn.network.Network satisfies it; tests and
    self-play hand in their own). Declared, not probed, but for the last item:

    - `submit(states).result()` evaluates a batch: one call per batch of leaves.
    - `evaluate(states)` is the same at once (the root's single evaluation).
    - Dynamic komi and --fixed-symmetry also pass `symmetry` (one 0..7 for all, or a list
      with one per state; "average" for an invalid root's fallback), and dynamic komi's
      trial evaluations `read_cache=False, write_cache=False`.
    - `asynchronous`: submit returns before the answer is computed (a GPU), so the search
      keeps one batch in flight while it collects the next.
    - Optional, the one method looked for: `submit_histories(hashes, to_move, histories,
      symmetry=None)`, a batch as arrays (search/core/leaf_inputs.LeafInputs.histories)
      whose `.result()` has `policies` [n, 362] and `winrates` [n]; the compiled core uses
      it where the evaluator has it.
    """

    asynchronous: bool

    def submit(self, states: Sequence) -> PendingEvaluations: ...

    def evaluate(self, states: Sequence) -> list[Evaluation]: ...


class MoveRestrictions(Protocol):
    """lz-analyze avoid/allow tags (gtp/analysis.py AnalyzeTags satisfies it)."""

    has_move_restrictions: bool

    def is_allowed(self, color: int, vertex: int, move_num: int) -> bool: ...


class _Rng(random.Random):
    """random.Random driven by xoroshiro128+ (LZ's generator), so gammavariate etc. work."""

    def __init__(self, seed: int):
        self._x = None
        super().__init__(seed)

    def seed(self, a=None, version=2):  # noqa: D102  (random.Random API)
        from leelaz.game.zobrist import Xoroshiro128Plus
        if not isinstance(a, int):
            a = int(time.time_ns())
        self._x = Xoroshiro128Plus(a)
        self.gauss_next = None

    def random(self) -> float:
        return (self._x.next_u64() >> 11) * (1.0 / (1 << 53))

    def getrandbits(self, k: int) -> int:
        out, bits = 0, 0
        while bits < k:
            out = (out << 64) | self._x.next_u64()
            bits += 64
        return out >> (bits - k)


def make_rng(seed: int | None = None) -> random.Random:
    """The search RNG: xoroshiro128+ when available, else Python's Mersenne Twister."""
    try:
        return _Rng(seed if seed is not None else time.time_ns())
    except ImportError:  # pragma: no cover - zobrist.py is part of game/
        return random.Random(seed)


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


class UCTSearch:
    """PUCT search over GameStates with an injected evaluator.

    Construct once per engine (`clear_board` calls `reset()`); `params` may be replaced at any
    time (lz-setoption). `log(text)` receives LZ's stderr diagnostics (newlines included);
    params.quiet silences it.
    """

    def __init__(self, evaluator: Evaluator, params: SearchParams | None = None,
                 rng: random.Random | int | None = None,
                 log: Callable[[str], None] | None = None):
        self.evaluator = evaluator
        self.params = params or SearchParams()
        self.rng = rng if isinstance(rng, random.Random) else make_rng(rng)
        self._log_fn = log or _stderr
        self.root: UCTNode | None = None
        self._last_state = None  # root state of the last search, for tree reuse
        self.nodes = 0
        self.playouts = 0
        self.last_result: SearchResult | None = None
        self.explanation = ""  # gomill-explain_last_move text
        #: Running mean of the evaluation time per leaf (sizes ponder batches), across calls.
        self.leaf_seconds = 0.0
        #: Positions the tree may still keep on its nodes (set for each call's tree).
        self.boards_left = MAX_KEPT_BOARDS
        #: The call under way (None between calls).
        self.current: SearchRun | None = None
        #: search/dynkomi_search.DynamicKomi in the dynamic-komi modes (gtp/dynkomi_commands
        #: sets it), else None: the search is Leela Zero 0.17's.
        self.dynamic_komi = None
        #: The last tree the reuse left behind, alive until `release_discarded`.
        self._discarded: UCTNode | None = None
        #: The last call's compiled-core arrays, in step with the UCTNodes (CoreRun.kept_tree),
        #: for the next call's reuse; None when that call was not on the core.
        self._core_kept = None
        #: (those arrays, positions) when only the rows the last call's end read were
        #: written back into the UCTNodes (`think`'s and `ponder`'s defer_tree): the next
        #: call on the core takes the rest along, a reader of the whole tree calls
        #: complete_tree.
        self._unwritten = None

    # ------------------------------------------------------------------ public API
    def reset(self) -> None:
        """Forget the tree (clear_board, loadsgf, boardsize)."""
        self.root = None
        self._discarded = None
        self._last_state = None
        self._core_kept = None
        self._unwritten = None
        self.nodes = 0

    def release_discarded(self) -> None:
        """Free what the tree reuse of the last call left behind (the branches not played).

        Why not at once: freeing a tree of some ten thousand nodes takes Python 10-30 ms,
        which on the clock is 2-6% of a 0.5 s move (docs/performance.md). The GTP loop calls
        this after a genmove's reply, when nobody waits; pondering and analysis call it as
        they start; otherwise the next call's reuse frees it."""
        self._discarded = None

    def complete_tree(self) -> None:
        """Write the rest of the last call's tree into its UCTNodes, when it was asked with
        `defer_tree` (nothing otherwise): until then only the root, its children and
        their principal variations are up to date there. For a caller that reads deeper
        between two calls (tests); the calls themselves need none of it.

        Why a tree is left so: a search adds thousands of nodes, a Python object each, and
        writing them all took 47-70 ms of a 0.5 s move here (docs/log.md, 2026-12-02);
        the end of a call reads a few hundred, and the next call's compiled core takes the
        tree from its arrays (`start`, CoreTree.from_kept)."""
        pending, self._unwritten = self._unwritten, None
        if pending is None:
            return
        tree, boards = pending
        try:
            tree.to_root(boards)
        except BaseException:
            self.reset()  # a half-written tree must not be searched again
            raise

    def tree_bytes(self) -> int:
        """Tree size in LZ's accounting (leelaz/memory.py)."""
        return tree_bytes(self.nodes, self.root.visits if self.root is not None else 0)

    def log(self, text: str) -> None:
        if not self.params.quiet:
            self._log_fn(text)

    def think(self, state, color: int | None = None, *, time_limit_cs: int | None = None,
              max_visits: int | None = None, max_playouts: int | None = None,
              on_progress: Callable[[SearchResult], None] | None = None,
              progress_interval_cs: int = 0, should_stop: Callable[[], bool] | None = None,
              nopass: bool = False, noresign: bool = False,
              restrictions: MoveRestrictions | None = None, use_clock: bool = True,
              defer_tree: bool = False) -> SearchResult:
        """Search the position for `color` and choose a move (genmove).

        `state` is not changed (the caller plays the move), except that its clock is charged
        when `use_clock`. The budget is `time_limit_cs`, or else the clock's
        max_time_for_move. Limits default to params.max_visits / max_playouts.
        `on_progress(snapshot)` is called every `progress_interval_cs` (lz-genmove_analyze),
        and once at the end if it never was. `should_stop()` aborts early (e.g. quit).
        `defer_tree`: on the compiled core, the UCTNodes below the root's children and
        their principal variations are left behind the search's arrays (the next call
        takes them along, see complete_tree); GTP's genmoves ask so.
        """
        color = state.to_move if color is None else color
        started = time.monotonic()
        tc = state.time_control if use_clock else None
        if tc is not None:
            tc.start(color)
        core.on_clock(True)  # the compiled core loads only off the clock
        try:
            run, limits = self.start_move(state, color, time_limit_cs=time_limit_cs,
                                          max_visits=max_visits, max_playouts=max_playouts,
                                          restrictions=restrictions, clock=tc, started=started)
            if defer_tree and isinstance(run, core.CoreRun):
                run.partial_write_back = True
            run.prepare()
            if self.dynamic_komi is not None:  # genmove adjusts in the first half of its budget
                self.dynamic_komi.start_run(run, (limits.budget_cs, limits.playouts))
            self._run(run, limits, Progress(on_progress, progress_interval_cs, should_stop))
            return self.finish(run, nopass, noresign)
        except BaseException:
            self.reset()  # a failed evaluation must not leave a half-updated tree behind
            raise
        finally:
            self.current = None
            # Charged after the stats and the move choice too: in Python they take
            # milliseconds per move, which over a game would eat the whole lag buffer.
            if tc is not None:
                tc.stop(color)
            core.on_clock(False)
            core.start_loading()  # the compiled core, for the next calls (off this clock)

    def ponder(self, state, *, should_stop: Callable[[], bool],
               on_progress: Callable[[SearchResult], None] | None = None,
               progress_interval_cs: int = 0, restrictions: MoveRestrictions | None = None,
               max_visits: int | None = None, max_playouts: int | None = None,
               defer_tree: bool = False) -> SearchResult:
        """Think on the opponent's time (or lz-analyze) until `should_stop()` or a limit.

        The side to move is the state's. With move restrictions the tree is neither reused
        nor kept, as in LZ. `defer_tree` as `think`'s (GTP's lz-analyze and pondering ask
        so).
        """
        p = self.params
        color = state.to_move
        started = time.monotonic()
        disable_reuse = bool(restrictions is not None and restrictions.has_move_restrictions)
        try:
            run = self.start(state, color, restrictions, started)
            if core.covers(self, restrictions=restrictions, on_progress=on_progress,
                           pondering=True):
                run = self.current = core.CoreRun.replacing(run)
                run.partial_write_back = defer_tree
            self.release_discarded()  # nobody waits on a ponder's start
            run.prepare()
            limits = Limits(p.max_visits if max_visits is None else max_visits,
                            p.max_playouts if max_playouts is None else max_playouts,
                            UNLIMITED, pondering=True)
            if self.dynamic_komi is not None:  # lz-analyze (its tags) adjusts; pondering
                # after genmove only collects
                self.dynamic_komi.start_run(run, None if restrictions is not None
                                            else "collect")
            self._run(run, limits, Progress(on_progress, progress_interval_cs, should_stop))
            self._end(run)
        except BaseException:
            self.reset()
            raise
        finally:
            self.current = None
        self.gather_reports(final=True)
        root = self.report_root(self.root, final=True)
        if root.has_children() and root.children:
            self.log("\n")
            root.sort_children(color, p.lcb_min_visit_ratio)
            self._dump_stats(root, color, run)
            self.log(f"\n{root.visits} visits, {self.nodes} nodes\n\n")
        result = stats.snapshot(root, color, run.root_state.move_num, playouts=self.playouts,
                                nodes=self.nodes, elapsed=time.monotonic() - started,
                                ratio=p.lcb_min_visit_ratio)
        self._last_state = None if disable_reuse else run.root_state
        return result

    # ------------------------------------------------------------------ one call, in steps
    def start(self, state, color: int | None = None,
              restrictions: MoveRestrictions | None = None,
              started: float | None = None) -> SearchRun:
        """The first step of a search call: the tree for `state` with `color` to move (the
        last call's subtree when the game went on from it) and a SearchRun over it. Then
        `run.prepare()` readies the root, `run.run(...)` or a driver's own `collect` /
        `apply_evaluations` steps do the batches, and `finish(run)` chooses the move.
        `started` (time.monotonic()) is when the call began; now by default."""
        color = state.to_move if color is None else color
        if restrictions is not None and restrictions.has_move_restrictions:
            self._last_state = None  # a reused tree may hold avoided moves
        root_state = to_move(state, color)
        # The last call's arrays go to this call's compiled core (CoreTree.from_kept) and to
        # no later one: any other run may change the UCTNodes they mirror.
        kept, self._core_kept = self._core_kept, None
        unwritten, self._unwritten = self._unwritten, None
        row = -1
        if unwritten is not None:  # the tree reuse and the root's preparation read these
            moves = moves_since(self._last_state, root_state)
            if moves is not None:
                row = unwritten[0].write_for_reuse(moves, unwritten[1])
        if not self._update_root(root_state, kept if row >= 0 else None, row) \
                and unwritten is not None:
            kept = unwritten = None  # the tree is not reused: nothing of it to write
        started = time.monotonic() if started is None else started
        self.current = SearchRun(self, root_state, color, started, restrictions)
        self.current.caller_state = state
        self.current.core_kept = kept
        self.current.kept_unwritten = unwritten
        return self.current

    def start_move(self, state, color: int | None = None, *,
                   time_limit_cs: int | None = None, max_visits: int | None = None,
                   max_playouts: int | None = None,
                   restrictions: MoveRestrictions | None = None, clock=None,
                   started: float | None = None) -> tuple[SearchRun, Limits]:
        """genmove's first step (`think` is made of these steps): `start`, and the limits of
        the move, its time budget (`time_limit_cs`, else `clock`'s max_time_for_move; the
        caller starts and stops the clock) and the visit and playout caps (params' by
        default). A driver stepping several games goes on with `run.prepare()`,
        `run.begin(limits, Progress())` and the run's steps, then `finish(run)`."""
        p = self.params
        run = self.start(state, color, restrictions, started)
        if core.covers(self, restrictions=restrictions):  # the compiled core's batches
            run = self.current = core.CoreRun.replacing(run)
        budget = timemanage.budget_cs(p, run.root_state, run.color, clock, time_limit_cs)
        self.log(f"Thinking at most {budget / 100.0:.1f} seconds...\n")
        limits = Limits(p.max_visits if max_visits is None else max_visits,
                        p.max_playouts if max_playouts is None else max_playouts, budget)
        return run, limits

    def finish(self, run: SearchRun, nopass: bool = False,
               noresign: bool = False) -> SearchResult:
        """The last step of a search call (genmove's): statistics to stderr, the move choice,
        the explanation, and the root state kept for the next call's tree reuse."""
        self._end(run)
        root = self.root
        if not root.has_children():
            result = stats.snapshot(root, run.color, run.root_state.move_num, move=PASS)
            self.last_result = result
        else:
            result = self._finish_think(run, nopass, noresign)
        core.start_loading()  # the compiled core, for the next calls (the move is chosen)
        return result

    def end_run(self, run: SearchRun) -> None:
        """The last step of a call that chooses no move, for a driver stepping the run
        itself (review/analyse.py): what `ponder` does at its end, the run's counters
        become the tree's and the position is kept for the next call's tree reuse (not
        after move restrictions, as in LZ)."""
        self._end(run)
        restricted = run.restrictions is not None and run.restrictions.has_move_restrictions
        self._last_state = None if restricted else run.root_state

    def gather_reports(self, final: bool) -> None:
        """The step before a report: at each progress report, and at the end of a call
        (`final`) before the statistics and the move choice. Nothing for one tree; the seam
        where several search processes (root_parallel/pool.py) poll their helpers, or stop
        them at the end of a call, for `report_root` to read."""

    def merges_reports(self) -> bool:
        """Whether `report_root` now gives more than the tree's own root (other processes'
        trees merged in), so that a report must read the UCTNodes."""
        return False

    def report_root(self, root: UCTNode, final: bool) -> UCTNode:
        """The root that reports (progress, statistics) and the move choice read: the tree's
        own. The seam for several search processes (root_parallel/pool.py), which merges
        the other trees' root statistics, as `gather_reports` last gathered them, into a
        stand-in (search/merge.py); `final` at the end of a call. Only reads."""
        return root

    def _update_root(self, root_state, kept=None, row: int = -1) -> bool:
        """Reuse the subtree of the new position if possible, else start a fresh tree.
        `kept`: the last call's arrays where its UCTNodes are written only down to row
        `row` (see start): the node count is theirs. Returns whether the new root is that
        row's node."""
        self.playouts = 0
        self._discarded = None  # an earlier call's leftovers, if nobody released them
        old, self.root = self.root, advance(self._last_state, self.root, root_state) or UCTNode()
        if old is not self.root:
            self._discarded = old  # see release_discarded
        self._last_state = None
        self.root.board = None  # the root's position is the game state's: a kept copy of
        # it would only count against the kept positions' limit
        in_kept = kept is not None and kept.objects[row] is self.root
        if in_kept:
            self.nodes = kept.nodes_below(row, core.kernels())
        else:
            self.nodes = stats.count_nodes(self.root)
        self.boards_left = MAX_KEPT_BOARDS - kept_boards(self.root)
        # No "update_root, A -> B nodes" line: only assert builds of LZ 0.17 (Debian's) print
        # it, and Lizzie reads any stderr line with " -> " as a move of dump_stats.
        return in_kept

    def _run(self, run: SearchRun, limits: Limits, progress: Progress) -> None:
        """The batches, if the root has any move to search."""
        try:
            if run.root.has_children():
                run.run(limits, progress)
        finally:
            if self.dynamic_komi is not None:
                self.dynamic_komi.end()
            self._take_counts(run)

    def _end(self, run: SearchRun) -> None:
        """The run's counters become the tree's; children pruned by time management are
        active again."""
        self._take_counts(run)
        self.current = None
        on_core = isinstance(run, core.CoreRun)
        self._core_kept = run.kept_tree() if on_core else None
        self._unwritten = run.unwritten_tree() if on_core else None
        for c in run.root.children:
            if c.status == PRUNED:
                c.status = ACTIVE

    def _take_counts(self, run: SearchRun) -> None:
        """The run's counters become the tree's (memory reports read them between calls)."""
        self.playouts, self.nodes = run.playouts, run.nodes
        self.boards_left, self.leaf_seconds = run.boards_left, run.leaf_seconds
        self.root = run.root  # a new tree after a komi change (dynamic komi)

    # ------------------------------------------------------------------ reports
    def _dump_stats(self, root: UCTNode, color: int, run: SearchRun | None = None) -> None:
        """The ` -> ` lines and the tree statistics (none when the best child is unvisited),
        the latter counted on the compiled core's arrays when `run` has them."""
        if self.params.quiet:
            return
        lines = stats.dump_stats_lines(root, color, self.params.lcb_min_visit_ratio)
        if lines:
            lines += stats.tree_stats_lines(root, core.tree_stats_counts(run, root))
        for line in lines:
            self.log(line)

    def _finish_think(self, run: SearchRun, nopass: bool, noresign: bool) -> SearchResult:
        """Stats to stderr, the move choice, the explanation, and the state kept for reuse."""
        p = self.params
        self.gather_reports(final=True)
        root, root_state, color = self.report_root(self.root, True), run.root_state, run.color
        root.sort_children(color, p.lcb_min_visit_ratio)
        self.log("\n")
        self._dump_stats(root, color, run)
        elapsed = time.monotonic() - run.start
        elapsed_cs = int(elapsed * 100)
        self.log(f"{root.visits} visits, {self.nodes} nodes, {self.playouts} playouts, "
                 f"{self.playouts * 100.0 / (elapsed_cs + 1):.0f} n/s\n\n")
        # Training data sees the root as sorted above, before random play reorders it.
        record = run.snapshot(root=root)
        r = run.restrictions
        mn = root_state.move_num

        def allowed(c, v):
            return r is None or not r.has_move_restrictions or r.is_allowed(c, v, mn)

        move = choose_move(root, root_state, color, p, nopass=nopass, noresign=noresign,
                           allowed=allowed, uniform=self.rng.random, log=self.log)
        record.move = move
        win = 100.0 * root.raw_eval(color) if root.visits else 0.0
        pv = stats.pv_text(stats.principal_variation(root, color, p.lcb_min_visit_ratio))
        self.explanation = (f"move {mn}, {'B' if color == BLACK else 'W'} => "
                            f"{gtp_vertex(move)}\nPlayouts: {root.visits}, Win: {win:5.2f}%, "
                            f"PV: {pv}")
        restricted = r is not None and r.has_move_restrictions
        self._last_state = None if restricted else root_state
        self.last_result = record
        return record


core.SEARCH_CLASS = UCTSearch  # the core warms its kernels up with a search (core/run.py)
