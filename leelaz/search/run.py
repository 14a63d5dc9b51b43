"""One search call (think or ponder): the batches, their budgets and counters, the hot path.

Owns: `SearchRun` (one per think/ponder call: the root state and colour, the limits, the batch
in flight, the playout and node counters, the positions the tree may still keep), `Limits` and
`Progress` (what stops a run and whom it reports to), the descent, the general expansion and
the backup. Imports: search.node, search.select, search.expansion, search.stats,
search.timemanage, leelaz.batching (the batch policy), leelaz.memory (the tree's size).
UCTSearch (search.py) makes a run per call and keeps the tree, the parameters and the
evaluator across calls.

One batch (hot path, `collect` -> `submit` -> `apply`): up to `size` playouts descend from the
root on the positions the nodes keep (or on copies: `board.copy()` + `play_move()`), each
leaving virtual loss on its path, so the next descent is steered elsewhere, as Leela Zero's
worker threads are. Terminal leaves (two passes) are scored by Tromp-Taylor and backed up at
once; a move that repeats a position marks its child INVALID; a leaf already waiting for the
network ends the collection. Then ONE evaluator call (`submit(states).result()`), and each leaf
is expanded and its value backed up along its path, taking the virtual loss off again. Under
Python's GIL this is what replaces Leela Zero's threads, and it is what lets a backend batch.

Pipelining: with an `asynchronous` evaluator (a GPU) the batch is left on the device while the
next one is collected, then backed up; the tree walk and the device's work overlap. The batch
sizes follow leelaz/batching.py (the ramp that keeps a big batch from blinding a small
search).

The cyclic collector: after every batch, `run` hands everything alive to gc.freeze(), so the
collector no longer scans it. The tree's nodes and positions form no reference cycles
(reference counting frees a dropped subtree), yet as the tree grows the collector would scan
each of them again and again: a tenth of a playout's cost on big trees. Cyclic garbage alive at
that moment would never be collected: a search makes none (tests/test_search.py checks it),
and `run` collects what the rest of the program left since the last search before it starts
(milliseconds at most: only what is not frozen is scanned).

Seams for drivers other than `run` (each step is public and takes the run's own state only):
- Several searches in one network call (self-play, several games at once): for each game,
  `run, limits = search.start_move(state)` (or `search.start(state)` with limits of its
  own), `run.prepare()` (when `run.root_needs_evaluation()`, the driver may first send the
  root's position in its network call, so that prepare finds it in the evaluator's cache),
  `run.begin(limits, Progress())`; then per round `collect(run.next_batch_size())` on each
  run, every `LeafBatch.states` in one network call, each run's share handed back with
  `apply(batch)` after the run's own `submit(batch)` (an evaluator whose calls the driver
  joins) or `apply_evaluations(batch, evals)` (`forget(batch)` if the call failed), and
  `after_batch(did)` (the stopping rules `run` applies) says whether it goes on; at the end
  `search.finish(run)`; `expand_together([(run, batch), ...])` before the `apply` calls
  expands every run's leaves in one call, and `apply` then only backs up.
  selfplay/runner.py drives games so (without dynamic komi, which `think` starts around
  `run`).
- Something to do between batches (dynamic komi): `run` calls `between_batches(run)` after
  every batch when it is set; `root_state` is the position the root stands for, and terminal
  leaves are scored with its komi. The hook may replace `root` (a komi change discards the
  tree); the loop reads it again.
- Dynamic komi (`dynamic_komi`, search/dynkomi_search.DynamicKomi, None without the modes):
  the run draws each leaf's symmetry through it (a collected position is re-evaluated under
  its own), hands it the new leaves, and does not back up those --pos/--neg make invalid.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Callable

from leelaz.batching import leaves_to_collect
from leelaz.memory import min_psa_ratio, tree_bytes
from leelaz.game.coords import BLACK, PASS
from leelaz.search import merge, stats, timemanage
from leelaz.search.expansion import (expand_batch, legal_points, pass_allowed,
                                     request_compiled)
from leelaz.search.node import UCTNode, backup
from leelaz.search.result import SearchResult
from leelaz.search.root import prepare_root, root_needs_evaluation
from leelaz.search.select import INVALID, KEPT_SCORES_CHILDREN, ChildScores, RootSelector

#: Consecutive batches without a single playout or expansion after which a search gives up.
STALL_LIMIT = 100

_LEAF, _VALUE, _NOVALUE, _COLLISION, _REEXPAND = range(5)


@dataclass(frozen=True)
class Limits:
    """When a run stops: the visit and playout caps, the time budget (centiseconds; ignored
    while pondering), and whether it ponders (no budget, no early stop, small batches)."""

    visits: int
    playouts: int
    budget_cs: int
    pondering: bool = False


@dataclass(frozen=True)
class Progress:
    """Whom a run reports to: `on_progress(snapshot)` every `interval_cs` (and once at the
    end if never before), and `should_stop()`, polled after every batch."""

    on_progress: Callable[[SearchResult], None] | None = None
    interval_cs: int = 0
    should_stop: Callable[[], bool] | None = None


class LeafBatch:
    """Leaves collected under virtual loss, waiting for their evaluations.

    leaves: (path, state, kind) each, kind _LEAF (expand and back up) or _REEXPAND (more
    children, no value); done: terminal playouts already backed up during the collection;
    ratio: the expansion's prior cut-off when it was collected (memory pressure)."""

    __slots__ = ("leaves", "done", "ratio", "pending", "symmetries", "values")

    def __init__(self, leaves: list, done: int, ratio: float):
        self.leaves = leaves
        self.done = done
        self.ratio = ratio
        self.pending = None
        self.symmetries = None  # each leaf's, when the run chose them (dynamic komi)
        self.values = None  # each leaf's value once expanded by `expand_together`

    @property
    def states(self) -> list:
        return [st for _, st, _ in self.leaves]


