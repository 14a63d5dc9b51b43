"""One node of the search tree: statistics, expansion, the LCB and the move order.

Owns: `UCTNode`, `backup` (its update inlined over a path) and `node_less` (the order Leela
Zero uses to rank root children). PUCT selection is search/select.py's (`select_child`, bound
here as `UCTNode.select_child`; the statuses; `RootSelector`, `ChildScores`;
`forced_visits`), imported here under the names the search has always used. Imports: numpy,
game.coords, search.lcb, search.expansion (a leaf's children) and search.select.
Nodes never call the network: search.py evaluates a batch of leaves and hands each leaf its
policy and value through `create_children` and `update`.

Vocabulary (the AlphaGo Zero paper's, as in minigo's mcts.py):
    N  visits            number of completed playouts through the node
    W  black_wins        sum of the values backed up through it, always from **Black's** view
    Q  W / N             mean value; flipped (1 - Q) for White
    U  c_puct * P * sqrt(Npar * ln(0.015 * Npar + 1.7)) / (1 + N), P the prior (`prior`)
    score = Q + U, with Q replaced by first-play urgency (FPU) for unvisited children.

Children are stored the way Leela Zero stores them: compactly as (vertex, prior) until first
selected, and only then "inflated" into a UCTNode. Because children are sorted by (prior,
vertex) descending and an unvisited, never-selected child's score is FPU + U(prior), the best
uninflated child is always the first one; so the inflated children are exactly a prefix of the
sorted list (`children`) and the rest lives in two compact arrays (`_moves`, `_priors`) of which
only the entry at index len(children) is ever looked at during selection. The root inflates
everything (prepare_root in search.py), after which it may be reordered freely.

Hot path: `update` and `backup` run for every node of every playout (and select.py's
`select_child` for most). They use __slots__, local aliases and no function calls in the
loop; keep them that way.
"""

from __future__ import annotations

import functools
import math
import operator
from array import array

import numpy as np

from leelaz.game.coords import BLACK, PASS, WHITE
from leelaz.search.expansion import children_of
from leelaz.search.lcb import t_quantile
# The statuses and the selectors are search/select.py's; node.py is where the rest of the
# search has always found them.
from leelaz.search.select import (ACTIVE, INVALID, KEPT_SCORES_CHILDREN,  # noqa: F401
                                  PRUNED, ChildScores, RootSelector, child_score,
                                  child_scores, forced_visits, select_child)

#: Welford's M2 starts here rather than at 0 (as in Leela Zero), so the variance is never 0.
M2_START = 1e-4

_EMPTY_MOVES = array("h")
_EMPTY_PRIORS = array("f")


