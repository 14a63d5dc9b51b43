"""Dynamic komi inside a search: the positions collected, the trigger between batches, and the
trial evaluations (docs/dynamic-komi.md §3.1-3.3, §3.7, §4).

Owns: `DynamicKomi`, the search's companion object when `--handicap` or `--nonslack` is on
(UCTSearch.dynamic_komi; None otherwise, and the search is Leela Zero 0.17's). Imports:
game.coords, config, search.dynkomi (the pure algorithm), search.node, search.root.

The seams with a search call (search/search.py, search/run.py):
- `start_run(run, limits)` after the root is prepared: drop the records that do not descend
  from the root, fix an invalid root's value, adjust at once if pondering left enough
  positions, print `komi=`/`opp_komi=`, and hook `between_batches` onto the run;
- `symmetries(n, rng)`: the symmetry of each leaf of a batch (random, or --fixed-symmetry),
  chosen here so that a collected position can be re-evaluated under its own symmetry;
- `take_leaves(...)`: a batch's new leaves, recorded while `collecting` (at most A per colour,
  --adj-positions); those --pos/--neg make invalid are expanded but not backed up, and with
  sure backup they owe their ancestors updates (`owe`, `pay_debts`);
- `between_batches(run)`: the trigger of §3.2 and, when it may run, the adjustment:
  `adjust(root_state, white_wr, evaluate)` (§3.3 steps 5-8 and §3.6) keeps the N positions
  per colour nearest their mean, fits the komi at both turns with one batched network call
  per trial komi (cache neither read nor written) and sets it on the root state; the run then
  gets a new tree, prepared at the new komi, and the caller's state keeps the komi.
The NN cache is keyed by komi (nn/network.cache_key), so it need not be emptied.
"""

from __future__ import annotations

import random
import time
from typing import Callable, Sequence

from leelaz.config import DynKomiParams
from leelaz.game.coords import BLACK, WHITE
from leelaz.search import dynkomi
from leelaz.search.node import UCTNode
from leelaz.search.root import kept_boards

#: evaluate(states, symmetries) -> the side to move's winrate of each state.
TrialEvaluate = Callable[[Sequence, Sequence[int]], Sequence[float]]


class _Record:
    """A collected leaf: its position (with history), its symmetry, its side-to-move winrate."""

    __slots__ = ("state", "symmetry", "winrate")

    def __init__(self, state, symmetry: int, winrate: float):
        self.state, self.symmetry, self.winrate = state, symmetry, winrate