class SearchRun:
    """One think/ponder call over `search`'s tree; see the module docstring.

    Made by `UCTSearch.start` once the root is chosen (tree reuse); `prepare()` readies the
    root, `run` (or a driver's `collect` / `apply_evaluations`) does the batches, and
    `UCTSearch.finish` chooses the move. Counters (`playouts`, `nodes`) start from the tree's
    and are handed back by UCTSearch when the run ends.
    """

    def __init__(self, search, root_state, color: int, start: float, restrictions=None):
        self.params = search.params
        self.evaluator = search.evaluator
        self.rng = search.rng
        self.log = search.log
        self.report_root = search.report_root
        self.merges_reports = search.merges_reports
        self.gather_reports = search.gather_reports
        self.root: UCTNode = search.root
        self.root_state = root_state
        self.color = color
        self.start = start
        self.restrictions = restrictions
        self.playouts = 0
        self.nodes = search.nodes
        #: Positions the tree may still keep on its nodes (see search.MAX_KEPT_BOARDS).
        self.boards_left = search.boards_left
        #: Running mean of the evaluation time per leaf (sizes ponder batches); kept by the
        #: search across runs.
        self.leaf_seconds = search.leaf_seconds
        self.seen = frozenset()  # ko hashes of the root's game, for superko in descents
        self.in_flight: LeafBatch | None = None  # the batch on the device, pipelined
        self.root_selector: RootSelector | None = None
        self.progress_shown = 0  # centiseconds of the last on_progress call
        # Set by `begin`: what stops the batches, whom they report to, the batch size, and
        # the loop's own state (the early stop's, the last reports, batches without work).
        self.limits: Limits | None = None
        self.progress = Progress()
        self.batch_size = 1
        self._early_stop: timemanage.EarlyStop | None = None
        self._last_update = self._last_output = self._stalled = 0
        #: Called with the run after every batch when set (the dynamic-komi seam).
        self.between_batches: Callable[[SearchRun], None] | None = None
        #: search/dynkomi_search.DynamicKomi in the dynamic-komi modes, else None.
        self.dynamic_komi = search.dynamic_komi
        #: The state the caller passed (dynamic komi writes an adjusted komi back to it).
        self.caller_state = None
        #: The last call's compiled-core arrays, for this call's tree reuse (UCTSearch.start,
        #: core/run.py), and, when that call wrote back only what its end read, the rest
        #: to write into the UCTNodes: (arrays, positions), see `write_kept_tree`.
        self.core_kept = None
        self.kept_unwritten = None

    def root_needs_evaluation(self) -> bool:
        """Whether `prepare` will evaluate the root (search/root.py)."""
        return root_needs_evaluation(self.root, self.root_state)

    def prepare(self) -> None:
        """Ready the root (search/root.py: expand it if needed, drop repeats, add noise) and
        its selector, which only lives as long as this run."""
        self.write_kept_tree()  # the Python search reads the whole tree
        prepare_root(self)
        self.root_selector = RootSelector(self.root)

    def write_kept_tree(self) -> None:
        """The rest of the last call's tree into the UCTNodes, where that call wrote back
        only what its end read (`kept_unwritten`; UCTSearch.start wrote the path to this
        root, the root and its children): before anything reads deeper. Nothing when
        every row is written."""
        pending, self.kept_unwritten = self.kept_unwritten, None
        if pending is not None:
            tree, boards = pending
            tree.to_root(boards)

    # ------------------------------------------------------------------ the loop
    def run(self, limits: Limits, progress: Progress) -> None:
        """Batches until a limit, the budget, early stop or should_stop (at least one).

        With an asynchronous evaluator (a GPU) and batches of more than one, one batch is
        kept in flight: its leaves are expanded after the next batch has been collected."""
        self.begin(limits, progress)
        pipelined = self.batch_size > 1 and self.evaluator.asynchronous
        if pipelined:  # a device's search: its own Python is the limit
            request_compiled()
        self.in_flight = None
        gc.collect()  # before freezing anything: see the module docstring
        try:
            while True:
                if pipelined:
                    did = self._step_pipelined(self.next_batch_size(pipelined=True))
                else:
                    did = self._step(self.next_batch_size())
                gc.freeze()  # see "The cyclic collector" in the module docstring
                if not self.after_batch(did):
                    break
            self._drain()
        finally:
            self.in_flight = None  # after an error the caller resets the tree
        if progress.interval_cs and progress.on_progress and self.progress_shown == 0:
            self.gather_reports(False)
            progress.on_progress(self.snapshot())

    # ------------------------------------------------------------------ the loop, in steps
    def begin(self, limits: Limits, progress: Progress) -> None:
        """Start the batches (after `prepare`): `run` calls it, and so does a driver that
        steps several runs itself (`next_batch_size`, `collect`, its own network call,
        `apply`, `after_batch`), so both stop by the same rules."""
        self.limits = limits
        self.progress = progress
        p = self.params
        play = p.play_batch_size if not limits.pondering else 0
        self.batch_size = max(1, play or p.batch_size)
        self._early_stop = timemanage.EarlyStop(self.params.effective_timemanage(), self.log)
        self._last_update = self._last_output = self._stalled = 0
        self.progress_shown = 0

    def next_batch_size(self, pipelined: bool = False) -> int:
        """How many leaves the next batch collects: the batch policy (leelaz/batching.py)
        under the limits, less the leaves in flight. At least one without a batch in
        flight (something must run); 0 when a pipelined run should only drain."""
        limits = self.limits
        left = min(limits.playouts - self.playouts, limits.visits - self.root.visits)
        in_flight = len(self.in_flight.leaves) if self.in_flight is not None else 0
        size = leaves_to_collect(self.batch_size, left, in_flight, self.root.visits,
                                 self.params, self.leaf_seconds if limits.pondering else 0.0)
        if size < 1 and not in_flight:
            size = 1
        if pipelined:
            return size if size > 0 and left > in_flight else 0
        return max(1, size)

    def after_batch(self, did: int) -> bool:
        """After each batch (`did`: descents that made a playout or an expansion): the
        between-batches hook, progress reports, then whether to go on: not after
        STALL_LIMIT batches in a row did nothing, nor past the tree's memory, a visit or
        playout cap, should_stop, the time budget or the early stop (search/timemanage.py)."""
        if self.between_batches is not None:
            self.between_batches(self)  # may replace self.root (a komi change): read below
        if did:
            self._stalled = 0
        else:
            self._stalled += 1
            if self._stalled >= STALL_LIMIT:  # every descent ends in a repetition: give up
                return False
        limits, progress = self.limits, self.progress
        elapsed_cs = int(self.elapsed() * 100)
        interval_cs, on_progress = progress.interval_cs, progress.on_progress
        if interval_cs and on_progress and elapsed_cs - self._last_output > interval_cs:
            self._last_output = self.progress_shown = elapsed_cs
            self.gather_reports(False)
            on_progress(self.snapshot())
        if not limits.pondering and elapsed_cs - self._last_update > 250:
            self._last_update = elapsed_cs
            self.log_playouts()
        if self.tree_bytes() >= self.params.max_tree_bytes:
            return False
        if self.playouts >= limits.playouts or self.root.visits >= limits.visits:
            return False
        if progress.should_stop is not None and progress.should_stop():
            return False
        if limits.pondering:
            return True
        if elapsed_cs >= limits.budget_cs:
            return False
        return self._early_stop.keep_searching(self, limits, elapsed_cs)

    def _step(self, limit: int) -> int:
        """Collect up to `limit` leaves under virtual loss, evaluate them at once, back up.
        Returns how many descents did something (a value, or an expansion)."""
        batch = self.collect(limit)
        if batch.leaves:
            self.submit(batch)
            self.apply(batch)
        return batch.done + len(batch.leaves)

    def _step_pipelined(self, limit: int) -> int:
        """As _step, but the batch is left running on the device while the previous one is
        backed up; the next call collects its leaves during the device's work. The tree sees
        two batches of virtual loss at a time, as Leela Zero's threads beyond one batch do."""
        batch = self.collect(limit) if limit > 0 else LeafBatch([], 0, 0.0)
        if batch.leaves:
            self.submit(batch)
        return batch.done + len(batch.leaves) + self._drain(batch if batch.leaves else None)

    def drain(self) -> int:
        """Back up the batch in flight, if any (before something between batches changes
        the tree: a dynamic-komi adjustment)."""
        return self._drain()

    def _drain(self, replacement: LeafBatch | None = None) -> int:
        """Back up the batch in flight (if any) and put `replacement` in its place."""
        batch, self.in_flight = self.in_flight, replacement
        if batch is None:
            return 0
        self.apply(batch)
        return len(batch.leaves)

    # ------------------------------------------------------------------ one batch
    def collect(self, limit: int) -> LeafBatch:
        """Descend up to `limit` times; terminal values are backed up at once."""
        vl = self.params.virtual_loss
        ratio = self.min_psa_ratio()
        leaves = []
        deeper: set[int] = set()  # ids of nodes already queued for a deeper expansion
        kept: dict[int, ChildScores] = {}  # big inner nodes' scores, for this collection
        self.root_selector.forget_scores()  # the last batch's backups changed the children
        attempts = done = 0
        while len(leaves) < limit and attempts < 2 * limit:
            attempts += 1
            kind, path, payload = self._descend(ratio, deeper, kept)
            if kind == _LEAF or kind == _REEXPAND:
                leaves.append((path, payload, kind))
                continue
            if kind == _VALUE:
                backup(path, payload, vl)
                self.playouts += 1
                dk = self.dynamic_komi
                if dk is not None and dk.debts:
                    self.playouts += dk.pay_debts(path, payload)
                done += 1
                limit -= 1
                continue
            for node in path:
                node.virtual_loss -= vl
            if kind == _COLLISION:
                break
        return LeafBatch(leaves, done, ratio)

    def submit(self, batch: LeafBatch) -> None:
        """Hand the leaves' states to the evaluator (`submit_timed`)."""
        def call():
            if self.dynamic_komi is not None:  # a leaf is re-evaluated under its symmetry
                batch.symmetries = self.dynamic_komi.symmetries(len(batch.leaves), self.rng)
                return self.evaluator.submit(batch.states, batch.symmetries)
            if self.params.fixed_symmetry >= 0:  # --fixed-symmetry outside the modes
                return self.evaluator.submit(batch.states, self.params.fixed_symmetry)
            return self.evaluator.submit(batch.states)

        self.submit_timed(batch, call)

    def submit_timed(self, batch, call) -> None:
        """`call()` submits the batch to the evaluator; its pending evaluation is kept timed
        (`_Timed`, whose seconds per leaf size ponder batches), and a failure takes the
        batch's virtual loss off. Both searches submit through here, so that they read one
        clock (this module's `time`, which the equality tests replace by a fake one)."""
        began = time.monotonic()
        try:
            pending = call()
        except BaseException:
            self.forget(batch)
            raise
        batch.pending = _Timed(pending, time.monotonic() - began)

    def elapsed(self) -> float:
        """Seconds since the run began (its reports' time), on the same clock."""
        return time.monotonic() - self.start

    def forget(self, batch: LeafBatch) -> None:
        """Take the batch's virtual loss off again: the tree stays usable after a failure."""
        vl = self.params.virtual_loss
        for path, _, _ in batch.leaves:
            for node in path:
                node.virtual_loss -= vl

    def apply(self, batch: LeafBatch) -> None:
        """Wait for the submitted batch's evaluations, then expand and back up (only back
        up when `expand_together` has expanded the batch already)."""
        if batch.values is not None:
            self._backup_leaves(batch.leaves, batch.values, ())
            return
        self._expand_and_backup(batch.leaves, self._evaluations(batch), batch.ratio,
                                batch.symmetries)

    def _evaluations(self, batch: LeafBatch) -> list:
        """Wait for the submitted batch's evaluations (a failure takes its virtual loss off)
        and keep the time per leaf."""
        pending = batch.pending
        try:
            evals = pending.result()
            _check_count(evals, batch.leaves)
        except BaseException:
            self.forget(batch)
            raise
        per_leaf = pending.seconds / len(batch.leaves)
        self.leaf_seconds = per_leaf if not self.leaf_seconds else \
            0.8 * self.leaf_seconds + 0.2 * per_leaf
        return evals

    def expands_plainly(self, batch: LeafBatch) -> bool:
        """Whether `apply` would expand every leaf of `batch` through `expand_batch`: new
        leaves only, no memory pressure, no move restrictions, no dynamic komi."""
        restrictions = self.restrictions
        return (batch.ratio <= 0.0 and self.dynamic_komi is None
                and (restrictions is None or not restrictions.has_move_restrictions)
                and all(kind == _LEAF for _, _, kind in batch.leaves))

    def apply_evaluations(self, batch: LeafBatch, evals) -> None:
        """Expand each leaf from its evaluation (in the order of `batch.states`) and back its
        value up: `apply` for a driver that evaluated the batch itself."""
        try:
            _check_count(evals, batch.leaves)
        except BaseException:
            self.forget(batch)
            raise
        self._expand_and_backup(batch.leaves, evals, batch.ratio)

    def _expand_and_backup(self, leaves, evals, ratio: float, symmetries=None) -> None:
        """Hot path: every leaf of a batch expanded, its value backed up."""
        restrictions = self.restrictions
        if ratio <= 0.0 and (restrictions is None or not restrictions.has_move_restrictions):
            values = self._expand_leaves(leaves, evals)
        else:  # memory pressure or restricted moves: the general expansion, one at a time
            values = [self.expand(path[-1], st, ev, ratio)
                      for (path, st, _), ev in zip(leaves, evals)]
        dk = self.dynamic_komi
        skip = dk.take_leaves(leaves, evals, symmetries, _LEAF) if dk is not None else ()
        self._backup_leaves(leaves, values, skip)

    def _backup_leaves(self, leaves, values, skip) -> None:
        """Back up each new leaf's value (not those in `skip`); take the virtual loss of the
        others off (hot path)."""
        vl = self.params.virtual_loss
        dk = self.dynamic_komi
        for i, ((path, _, kind), value) in enumerate(zip(leaves, values)):
            if kind == _LEAF and i not in skip:
                backup(path, value, vl)
                self.playouts += 1
                if dk is not None and dk.debts:
                    self.playouts += dk.pay_debts(path, value)
            else:  # LZ goes on down from a re-expanded node; we let the next playout do so;
                # an invalid leaf (--pos/--neg) keeps its value for FPU but is not backed up
                for node in path:
                    node.virtual_loss -= vl

    def _expand_leaves(self, leaves, evals) -> list[float]:
        """Expand a batch with no memory pressure and no move restrictions: new leaves all
        together (expansion.expand_batch, hot path), re-expansions one at a time."""
        fresh = [i for i, (_, _, kind) in enumerate(leaves) if kind == _LEAF]
        values: list[float] = [0.0] * len(leaves)
        if fresh:
            got, made = expand_batch([leaves[i][0][-1] for i in fresh],
                                     [leaves[i][1] for i in fresh], [evals[i] for i in fresh],
                                     self.params.dumbpass)
            self.nodes += made
            for i, value in zip(fresh, got):
                values[i] = value
        if len(fresh) < len(leaves):
            for i, ((path, st, kind), ev) in enumerate(zip(leaves, evals)):
                if kind != _LEAF:
                    values[i] = self.expand(path[-1], st, ev)
        return values

    def tree_bytes(self) -> int:
        """The tree's size in Leela Zero's accounting (leelaz/memory.py)."""
        return tree_bytes(self.nodes, self.root.visits)

    def min_psa_ratio(self) -> float:
        """How much of each expansion to keep as the tree fills its memory."""
        return min_psa_ratio(self.tree_bytes(), self.params.max_tree_bytes)

    def _descend(self, ratio: float, deeper: set[int], kept: dict[int, ChildScores]):
        """One descent from the root (hot path). Returns (kind, path, leaf state or value).

        Nodes with many children select through their ChildScores in `kept` (select.py), the
        root through the run's RootSelector.

        Positions come from the nodes (`UCTNode.board`) where the tree kept them; only a
        node without one is played, from its parent's position, and tested for superko
        then (a kept position was tested when it was made). The leaf's GameState is put
        together from the path's positions at the end (`GameState.extended`)."""
        p = self.params
        vl = p.virtual_loss
        c_puct, log_puct, log_const = p.c_puct, p.log_puct, p.log_const
        fpu = p.root_fpu_reduction()
        inner_fpu = p.fpu_reduction  # below the root
        dynamic_fpu = p.dynamic_fpu
        forced_k = p.forced_playouts_k
        big = KEPT_SCORES_CHILDREN
        root_state = self.root_state
        node = root = self.root
        node.virtual_loss += vl
        path = [node]
        boards = []  # the position after each move of the path
        board = root_state.board
        color = board.to_move
        while True:
            if not node.expanded:
                if board.passes >= 2:
                    score = board.area_score(root_state.scoring_komi)
                    return _VALUE, path, (1.0 if score > 0 else 0.0 if score < 0 else 0.5)
                if node.virtual_loss > vl:
                    return _COLLISION, path, None  # already waiting in this batch
                return _LEAF, path, root_state.extended(boards)
            if node.psa_ratio > ratio and id(node) not in deeper:  # rare: memory freed up
                deeper.add(id(node))
                return _REEXPAND, path, root_state.extended(boards)
            if not node.children and not node._moves:
                return _NOVALUE, path, None
            if node is root:
                child = None
                if forced_k:  # self-play's forced playouts (off in every other search)
                    child = self.root_selector.forced_child(forced_k, vl)
                if child is None:
                    child = self.root_selector.select(node, color, fpu, c_puct, log_puct,
                                                      log_const, dynamic_fpu)
            elif len(node.children) >= big:
                scores = kept.get(id(node))
                if scores is None:
                    scores = kept[id(node)] = ChildScores()
                child = scores.select(node, color, fpu, c_puct, log_puct, log_const,
                                      dynamic_fpu)
            else:
                child = node.select_child(color, fpu, c_puct, log_puct, log_const,
                                          dynamic_fpu)
            if child is None:  # every child repeats a position
                return _NOVALUE, path, None
            after = child.board
            if after is None:
                move = child.move
                after = board.copy()
                after.play_move(color, move)
                if move != PASS and self._repeats(after.ko_hash, boards):
                    child.status = INVALID
                    kept.pop(id(node), None)  # Npar may change: score afresh
                    return _NOVALUE, path, None
                if self.boards_left > 0:
                    self.boards_left -= 1
                    child.board = after
            boards.append(after)
            board = after
            child.virtual_loss += vl
            path.append(child)
            node = child
            color = 1 - color
            fpu = inner_fpu

    def _repeats(self, ko_hash: int, boards) -> bool:
        """Positional superko for a new position below the root (whose game is `seen`)."""
        if ko_hash in self.seen:
            return True
        for b in boards:
            if b.ko_hash == ko_hash:
                return True
        return False

    def expand(self, node: UCTNode, st, ev, min_psa_ratio: float = 0.0) -> float:
        """Create the children of a leaf from its evaluation; returns its value (Black)."""
        color = st.to_move
        stm = float(ev.winrate)
        black = stm if color == BLACK else 1.0 - stm
        candidates = legal_points(st, color)
        restrictions = self.restrictions
        if restrictions is not None and restrictions.has_move_restrictions:
            mn = st.move_num
            allowed = restrictions.is_allowed
            candidates = [v for v in candidates.tolist() if allowed(color, v, mn)]
        allow_pass = pass_allowed(st, len(candidates), stm, self.params.dumbpass)
        self.nodes += node.create_children(candidates, ev.policy, allow_pass, black,
                                           min_psa_ratio)
        return black

    # ------------------------------------------------------------------ reports
    def current_root(self) -> UCTNode:
        """The root, its tree's statistics up to date, for a reader between two batches
        that reads the tree itself rather than a `snapshot` (a helper search process's
        reports, root_parallel/helper.py): here the tree is always up to date; the
        compiled core (search/core/run.py) writes its arrays back first."""
        return self.root

    def snapshot(self, move=None, root: UCTNode | None = None) -> SearchResult:
        """The root's children now (progress reports): `root`, else the search's
        `report_root` of the run's root (its own, or merged with other processes' trees, as
        the search's `gather_reports` last gathered them). Only reads."""
        if root is None:
            root = self.report_root(self.root, False)
        return stats.snapshot(root, self.color, self.root_state.move_num, move=move,
                              playouts=self.playouts, nodes=self.nodes,
                              elapsed=self.elapsed(),
                              ratio=self.params.lcb_min_visit_ratio)

    def root_report(self):
        """search/merge.root_report of the tree now (a helper search process's report to
        the engine, root_parallel/helper.py)."""
        return merge.root_report(self.current_root(), self.color)

    def log_playouts(self) -> None:
        if self.params.quiet:
            return
        root, color = self.root, self.color
        win = 100.0 * root.raw_eval(color) if root.visits else 0.0
        pv = stats.pv_text(stats.principal_variation(root, color, self.params.lcb_min_visit_ratio))
        self.log(f"Playouts: {self.playouts}, Win: {win:5.2f}%, PV: {pv}\n")