class UCTNode:
    """A position reached by `move` from its parent, with Leela Zero's statistics."""

    __slots__ = ("move", "prior", "visits", "black_wins", "virtual_loss", "net_eval", "status",
                 "m2", "expanded", "psa_ratio", "children", "_moves", "_priors", "board")

    def __init__(self, move: int = PASS, prior: float = 0.0) -> None:
        self.move = move  # vertex played to get here (PASS for a fresh root)
        self.prior = prior  # P: renormalised policy (possibly noised at the root)
        self.visits = 0  # N
        self.black_wins = 0.0  # W, from Black's side
        self.virtual_loss = 0  # pending virtual visits (virtual_loss per pending playout)
        self.net_eval = 0.5  # the network's value of this position, Black's side
        self.status = ACTIVE
        self.m2 = M2_START  # Welford's running sum of squared deviations
        self.expanded = False  # create_children has run (terminal nodes never expand)
        self.psa_ratio = 2.0  # children with prior < psa_ratio * max prior are left out; 0 = all
        self.children: list[UCTNode] = []  # inflated children: a prefix of the sorted list
        self._moves = _EMPTY_MOVES  # vertices of all children, sorted; emptied once all inflated
        self._priors = _EMPTY_PRIORS  # their priors (float32, like LZ)
        self.board = None  # the position after `move`, kept by the search (or None)

    # ------------------------------------------------------------------ statistics
    def update(self, value: float) -> None:
        """Back up one playout's value (Black's side): N += 1, W += v, Welford's M2.
        `backup` below repeats this inline for whole paths (hot path)."""
        n = self.visits
        w = self.black_wins
        old_delta = value - w / n if n > 0 else 0.0
        n += 1
        w += value
        self.visits = n
        self.black_wins = w
        self.m2 += old_delta * (value - w / n)

    def raw_eval(self, color: int) -> float:
        """Q for `color`, ignoring virtual loss (needs visits > 0)."""
        q = self.black_wins / self.visits
        return q if color == BLACK else 1.0 - q

    def eval_with_vl(self, color: int) -> float:
        """Q for `color` counting each pending virtual visit as a loss for that colour."""
        vl = self.virtual_loss
        total = self.visits + vl
        w = self.black_wins + (vl if color == WHITE else 0)
        q = w / total
        return q if color == BLACK else 1.0 - q

    def net_eval_for(self, color: int) -> float:
        return self.net_eval if color == BLACK else 1.0 - self.net_eval

    def variance(self, default: float = 0.0) -> float:
        return self.m2 / (self.visits - 1) if self.visits > 1 else default

    def lcb(self, color: int) -> float:
        """Lower confidence bound of Q: Q - t(N-1) * sqrt(var / N); -1e6 + N below 2 visits."""
        n = self.visits
        if n < 2:
            return -1e6 + n
        stddev = math.sqrt(self.m2 / (n - 1) / n)
        return self.raw_eval(color) - t_quantile(n - 1) * stddev

    def valid(self) -> bool:
        return self.status != INVALID

    # ------------------------------------------------------------------ children
    def has_children(self) -> bool:
        return bool(self.children) or len(self._moves) > 0

    def child_count(self) -> int:
        """All children, inflated or not."""
        return len(self._moves) if self._moves else len(self.children)

    def create_children(self, candidates, policy, allow_pass: bool, net_eval_black: float,
                        min_psa_ratio: float = 0.0) -> int:
        """Expand with the legal `candidates` (vertices) and the network's `policy` (362 slots).

        Pass joins the candidates when `allow_pass`. Priors are renormalised over the
        candidates (evenly when they sum below FLT_MIN) and the children are sorted by
        (prior, vertex) descending: equal priors put the higher vertex first, pass last.
        Under memory pressure (`min_psa_ratio` > 0) children with a prior below
        min_psa_ratio * the best prior are left out; expanding again later with a lower
        ratio appends the missing ones (they sort after every existing child). Returns the
        number of children created (LZ's node count).
        """
        moves, priors = children_of(candidates, policy, allow_pass)  # search/expansion.py
        self.net_eval = net_eval_black
        if not len(moves):
            self.expanded = True
            self.psa_ratio = 0.0
            return 0
        if not self.expanded and min_psa_ratio <= 0.0:  # the usual case: keep everything
            self._moves = array("h", moves.tobytes())
            self._priors = array("f", priors.tobytes())
            self.children = []
            self.expanded = True
            self.psa_ratio = 0.0
            return len(moves)
        new_min = priors[0] * np.float32(min_psa_ratio)
        keep = priors >= new_min if new_min > 0 else np.ones(len(moves), dtype=bool)
        if self.expanded:  # a second, deeper expansion: only what is still missing
            keep &= priors < priors[0] * np.float32(self.psa_ratio)
            present = set(self.children_moves())
            keep &= np.array([int(m) not in present for m in moves], dtype=bool)
        skipped = bool(new_min > 0 and (priors < new_min).any())
        added = int(keep.sum())
        if self.expanded:
            if added:
                self._append(moves[keep], priors[keep])
        else:
            self._moves = array("h", moves[keep].tobytes())
            self._priors = array("f", priors[keep].tobytes())
            self.children = []
            self.expanded = True
        self.psa_ratio = min_psa_ratio if skipped else 0.0
        return added

    def adopt_children(self, moves: array, priors: array, net_eval_black: float) -> None:
        """Take children made for this leaf elsewhere (expansion.expand_batch): compact arrays
        already renormalised and sorted as `create_children` would have them."""
        self.net_eval = net_eval_black
        self.expanded = True
        self.psa_ratio = 0.0
        if moves:
            self._moves = moves
            self._priors = priors
            self.children = []

    def children_moves(self) -> list[int]:
        """Vertices of all children (inflated or not), in order."""
        return list(self._moves) if self._moves else [c.move for c in self.children]

    def _append(self, moves, priors) -> None:
        """Add compact children after the existing ones (they have the lowest priors)."""
        if not self._moves and self.children:  # all inflated: rebuild the compact arrays
            self._moves = array("h", [c.move for c in self.children])
            self._priors = array("f", [c.prior for c in self.children])
        self._moves = self._moves + array("h", moves.tobytes())
        self._priors = self._priors + array("f", priors.tobytes())

    def inflate_all(self) -> None:
        """Turn every compact child into a node (the root needs them all)."""
        moves, priors, children = self._moves, self._priors, self.children
        for i in range(len(children), len(moves)):
            children.append(UCTNode(moves[i], priors[i]))
        self._moves = _EMPTY_MOVES
        self._priors = _EMPTY_PRIORS

    def _inflate_next(self) -> UCTNode:
        i = len(self.children)
        child = UCTNode(self._moves[i], self._priors[i])
        self.children.append(child)
        if i + 1 == len(self._moves):
            self._moves = _EMPTY_MOVES
            self._priors = _EMPTY_PRIORS
        return child

    def find_child(self, move: int) -> UCTNode | None:
        """The child for `move`, inflating it (and those before it) if needed."""
        for child in self.children:
            if child.move == move:
                return child
        moves = self._moves
        for i in range(len(self.children), len(moves)):
            if moves[i] == move:
                while len(self.children) <= i:
                    self._inflate_next()
                return self.children[i]
        return None

    #: PUCT selection (hot path), search/select.py: bound here so that a descent calls it
    #: as a method with no call in between.
    select_child = select_child

    # ------------------------------------------------------------------ move choice
    def best_child(self, color: int, lcb_min_visit_ratio: float = 0.10) -> UCTNode | None:
        """The first maximum of the LZ order among inflated children (std::max_element).

        Hot path (the root's ~360 children, at every snapshot and principal variation): a
        child with visits beats any without (node_less: fewer visits is worse, unless both
        are above the LCB threshold, which is at least 2), and one without never replaces
        one with, so the loop over every child ends on the loop over the visited ones alone
        (tests/test_node.py compares the two)."""
        children = self.children
        if not children:
            return None
        visited = [c for c in children if c.visits]
        if visited:
            children = visited
        max_visits = max(c.visits for c in children)
        threshold = max(2.0, lcb_min_visit_ratio * max_visits)
        best = children[0]
        for c in children[1:]:
            if node_less(best, c, color, threshold):
                best = c
        return best

    def sort_children(self, color: int, lcb_min_visit_ratio: float = 0.10) -> None:
        """Sort the (fully inflated) children best first, stably, by `node_less`."""
        children = self.children
        if not children:
            return
        max_visits = max(c.visits for c in children)
        threshold = max(2.0, lcb_min_visit_ratio * max_visits)

        def cmp(a, b):
            if node_less(a, b, color, threshold):
                return -1
            if node_less(b, a, color, threshold):
                return 1
            return 0
        # A child without visits is worse than any with visits, and two without visits
        # compare by prior alone (node_less); so those (most of a root's children) are sorted
        # apart by their prior, in C, and go last: the same order, stable as before
        # (tests/test_node.py), for far fewer node_less calls once a move is chosen.
        visited = [c for c in children if c.visits]
        visited.sort(key=functools.cmp_to_key(cmp), reverse=True)
        if len(visited) < len(children):
            fresh = [c for c in children if not c.visits]
            fresh.sort(key=_prior, reverse=True)
            visited += fresh
        children[:] = visited


_prior = operator.attrgetter("prior")


def backup(path, value: float, vl: int) -> None:
    """Add `value` (Black's side) to every node on the path and take its virtual loss off.

    This repeats UCTNode.update inline on purpose (hot path: every playout, every depth), to
    save a Python method call per node; tests/test_node.py keeps the two equal."""
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


def node_less(a: UCTNode, b: UCTNode, color: int, threshold: float) -> bool:
    """Leela Zero's NodeComp: is `a` worse than `b` for `color`?

    Both above `threshold` visits and different LCBs: lower LCB is worse. Otherwise fewer
    visits is worse; with no visits, lower prior; with equal visits, lower Q (with virtual loss).
    """
    na, nb = a.visits, b.visits
    if na > threshold and nb > threshold:
        la, lb = a.lcb(color), b.lcb(color)
        if la != lb:
            return la < lb
    if na != nb:
        return na < nb
    if na == 0:
        return a.prior < b.prior
    return a.eval_with_vl(color) < b.eval_with_vl(color)
