"""Time management: the thinking budget and the early stop (LZ's have_alternate_moves,
prune_noncontenders and est_playouts_left; UCTSearch::think).

Owns: `budget_cs`, `playouts_left`, `prune_noncontenders`, `count_noncontenders`,
`two_contenders_by_visits`, `EarlyStop` (with `have_alternate_moves`).
Imports: game.coords, search.lcb, search.node, search.params. What it reads of a search run
(`run`: search/run.py's SearchRun and its `Limits`) it is handed; run.py imports this module,
never the other way.

Modes (--timemanage): `off` never stops early and spreads the clock over 72 moves instead of
40; `on` prunes root children that cannot catch up and stops when one contender is left
(unless time cannot be banked, or a playout limit is set); `fast` stops then even so;
`no_pruning` (self-play with -n) only counts the non-contenders, so the visit distribution of
the training data is not biased, and still stops early.
"""

from __future__ import annotations

import math
from typing import Callable

from leelaz.game.coords import BLACK
from leelaz.search.lcb import t_quantile
from leelaz.search.node import ACTIVE, INVALID, PRUNED, UCTNode
from leelaz.search.params import UNLIMITED, SearchParams


def budget_cs(params: SearchParams, state, color: int, tc, time_limit_cs: int | None) -> int:
    """Centiseconds to think: the explicit limit, else the clock's budget, else unlimited."""
    if time_limit_cs is not None:
        return time_limit_cs
    if tc is None:
        return UNLIMITED
    return tc.max_time_for_move(state.move_num, color, lagbuffer_cs=params.lagbuffer_cs,
                                timemanage=params.effective_timemanage() != "off")


def playouts_left(run, limits, elapsed_cs: int) -> int:
    """Playouts the run can still make: the limits, and after 1 s and 100 playouts the
    measured rate times the time left."""
    playouts = run.playouts
    left = max(0, min(limits.playouts - playouts, limits.visits - run.root.visits))
    if elapsed_cs >= 100 and playouts >= 100:
        rate = playouts / elapsed_cs
        left = min(left, math.ceil(rate * max(0, limits.budget_cs - elapsed_cs)))
    return left


def prune_noncontenders(root: UCTNode, color: int, left: int, prune: bool) -> int:
    """Mark root children that cannot become the best move PRUNED (unless `prune` is
    False, as in no_pruning mode); returns how many there are. A child is a contender if
    it has at least (most visits - `left`) visits, or a Q at least the best LCB. Runs
    after every batch, so the loops are inlined (hot path with fast evaluators)."""
    children = root.children
    white = color != BLACK
    n_first, lcb_max = _contention(children, white)
    min_required = n_first - left
    pruned = 0
    for c in children:
        status = c.status
        if status == INVALID:
            continue
        n = c.visits
        if n >= min_required:
            contender = True
        elif n:
            q = c.black_wins / n
            contender = (1.0 - q if white else q) >= lcb_max
        else:
            contender = False
        if not contender:
            pruned += 1
        if prune:
            new = ACTIVE if contender else PRUNED
            if new != status:
                c.status = new
    return pruned


def count_noncontenders(touched, untouched: int, color: int, left: int) -> int:
    """`prune_noncontenders(root, color, left, prune=False)` without a loop over every
    child: `touched` holds every root child that may have visits or be INVALID (the
    RootSelector's touched children), and `untouched` more children are valid and have no
    visits (so each is a non-contender exactly when a child with no visits is one). The
    same count, from the same comparisons (tests/test_timemanage.py): in no_pruning mode
    (self-play) the full loop over 300 children after every batch was a tenth of the
    search's time, and most children are never visited. Hot path."""
    white = color != BLACK
    n_first, lcb_max = _contention(touched, white)
    min_required = n_first - left
    pruned = untouched if 0 < min_required else 0
    for c in touched:
        if c.status == INVALID:
            continue
        n = c.visits
        if n >= min_required:
            continue
        if n:
            q = c.black_wins / n
            if (1.0 - q if white else q) >= lcb_max:
                continue
        pruned += 1
    return pruned