class DynamicKomi:
    """Collection, trigger and adjustment state for one engine (see module doc)."""

    def __init__(self, params: DynKomiParams, log: Callable[[str], None]):
        self.params = params
        self.log = log
        self.records: tuple[list[_Record], list[_Record]] = ([], [])  # by colour to move
        self.collecting = False
        self.adjustments = 0  # in this search
        self.may_adjust_again = True  # False once > 3A playouts were in range (genmove)
        #: This call's limits: (budget_cs, playouts cap) for genmove, None for lz-analyze,
        #: "collect" while pondering (collects, never adjusts).
        self.limits = "collect"
        #: Sure backup (§4): id(node) -> playouts owed by an invalid leaf, paid to it and its
        #: ancestors by the next valid value backed up through it.
        self.debts: dict[int, int] = {}

    # ---------------------------------------------------------------- per batch
    def symmetries(self, count: int, rng: random.Random) -> list[int]:
        s = self.params.fixed_symmetry
        if 0 <= s <= 7:
            return [s] * count
        return [rng.randrange(8) for _ in range(count)]

    def take_leaves(self, leaves, evals, symmetries, leaf_kind) -> set[int]:
        """A batch's leaves ((path, state, kind), their evaluations, their symmetries): record
        the new ones while collecting; returns the indices of the invalid ones, which owe."""
        fresh = [i for i, (_, _, kind) in enumerate(leaves) if kind == leaf_kind]
        if self.collecting and symmetries is not None:
            self.record([leaves[i][1] for i in fresh], [symmetries[i] for i in fresh],
                        [float(evals[i].winrate) for i in fresh])
        bad = {i for i in fresh if self.invalid(leaves[i][1])}
        for i in bad:
            self.owe(leaves[i][0][-1])
        return bad

    def record(self, states, symmetries, winrates) -> None:
        """Keep the batch's new leaves while collecting, up to A per colour."""
        if not self.collecting:
            return
        cap = self.params.adj_positions
        for state, s, w in zip(states, symmetries, winrates):
            kept = self.records[state.to_move]
            if len(kept) < cap:
                kept.append(_Record(state, s, w))

    def invalid(self, state) -> bool:
        p = self.params
        if not (p.pos or p.neg):
            return False
        return dynkomi.invalid(state.to_move == BLACK, state.stm_komi, state.opp_komi,
                               p.pos, p.neg)

    def owe(self, node) -> None:
        """An invalid new leaf took no visit; with sure backup, the next valid value through
        it is credited once more to each of its ancestors (not to itself)."""
        if self.params.sure_backup:
            self.debts[id(node)] = self.debts.get(id(node), 0) + 1

    def pay_debts(self, path, value: float) -> int:
        """After `value` was backed up along `path` (root first): the extra updates that
        sure backup owes. With invalid N1..N(m-1) newly expanded above a valid Nm, each older
        ancestor gets m updates in all and Ni gets m - i (§7, T9). Returns the playouts added."""
        owed = 0
        paid = 0
        for node in reversed(path):
            for _ in range(owed):
                node.update(value)
            debt = self.debts.pop(id(node), 0)
            owed += debt
            paid += debt
        return paid

    # ---------------------------------------------------------------- around a search
    def begin(self, root_state) -> None:
        """A search starts: drop the records that do not descend from the root (§3.3 step 4)
        and reset the per-search counters."""
        self.adjustments = 0
        self.may_adjust_again = True
        self.collecting = False
        self.debts.clear()
        depth = len(root_state.history) - 1
        key = root_state.board.ko_hash
        for colour in (BLACK, WHITE):
            kept = [r for r in self.records[colour]
                    if len(r.state.history) > depth
                    and r.state.history[depth].ko_hash == key
                    and r.state.net_komi == root_state.net_komi]
            self.records[colour][:] = kept

    def has_enough_records(self) -> bool:
        """Enough positions (from pondering) to adjust before searching (§3.3 step 6)."""
        a = self.params.adj_positions
        return all(len(self.records[c]) >= a for c in (BLACK, WHITE))

    def end(self) -> None:
        self.collecting = False

    # ---------------------------------------------------------------- a search call
    def start_run(self, run, limits) -> None:
        """After the run's root is prepared (see module doc)."""
        self.begin(run.root_state)
        self.limits = limits
        self._root_value(run)
        if limits != "collect" and self.has_enough_records() and run.root.visits:
            self._adjust(run)
        self.show(run.root_state)
        run.between_batches = self.between_batches

    def between_batches(self, run) -> None:
        """The trigger after a batch, and the adjustment when it may run now."""
        root = run.root
        white_wr = root.raw_eval(WHITE) if root.visits else 0.5
        elapsed_cs = int((time.monotonic() - run.start) * 100)
        budget, cap = self.limits if isinstance(self.limits, tuple) else (None, None)
        if not self.check(white_wr, root.visits, run.root_state, run.playouts, elapsed_cs,
                          budget, cap) or self.limits == "collect":
            return
        run.drain()  # the batch in flight belongs to the old komi
        self._adjust(run)
        self.show(run.root_state)

    def _adjust(self, run) -> bool:
        """Adjust; on a change the caller's state keeps the komi and the run gets a new tree,
        prepared at the new komi."""
        root = run.root
        white_wr = root.raw_eval(WHITE) if root.visits else 0.5

        def trial_winrates(states, symmetries):
            evals = run.evaluator.evaluate(states, symmetry=list(symmetries),
                                           read_cache=False, write_cache=False)
            return [float(ev.winrate) for ev in evals]

        if not self.adjust(run.root_state, white_wr, trial_winrates):
            return False
        self.debts.clear()
        if run.caller_state is not None:
            run.caller_state.net_komi = run.root_state.net_komi
        run.boards_left += kept_boards(root)
        run.root = UCTNode()
        run.nodes = 0
        run.prepare()
        self._root_value(run)
        return True

    def _root_value(self, run) -> None:
        """A fresh root whose own value --pos/--neg discards takes 1 - W of the position
        after its first child's move instead (all 8 symmetries averaged, or the fixed one;
        the cache is not read), as the fork does (§3.3 step 1)."""
        root, root_state = run.root, run.root_state
        if root.visits != 1 or not root.children or not self.invalid(root_state):
            return
        child = root_state.copy()
        child.play(run.color, root.children[0].move)
        s = self.params.fixed_symmetry
        ev = run.evaluator.evaluate([child], symmetry=s if 0 <= s <= 7 else "average",
                                    read_cache=False)[0]
        own = 1.0 - float(ev.winrate)
        black = own if run.color == BLACK else 1.0 - own
        root.black_wins = black
        root.net_eval = black
        root.m2 = 0.0

    def check(self, white_wr: float, root_visits: int, root_state, playouts: int,
              elapsed_cs: int, budget_cs: int | None, playouts_cap: int | None) -> bool:
        """After a batch (§3.2): True when an adjustment should run now. budget_cs and
        playouts_cap None: lz-analyze, without the time, playout and 3A conditions."""
        p = self.params
        if not dynkomi.out_of_range(p, white_wr, root_visits, root_state.stm_komi,
                                    root_state.opp_komi):
            self.collecting = False  # the records are kept
            if budget_cs is not None and playouts > 3 * p.adj_positions:
                self.may_adjust_again = False
            return False
        self.collecting = True
        if self.adjustments >= p.num_adj or not self.may_adjust_again:
            return False
        if budget_cs is not None and not (elapsed_cs * 2 < budget_cs
                                          and playouts * 2 < playouts_cap):
            return False
        return self.has_enough_records()

    # ---------------------------------------------------------------- the adjustment
    def adjust(self, root_state, white_wr: float, evaluate: TrialEvaluate) -> bool:
        """Fit the komi at both turns and set it on `root_state` (§3.3 steps 5-8, §3.6).
        Returns True when it changed (the caller discards the tree). Counts as one
        adjustment whether or not the komi moved; the records are dropped."""
        p = self.params
        self.adjustments += 1
        own_colour = root_state.to_move
        for colour, name in ((BLACK, "black"), (WHITE, "white")):
            self.log(f"{name} positions: {len(self.records[colour])}\n")
        keep = p.kept_positions
        kept = []
        for colour in (BLACK, WHITE):
            recs = self.records[colour]
            chosen = dynkomi.closest([r.winrate for r in recs], keep)
            kept.append([recs[i] for i in chosen])
        self.log(f"keeping {p.adj_pct:f}% closest evals: {len(kept[BLACK])} black, "
                 f"{len(kept[WHITE])} white\n")
        k0, o0 = root_state.stm_komi, root_state.opp_komi
        own = _curve(kept[own_colour], own_colour, k0, evaluate)
        opp = _curve(kept[1 - own_colour], 1 - own_colour, o0, evaluate)
        black_root = own_colour == BLACK

        def invalid_own(stm: float, other: float) -> bool:
            return dynkomi.invalid(black_root, stm, other, p.pos, p.neg)

        def invalid_opp(stm: float, other: float) -> bool:
            return dynkomi.invalid(not black_root, stm, other, p.pos, p.neg)

        stm, opp_komi, changed = dynkomi.fit_komis(own, opp, k0, o0, white_wr, p,
                                                   invalid_own=invalid_own,
                                                   invalid_opp=invalid_opp, log=self.log)
        for recs in self.records:
            recs.clear()
        self.collecting = False
        if changed:
            root_state.set_net_komi(stm, opp_komi)
            self.log(f"Dynamic komi: adjusted after {white_wr * 100:.1f}% for White: "
                     f"komi {k0:f} -> {stm:f}, opp_komi {o0:f} -> {opp_komi:f}\n")
        return changed

    def show(self, root_state) -> None:
        """The lines Lizzie reads (`komi=`, `opp_komi=`), at every root preparation."""
        self.log(f"komi={root_state.stm_komi:f}\nopp_komi={root_state.opp_komi:f}\n")


def _curve(records: list[_Record], colour: int, current: float,
           evaluate: TrialEvaluate) -> dynkomi.Curve:
    """E(k) over `records` (positions with `colour` to move): White's mean winrate when the
    network is told komi k at their turns. The current komi reuses the collected values; each
    other komi is one batched evaluation of all the records, under their own symmetries."""
    memo: dict[float, float] = {}

    def white(stm_mean: float) -> float:
        return 1.0 - stm_mean if colour == BLACK else stm_mean

    if records:
        memo[current] = white(sum(r.winrate for r in records) / len(records))

    def curve(k: float) -> float:
        if k not in memo:
            if not records:
                return 0.5
            states = []
            for r in records:
                trial = r.state.copy()
                trial.set_net_komi(k, r.state.opp_komi)
                states.append(trial)
            winrates = evaluate(states, [r.symmetry for r in records])
            memo[k] = white(sum(winrates) / len(winrates))
        return memo[k]

    return curve
