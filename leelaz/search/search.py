"""The tree search: Leela Zero's UCTSearch with batched leaf evaluation instead of threads.

Owns: `UCTSearch` (think, ponder, tree reuse, root preparation, time management, stderr
diagnostics) and the `Evaluator` / `MoveRestrictions` protocols it needs.
Imports: numpy, game.coords, search.* (never nn/: an evaluator is handed in; tests pass a fake).

One batch (hot path, `_run_batch` / `_descend`): up to `batch_size` playouts descend from the
root on copies of the root state (`state.copy()` + `play()`), each leaving virtual loss on its
path, so the next descent is steered elsewhere, as LZ's worker threads are. Terminal leaves
(two passes) are scored by Tromp-Taylor and backed up at once; a move that repeats a position
marks its child INVALID; a leaf already waiting for the network ends the collection. Then ONE
evaluator call (`submit(states).result()`, or `evaluate(states)` for an evaluator without
submit), and each leaf is expanded and its value backed up along its path, taking the virtual
loss off again. Under Python's GIL this is what replaces LZ's threads, and it is what lets a
backend batch.

Pipelining (`_run_pipelined`): with an `asynchronous` evaluator (the OpenCL backend) the batch
is left on the GPU while the next one is collected, then backed up; the tree walk and the GPU
work overlap. However big the batch, at most root visits / `visits_per_pending_leaf` leaves
wait for the network at once (but `min_pending_leaves`, LZ's default 10, are always allowed),
so a big batch cannot make a small search blind.

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
from leelaz.search import stats, timemanage
from leelaz.search.choose import choose_move
from leelaz.search.expansion import expand_batch, legal_points, pass_allowed
from leelaz.search.node import ACTIVE, INVALID, PRUNED, RootSelector, UCTNode
from leelaz.search.params import UNLIMITED, SearchParams
from leelaz.search.result import SearchResult

#: Bytes per child slot and per inflated node in LZ's tree-size accounting (§3.9).
CHILD_BYTES = 8
NODE_BYTES = 64

#: How many positions the tree may keep on its nodes (about 6.3 kB each, so ~130 MB): with
#: them a playout plays only its leaf's move instead of replaying its whole path. Deeper
#: nodes beyond this are replayed from the nearest kept position.
MAX_KEPT_BOARDS = 20_000

#: Consecutive batches without a single playout or expansion after which a search gives up.
STALL_LIMIT = 100
#: While pondering, a batch should not take longer than this, so that a new input line is
#: answered promptly (GUIs stop analysis by sending any command).
PONDER_BATCH_SECONDS = 0.03

_LEAF, _VALUE, _NOVALUE, _COLLISION, _REEXPAND = range(5)


class Evaluation(Protocol):
    policy: Sequence[float]  # 362 probabilities (pass last)
    winrate: float  # for the side to move


class PendingEvaluations(Protocol):
    """A batch under way; `result()` waits for it (once)."""

    def result(self) -> list[Evaluation]: ...


class Evaluator(Protocol):
    """What the search needs from the network (nn.network.Network satisfies it; tests and
    self-play hand in their own). Declared, never probed:

    - `submit(states).result()` evaluates a batch: one call per batch of leaves.
    - `evaluate(states)` is the same at once (the root's single evaluation).
    - `asynchronous`: submit returns before the answer is computed (a GPU), so the search
      keeps one batch in flight while it collects the next.
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
        self._restrictions: MoveRestrictions | None = None
        self._leaf_seconds = 0.0  # running mean of evaluation time per leaf (ponder batches)
        self._root_selector: RootSelector | None = None  # built per search loop
        self._in_flight = None  # (leaves, pending, ratio): the batch on the device, pipelined
        self._progress_shown = 0  # centiseconds of the last on_progress call in this loop
        self._boards_left = MAX_KEPT_BOARDS  # positions the tree may still keep on its nodes
        self._seen = frozenset()  # ko hashes of the root's game, for superko in descents

    # ------------------------------------------------------------------ public API
    def reset(self) -> None:
        """Forget the tree (clear_board, loadsgf, boardsize)."""
        self.root = None
        self._last_state = None
        self.nodes = 0

    def tree_bytes(self) -> int:
        """Tree size in LZ's accounting: 8 B per child slot, 64 B per visited node."""
        visits = self.root.visits if self.root is not None else 0
        return CHILD_BYTES * self.nodes + NODE_BYTES * visits

    def log(self, text: str) -> None:
        if not self.params.quiet:
            self._log_fn(text)

    def think(self, state, color: int | None = None, *, time_limit_cs: int | None = None,
              max_visits: int | None = None, max_playouts: int | None = None,
              on_progress: Callable[[SearchResult], None] | None = None,
              progress_interval_cs: int = 0, should_stop: Callable[[], bool] | None = None,
              nopass: bool = False, noresign: bool = False,
              restrictions: MoveRestrictions | None = None, use_clock: bool = True
              ) -> SearchResult:
        """Search the position for `color` and choose a move (genmove).

        `state` is not changed (the caller plays the move), except that its clock is charged
        when `use_clock`. The budget is `time_limit_cs`, or else the clock's
        max_time_for_move. Limits default to params.max_visits / max_playouts.
        `on_progress(snapshot)` is called every `progress_interval_cs` (lz-genmove_analyze),
        and once at the end if it never was. `should_stop()` aborts early (e.g. quit).
        """
        p = self.params
        color = state.to_move if color is None else color
        start = time.monotonic()
        tc = getattr(state, "time_control", None) if use_clock else None
        if tc is not None:
            tc.start(color)
        if restrictions is not None and restrictions.has_move_restrictions:
            self._last_state = None  # a reused tree may hold avoided moves
        try:
            root_state = _to_move(state, color)
            self._restrictions = restrictions
            self._update_root(root_state, restrictions)
            budget = timemanage.budget_cs(p, root_state, color, tc, time_limit_cs)
            self.log(f"Thinking at most {budget / 100.0:.1f} seconds...\n")
            self._prepare_root(root_state, color)
            root = self.root
            visits_cap = p.max_visits if max_visits is None else max_visits
            playouts_cap = p.max_playouts if max_playouts is None else max_playouts
            if root.has_children():
                self._loop(root_state, color, start, budget, visits_cap, playouts_cap,
                           on_progress, progress_interval_cs, should_stop, pondering=False)
            for c in root.children:
                if c.status == PRUNED:
                    c.status = ACTIVE
            if not root.has_children():
                result = stats.snapshot(root, color, root_state.move_num, move=PASS)
                self.last_result = result
                return result
            return self._finish_think(root_state, color, start, nopass, noresign)
        except BaseException:
            self.reset()  # a failed evaluation must not leave a half-updated tree behind
            raise
        finally:
            # Charged after the stats and the move choice too: in Python they take
            # milliseconds per move, which over a game would eat the whole lag buffer.
            if tc is not None:
                tc.stop(color)

    def ponder(self, state, *, should_stop: Callable[[], bool],
               on_progress: Callable[[SearchResult], None] | None = None,
               progress_interval_cs: int = 0, restrictions: MoveRestrictions | None = None,
               max_visits: int | None = None, max_playouts: int | None = None) -> SearchResult:
        """Think on the opponent's time (or lz-analyze) until `should_stop()` or a limit.

        The side to move is the state's. With move restrictions the tree is neither reused
        nor kept, as in LZ.
        """
        p = self.params
        color = state.to_move
        start = time.monotonic()
        disable_reuse = bool(restrictions is not None and restrictions.has_move_restrictions)
        if disable_reuse:
            self._last_state = None
        try:
            root_state = state.copy()
            self._restrictions = restrictions
            self._update_root(root_state, restrictions)
            self._prepare_root(root_state, color)
            root = self.root
            if root.has_children():
                self._loop(root_state, color, start, UNLIMITED,
                           p.max_visits if max_visits is None else max_visits,
                           p.max_playouts if max_playouts is None else max_playouts,
                           on_progress, progress_interval_cs, should_stop, pondering=True)
            for c in root.children:
                if c.status == PRUNED:
                    c.status = ACTIVE
        except BaseException:
            self.reset()
            raise
        if root.has_children() and root.children:
            self.log("\n")
            root.sort_children(color, p.lcb_min_visit_ratio)
            self._dump_stats(root, color)
            self.log(f"\n{root.visits} visits, {self.nodes} nodes\n\n")
        result = stats.snapshot(root, color, root_state.move_num, playouts=self.playouts,
                                nodes=self.nodes, elapsed=time.monotonic() - start,
                                ratio=p.lcb_min_visit_ratio)
        self._last_state = None if disable_reuse else root_state
        self._restrictions = None
        return result

    # ------------------------------------------------------------------ the loop
    def _loop(self, root_state, color, start, budget_cs, visits_cap, playouts_cap, on_progress,
              interval_cs, should_stop, pondering):
        """Batches until a limit, the budget, early stop or should_stop (at least one).

        With an asynchronous evaluator (a GPU) and batches of more than one, one batch is
        kept in flight: its leaves are expanded after the next batch has been collected."""
        batch = max(1, self.params.batch_size)
        early_stop = timemanage.EarlyStop(self.params.effective_timemanage(), self.log)
        self._root_selector = RootSelector(self.root)
        pipelined = batch > 1 and self.evaluator.asynchronous
        self._in_flight = None
        try:
            self._batches(root_state, color, start, budget_cs, visits_cap, playouts_cap,
                          on_progress, interval_cs, should_stop, pondering, batch, pipelined,
                          early_stop)
            self._drain()
        finally:
            self._in_flight = None  # after an error the caller resets the tree
        if interval_cs and on_progress and self._progress_shown == 0:
            on_progress(self._snapshot(root_state, color, start))

    def _batches(self, root_state, color, start, budget_cs, visits_cap, playouts_cap,
                 on_progress, interval_cs, should_stop, pondering, batch, pipelined, early_stop):
        p = self.params
        root = self.root
        last_update = last_output = stalled = 0
        self._progress_shown = 0
        while True:
            left = min(playouts_cap - self.playouts, visits_cap - root.visits)
            in_flight = self._in_flight_count()
            left -= in_flight
            size = min(batch, left)
            if p.visits_per_pending_leaf > 0:  # ramp the batch up as the tree grows
                cap = max(1, p.min_pending_leaves, root.visits // p.visits_per_pending_leaf)
                size = min(size, cap - in_flight)
            if pondering and self._leaf_seconds > 0:
                # Stay responsive: a ponder batch should take at most PONDER_BATCH_SECONDS,
                # since input is only noticed between batches.
                size = min(size, int(PONDER_BATCH_SECONDS / self._leaf_seconds))
            if size < 1 and not in_flight:
                size = 1  # something must run, or the loop would stall
            if pipelined:
                did = self._run_pipelined(root_state, size if size > 0 and left > 0 else 0)
            else:
                did = self._run_batch(root_state, max(1, size))
            if did:
                stalled = 0
            else:
                stalled += 1
                if stalled >= STALL_LIMIT:  # every descent ends in a repetition: give up
                    break
            elapsed_cs = int((time.monotonic() - start) * 100)
            if interval_cs and on_progress and elapsed_cs - last_output > interval_cs:
                last_output = self._progress_shown = elapsed_cs
                on_progress(self._snapshot(root_state, color, start))
            if not pondering and elapsed_cs - last_update > 250:
                last_update = elapsed_cs
                self._log_playouts(color)
            if self.tree_bytes() >= p.max_tree_bytes:
                break
            if self.playouts >= playouts_cap or root.visits >= visits_cap:
                break
            if should_stop is not None and should_stop():
                break
            if pondering:
                continue
            if elapsed_cs >= budget_cs:
                break
            if not early_stop.keep_searching(root, root_state, color, self.playouts,
                                             elapsed_cs, budget_cs, visits_cap, playouts_cap):
                break

    def _run_batch(self, root_state, limit: int) -> int:
        """Collect up to `limit` leaves under virtual loss, evaluate them at once, back up.
        Returns how many descents did something (a value, or an expansion)."""
        ratio = self._min_psa_ratio()
        leaves, done = self._collect(root_state, limit, ratio)
        if leaves:
            self._apply(leaves, self._submit(leaves), ratio)
        return done + len(leaves)

    def _run_pipelined(self, root_state, limit: int) -> int:
        """As _run_batch, but the batch is left running on the device while the previous one
        is backed up; the next call collects its leaves during the device's work. The tree
        sees two batches of virtual loss at a time, as LZ's threads beyond one batch do."""
        ratio = self._min_psa_ratio()
        leaves, done = self._collect(root_state, limit, ratio) if limit > 0 else ([], 0)
        batch = (leaves, self._submit(leaves), ratio) if leaves else None
        return done + len(leaves) + self._drain(batch)

    def _drain(self, replacement=None) -> int:
        """Back up the batch in flight (if any) and put `replacement` in its place."""
        batch, self._in_flight = self._in_flight, replacement
        if batch is None:
            return 0
        self._apply(*batch)
        return len(batch[0])

    def _in_flight_count(self) -> int:
        return len(self._in_flight[0]) if self._in_flight is not None else 0

    def _collect(self, root_state, limit: int, ratio: float):
        """Descend up to `limit` times; terminal values are backed up at once. Returns the
        leaves to evaluate, (path, state, kind) with kind _LEAF or _REEXPAND (more children,
        no value), and how many terminal playouts were backed up."""
        vl = self.params.virtual_loss
        leaves = []
        deeper: set[int] = set()  # ids of nodes already queued for a deeper expansion
        self._root_selector.forget_scores()  # the last batch's backups changed the children
        attempts = done = 0
        while len(leaves) < limit and attempts < 2 * limit:
            attempts += 1
            kind, path, payload = self._descend(root_state, ratio, deeper)
            if kind == _LEAF or kind == _REEXPAND:
                leaves.append((path, payload, kind))
                continue
            if kind == _VALUE:
                _backup(path, payload, vl)
                self.playouts += 1
                done += 1
                limit -= 1
                continue
            for node in path:
                node.virtual_loss -= vl
            if kind == _COLLISION:
                break
        return leaves, done

    def _submit(self, leaves):
        """Hand the leaves' states to the evaluator; a failure takes their virtual loss off."""
        began = time.monotonic()
        try:
            states = [st for _, st, _ in leaves]
            pending = self.evaluator.submit(states)
        except BaseException:
            self._forget(leaves)
            raise
        return _Timed(pending, time.monotonic() - began)

    def _forget(self, leaves) -> None:
        vl = self.params.virtual_loss
        for path, _, _ in leaves:  # leave no virtual loss behind: the tree stays usable
            for node in path:
                node.virtual_loss -= vl

    def _apply(self, leaves, pending, ratio: float) -> None:
        """Wait for the evaluations, expand each leaf and back its value up."""
        vl = self.params.virtual_loss
        try:
            evals = pending.result()
            if len(evals) != len(leaves):
                raise ValueError(f"evaluator answered {len(evals)} of {len(leaves)} states")
        except BaseException:
            self._forget(leaves)
            raise
        per_leaf = pending.seconds / len(leaves)
        self._leaf_seconds = per_leaf if not self._leaf_seconds else \
            0.8 * self._leaf_seconds + 0.2 * per_leaf
        restrictions = self._restrictions
        if ratio <= 0.0 and (restrictions is None or not restrictions.has_move_restrictions):
            values = self._expand_leaves(leaves, evals)
        else:  # memory pressure or restricted moves: the general expansion, one at a time
            values = [self._expand(path[-1], st, ev, ratio)
                      for (path, st, _), ev in zip(leaves, evals)]
        for (path, _, kind), value in zip(leaves, values):
            if kind == _LEAF:
                _backup(path, value, vl)
                self.playouts += 1
            else:  # LZ goes on down from a re-expanded node; we let the next playout do so
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
                    values[i] = self._expand(path[-1], st, ev)
        return values

    def _min_psa_ratio(self) -> float:
        """How much of each expansion to keep as the tree fills its memory (LZ's
        get_min_psa_ratio): everything below 50%, priors >= 0.1% of the best below 95%,
        >= 1% below 100%, nothing when full."""
        full = self.tree_bytes() / max(1, self.params.max_tree_bytes)
        if full <= 0.5:
            return 0.0
        if full <= 0.95:
            return 0.001
        return 0.01 if full < 1.0 else 2.0

    def _descend(self, root_state, ratio: float, deeper: set[int]):
        """One descent from the root (hot path). Returns (kind, path, leaf state or value).

        Positions come from the nodes (`UCTNode.board`) where the tree kept them; only a
        node without one is played, from its parent's position, and tested for superko
        then (a kept position was tested when it was made). The leaf's GameState is put
        together from the path's positions at the end (`GameState.extended`)."""
        p = self.params
        vl = p.virtual_loss
        c_puct, log_puct, log_const = p.c_puct, p.log_puct, p.log_const
        fpu = p.root_fpu_reduction()
        node = root = self.root
        node.virtual_loss += vl
        path = [node]
        boards = []  # the position after each move of the path
        board = root_state.board
        color = board.to_move
        while True:
            if not node.expanded:
                if board.passes >= 2:
                    score = board.area_score(root_state.komi + root_state.handicap)
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
                child = self._root_selector.select(node, color, fpu, c_puct, log_puct,
                                                   log_const)
            else:
                child = node.select_child(color, fpu, c_puct, log_puct, log_const)
            if child is None:  # every child repeats a position
                return _NOVALUE, path, None
            after = child.board
            if after is None:
                move = child.move
                after = board.copy()
                after.play_move(color, move)
                if move != PASS and self._repeats(after.ko_hash, boards):
                    child.status = INVALID
                    return _NOVALUE, path, None
                if self._boards_left > 0:
                    self._boards_left -= 1
                    child.board = after
            boards.append(after)
            board = after
            child.virtual_loss += vl
            path.append(child)
            node = child
            color = 1 - color
            fpu = p.fpu_reduction

    def _repeats(self, ko_hash: int, boards) -> bool:
        """Positional superko for a new position below the root (whose game is `_seen`)."""
        if ko_hash in self._seen:
            return True
        for b in boards:
            if b.ko_hash == ko_hash:
                return True
        return False

    def _expand(self, node: UCTNode, st, ev, min_psa_ratio: float = 0.0) -> float:
        """Create the children of a leaf from its evaluation; returns its value (Black)."""
        color = st.to_move
        stm = float(ev.winrate)
        black = stm if color == BLACK else 1.0 - stm
        candidates = legal_points(st, color)
        restrictions = self._restrictions
        if restrictions is not None and restrictions.has_move_restrictions:
            mn = st.move_num
            allowed = restrictions.is_allowed
            candidates = [v for v in candidates.tolist() if allowed(color, v, mn)]
        allow_pass = pass_allowed(st, len(candidates), stm, self.params.dumbpass)
        self.nodes += node.create_children(candidates, ev.policy, allow_pass, black,
                                           min_psa_ratio)
        return black

    # ------------------------------------------------------------------ root handling
    def _update_root(self, root_state, restrictions) -> None:
        """Reuse the subtree of the new position if possible, else start a fresh tree."""
        self.playouts = 0
        if not self._advance(root_state):
            self.root = UCTNode()
        self._last_state = None
        self.nodes = stats.count_nodes(self.root)
        self._boards_left = MAX_KEPT_BOARDS - _kept_boards(self.root)
        # No "update_root, A -> B nodes" line: only assert builds of LZ 0.17 (Debian's) print
        # it, and Lizzie reads any stderr line with " -> " as a move of dump_stats.

    def _advance(self, new_state) -> bool:
        """Walk the tree from the saved root down the moves played since (LZ's
        advance_to_new_rootstate). False when anything does not match."""
        old, node = self._last_state, self.root
        if old is None or node is None or old.komi != new_state.komi:
            return False
        depth = new_state.move_num - old.move_num
        if depth < 0 or depth >= len(new_state.history):
            return False
        if depth == 0:
            if new_state.board.hash != old.board.hash:
                return False
        else:
            if new_state.history[-1 - depth].hash != old.board.hash:
                return False
            expected = old.to_move
            for color, move in new_state.moves()[-depth:]:
                if color != expected:
                    return False
                child = node.find_child(move)
                if child is None:
                    return False
                node = child
                expected = 1 - expected
            if expected != new_state.to_move:
                return False
        node.status = ACTIVE
        node.virtual_loss = 0
        self.root = node
        return True

    def _prepare_root(self, root_state, color) -> None:
        """Expand the root if needed, inflate all children, remove superko repeats and an
        avoided pass, add Dirichlet noise with -n; prints `NN eval=`."""
        root = self.root
        had_children = root.has_children()
        if (not root.expanded or root.psa_ratio > 0) and root_state.passes < 2:
            ev = self.evaluator.evaluate([root_state])[0]
            black = self._expand(root, root_state, ev)
            if not had_children:
                root.update(black)
        self.log(f"NN eval={root.net_eval_for(color):f}\n")
        root.inflate_all()
        kept = []
        for child in root.children:
            if child.move != PASS:
                st = root_state.copy()
                st.play(color, child.move)
                if st.superko():
                    continue
                if child.board is None and self._boards_left > 0:  # the descents' first step
                    self._boards_left -= 1
                    child.board = st.board
            if child.status == INVALID:
                child.status = ACTIVE
            kept.append(child)
        r = self._restrictions
        if (r is not None and r.has_move_restrictions and len(kept) > 1
                and not r.is_allowed(color, PASS, root_state.move_num)):
            kept = [c for c in kept if c.move != PASS]
        root.children = kept
        self._seen = root_state.seen_positions()
        if self.params.noise:
            self._dirichlet_noise(root)

    def _dirichlet_noise(self, root: UCTNode) -> None:
        p = self.params
        eta = [self.rng.gammavariate(p.dirichlet_alpha, 1.0) for _ in root.children]
        total = sum(eta)
        if total < 1.17549435e-38:
            return
        eps = p.dirichlet_epsilon
        for child, e in zip(root.children, eta):
            child.prior = child.prior * (1 - eps) + eps * (e / total)

    # ------------------------------------------------------------------ reports
    def _snapshot(self, root_state, color, start, move=None) -> SearchResult:
        return stats.snapshot(self.root, color, root_state.move_num, move=move,
                              playouts=self.playouts, nodes=self.nodes,
                              elapsed=time.monotonic() - start,
                              ratio=self.params.lcb_min_visit_ratio)

    def _dump_stats(self, root: UCTNode, color: int) -> None:
        """The ` -> ` lines and the tree statistics (none when the best child is unvisited)."""
        if self.params.quiet:
            return
        lines = stats.dump_stats_lines(root, color, self.params.lcb_min_visit_ratio)
        if lines:
            lines += stats.tree_stats_lines(root)
        for line in lines:
            self.log(line)

    def _log_playouts(self, color) -> None:
        if self.params.quiet:
            return
        root = self.root
        win = 100.0 * root.raw_eval(color) if root.visits else 0.0
        pv = stats.pv_text(stats.principal_variation(root, color, self.params.lcb_min_visit_ratio))
        self.log(f"Playouts: {self.playouts}, Win: {win:5.2f}%, PV: {pv}\n")

    def _finish_think(self, root_state, color, start, nopass, noresign) -> SearchResult:
        """Stats to stderr, the move choice, the explanation, and the state kept for reuse."""
        p = self.params
        root = self.root
        root.sort_children(color, p.lcb_min_visit_ratio)
        self.log("\n")
        self._dump_stats(root, color)
        elapsed = time.monotonic() - start
        elapsed_cs = int(elapsed * 100)
        self.log(f"{root.visits} visits, {self.nodes} nodes, {self.playouts} playouts, "
                 f"{self.playouts * 100.0 / (elapsed_cs + 1):.0f} n/s\n\n")
        # Training data sees the root as sorted above, before random play reorders it.
        record = self._snapshot(root_state, color, start)
        r = self._restrictions
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
        self._restrictions = None
        self.last_result = record
        return record


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


def _backup(path, value: float, vl: int) -> None:
    """Add `value` (Black's side) to every node on the path and take its virtual loss off.

    This repeats UCTNode.update inline on purpose (hot path: every playout, every depth), to
    save a Python method call per node."""
    for node in path:
        n = node.visits
        w = node.black_wins
        old_delta = value - w / n if n > 0 else 0.0
        n += 1
        w += value
        node.visits = n
        node.black_wins = w
        node.m2 += old_delta * (value - w / n)
        node.virtual_loss -= vl


def _kept_boards(root: UCTNode) -> int:
    """How many positions a (reused) tree keeps on its nodes."""
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        for c in node.children:
            if c.board is not None:
                count += 1
            if c.visits:
                stack.append(c)
    return count


def _to_move(state, color: int):
    """A copy of `state` with `color` to move (genmove COLOR may break alternation)."""
    st = state.copy()
    if st.to_move != color:
        st.set_to_move(color)
    return st