def two_contenders_by_visits(children, left: int) -> bool:
    """Whether two valid `children` have at least (most visits - `left`) visits each, the
    most being that of `children`, which must hold every root child with visits (the root
    selector's touched ones). Then prune_noncontenders counts at most len(root.children) - 2
    non-contenders, whatever the LCBs: the search goes on, and the LCBs (a t quantile and a
    square root per visited child, after every batch) need not be worked out."""
    first = second = 0
    for c in children:
        n = c.visits
        if n > second and c.status != INVALID:
            if n > first:
                first, second = n, first
            else:
                second = n
    return second > 0 and second >= first - left


def _contention(children, white: bool) -> tuple[int, float]:
    """(the most visits of a valid child, the best LCB of the valid children with at least
    two visits, from 0): what a child must reach to stay a contender."""
    sqrt = math.sqrt
    lcb_max = 0.0
    n_first = 0
    for c in children:
        if c.status == INVALID:
            continue
        n = c.visits
        if n:
            if n > n_first:
                n_first = n
            if n >= 2:
                q = c.black_wins / n
                if white:
                    q = 1.0 - q
                lcb = q - t_quantile(n - 1) * sqrt(c.m2 / (n - 1) / n)
                if lcb > lcb_max:
                    lcb_max = lcb
    return n_first, lcb_max


class EarlyStop:
    """The early-stop check of one search (LZ's have_alternate_moves), with a fast path:
    while even a child with every root visit could be caught up (root visits - 1 <= the
    playouts left), nothing can be pruned, so the per-child loops are skipped, unless an
    earlier check pruned something that may need reactivating."""

    def __init__(self, mode: str, log: Callable[[str], None]):
        self.mode = mode
        self.log = log
        self.pruned_some = False

    def keep_searching(self, run, limits, elapsed_cs: int) -> bool:
        """Whether `run` should go on after a batch, `elapsed_cs` into its budget."""
        if self.mode == "off":
            return True
        left = playouts_left(run, limits, elapsed_cs)
        if run.root.visits - 1 <= left and not self.pruned_some:
            return True
        return self.have_alternate_moves(run, limits, elapsed_cs, left)

    def have_alternate_moves(self, run, limits, elapsed_cs: int, left: int) -> bool:
        """False when the search should stop early: at most one contender is left and the
        time saved can be banked (or the mode is `fast`). Prints `%.1fs left, stopping
        early.` when that saves more than half a second."""
        root, color = run.root, run.color
        prune = self.mode != "no_pruning"
        selector = run.root_selector
        if prune or selector is None:
            pruned = prune_noncontenders(root, color, left, prune)
        else:  # counted from the children the root's selection has touched
            touched = selector.touched_children()
            if two_contenders_by_visits(touched, left):
                return True  # nothing was pruned: pruned_some stays False
            pruned = count_noncontenders(touched, selector.untouched_left(), color, left)
        return self.decide(run, limits, elapsed_cs, pruned)

    def decide(self, run, limits, elapsed_cs: int, pruned: int) -> bool:
        """have_alternate_moves once the non-contenders are counted (`pruned`; the compiled
        core counts them on its arrays, core/kernels.root_contention)."""
        mode, color = self.mode, run.color
        self.pruned_some = mode != "no_pruning" and pruned > 0
        if pruned < len(run.root.children) - 1:
            return True
        tc = run.root_state.time_control
        cannot_bank = tc is not None and not tc.can_accumulate_time(color)
        if (cannot_bank or limits.playouts < UNLIMITED) and mode != "fast":
            return True
        budget = limits.budget_cs
        if budget - elapsed_cs > 50:
            self.log(f"{(budget - elapsed_cs) / 100.0:.1f}s left, stopping early.\n")
        return False