def expand_together(runs_batches) -> None:
    """Wait for the evaluations of several runs' submitted batches and expand their leaves
    in one `expand_batch` call (hot path: self-play, once per round for every game of a
    group); `apply` then only backs up. A batch `apply` would not expand plainly (see
    `SearchRun.expands_plainly`) is left to `apply`.

    Why: `expand_batch` makes two dozen numpy calls whatever its size; for the 6 leaves of
    one game's batch in self-play (`-t 6`) their fixed cost is paid once per game and
    round, here once per round. Each row is computed on its own, so each leaf gets exactly
    the children `apply` would give it (tests/test_search_run.py)."""
    by_dumbpass: dict[bool, list] = {}
    for run, batch in runs_batches:
        if batch.values is None and batch.leaves and run.expands_plainly(batch):
            evals = run._evaluations(batch)
            by_dumbpass.setdefault(run.params.dumbpass, []).append((run, batch, evals))
    for dumbpass, members in by_dumbpass.items():
        nodes, states, evals = [], [], []
        for _, batch, batch_evals in members:
            for path, st, _ in batch.leaves:
                nodes.append(path[-1])
                states.append(st)
            evals += batch_evals
        values, _ = expand_batch(nodes, states, evals, dumbpass)
        start = 0
        for run, batch, _ in members:
            end = start + len(batch.leaves)
            batch.values = values[start:end]
            run.nodes += sum([node.child_count() for node in nodes[start:end]])
            start = end


def _check_count(evals, leaves) -> None:
    if len(evals) != len(leaves):
        raise ValueError(f"evaluator answered {len(evals)} of {len(leaves)} states")


class _Timed:
    """A pending evaluation that adds up the time spent submitting it and waiting for it:
    the evaluation time per leaf that sizes ponder batches."""

    def __init__(self, pending, submit_seconds: float):
        self._pending = pending
        self.seconds = submit_seconds

    def result(self):
        began = time.monotonic()
        evals = self._pending.result()
        self.seconds += time.monotonic() - began
        return evals
