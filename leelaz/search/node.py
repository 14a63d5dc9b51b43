"""One node of the search tree: statistics, PUCT selection, expansion and the LCB.

Owns: `UCTNode`, the node statuses ACTIVE / PRUNED / INVALID, `node_less` (the order
Leela Zero uses to rank root children), `RootSelector` (the same selection at the root,
faster) and `ChildScores` (the same selection at a big inner node within one collection).
Imports: numpy, game.coords, search.lcb and search.expansion (a leaf's children).
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

Hot path: `select_child` and `update` run for every node of every playout. They use __slots__,
local aliases and no function calls in the loop; keep them that way.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
from array import array

import numpy as np

from leelaz.game.coords import BLACK, PASS, WHITE
from leelaz.search.expansion import children_of
from leelaz.search.lcb import t_quantile

ACTIVE = 0
PRUNED = 1  # skipped by selection (root only, time management); still counts as valid
INVALID = 2  # a superko repetition: never selected, not counted

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

    def select_child(self, color: int, fpu_reduction: float, c_puct: float, log_puct: float,
                     log_const: float, dynamic_fpu: bool = False) -> UCTNode | None:
        """PUCT selection (hot path). Assumes the node has children.

        Npar is the sum of the valid children's visits, Pv the prior mass of the visited ones;
        FPU = net value for `color` - fpu_reduction * sqrt(Pv). A child waiting for its network
        evaluation (N = 0 with virtual loss) scores -1 - fpu_reduction + U, so another leaf is
        preferred. The first strictly best score wins, in child order. None when no child
        is ACTIVE. `dynamic_fpu` (the dynamic-komi modes): the FPU starts from this node's
        running mean instead of its network value, once it has visits.
        """
        children = self.children
        parent_visits = 0
        visited_policy = 0.0
        for c in children:
            if c.status != INVALID:
                n = c.visits
                if n:
                    parent_visits += n
                    visited_policy += c.prior
        numerator = math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
        cn = c_puct * numerator
        base = self.black_wins / self.visits if dynamic_fpu and self.visits else self.net_eval
        fpu = base if color == BLACK else 1.0 - base
        fpu -= fpu_reduction * math.sqrt(visited_policy)
        white = color == WHITE
        best = None
        best_score = -1e300
        for c in children:
            if c.status:  # PRUNED or INVALID
                continue
            n = c.visits
            vl = c.virtual_loss
            if n:
                q = (c.black_wins + (vl if white else 0)) / (n + vl)
                if white:
                    q = 1.0 - q
            elif vl:
                q = -1.0 - fpu_reduction
            else:
                q = fpu
            score = q + cn * c.prior / (1 + n)
            if score > best_score:
                best_score = score
                best = c
        i = len(children)
        if i < len(self._moves) and fpu + cn * self._priors[i] > best_score:
            best = self._inflate_next()
        return best

    # ------------------------------------------------------------------ move choice
    def best_child(self, color: int, lcb_min_visit_ratio: float = 0.10) -> UCTNode | None:
        """The first maximum of the LZ order among inflated children (std::max_element)."""
        children = self.children
        if not children:
            return None
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


def forced_visits(prior: float, total: int, k: float) -> float:
    """KataGo's forced playouts (Wu, "Accelerating Self-Play Learning in Go", 2019, section
    3.1): the visits a root child with (noised) prior `prior` is owed when the root's children
    hold `total` visits. Self-play's target pruning removes them again (selfplay/targets.py)."""
    return math.sqrt(k * prior * total)


class RootSelector:
    """PUCT selection at the root without scoring every child at every selection (hot path).

    The root has all its children inflated (often 300+), and most of them have never been
    selected: no visits and no pending virtual loss. All of those score FPU + U(prior), so the
    best of them is simply the untouched child with the highest prior (the earliest on a tie).
    This keeps the touched children (in child order) apart from the untouched ones (sorted by
    prior, then order), so one selection costs O(touched) instead of O(children), with exactly
    the choices `UCTNode.select_child` makes. Valid for one search: build it after the root
    is prepared, and only the selector may select at the root while it lives.

    The sums PUCT needs are kept rather than recounted: every playout backs up through the
    root and one of its children, so Npar (the valid children's visits) stays root visits minus
    a constant; Pv (the visited children's prior mass) changes only when a child gets its first
    visit, and is then summed again in child order, so it is the same float as a recount.

    The touched children's scores are kept too. Between the descents that collect one batch,
    the only root child whose score can change is the one selected last (its virtual loss
    goes on, or off again after a collision), so only that one is scored again, and the best
    is a C-level max. A backup during the collection (a terminal leaf) changes the root's
    visits, which rescores everything. The search calls `forget_scores` before each
    collection: in between, backups, re-expansions and time management's pruning change
    children that were not selected last.
    """

    __slots__ = ("touched", "nodes", "untouched", "start", "offset", "fresh", "policy",
                 "scores", "scored_for", "last", "terms")

    def __init__(self, root: UCTNode):
        touched = []
        untouched = []
        for i, c in enumerate(root.children):
            if c.visits or c.virtual_loss or c.status == INVALID:
                touched.append((i, c))
            else:
                untouched.append((-c.prior, i, c))
        untouched.sort(key=lambda t: (t[0], t[1]))
        self.touched = touched  # (order, child), in child order
        self.nodes = [c for _, c in touched]  # the same children, alone
        self.untouched = untouched  # (-prior, order, child), best first
        self.start = 0  # untouched[:start] have been selected (moved to touched)
        valid = sum(c.visits for c in root.children if c.status != INVALID)
        self.offset = root.visits - valid  # Npar = root.visits - offset
        self.fresh = [c for _, c in touched if not c.visits]  # touched, not visited yet
        self.policy = self._visited_policy()  # Pv
        self.scores: list[float] = []  # score of each touched child, -inf if not ACTIVE
        self.scored_for = None  # the arguments and root visits the scores were made for
        self.last = -1  # index in touched of the child selected last
        self.terms = (0.0, 0.0, 0.0, False)  # fpu, c_puct * numerator, reduction, white

    def _visited_policy(self) -> float:
        total = 0.0
        for _, c in self.touched:
            if c.visits and c.status != INVALID:
                total += c.prior
        return total

    def forget_scores(self) -> None:
        """Score every touched child again at the next selection."""
        self.scored_for = None

    def touched_children(self) -> list[UCTNode]:
        """The root children ever selected, or with visits, virtual loss or INVALID when the
        selector was made: every child that can have visits or be INVALID (the others have
        neither: only a selected child is visited, or found to repeat a position)."""
        return self.nodes

    def untouched_left(self) -> int:
        """How many root children are not among `touched_children`."""
        return len(self.untouched) - self.start

    def forced_child(self, k: float, virtual_loss: int) -> UCTNode | None:
        """The first visited, active root child (in child order) whose visits, pending ones
        counted, are below `forced_visits` of its prior; None when none is owed any. Only
        children already visited are forced (KataGo forces created children, not new ones).
        Selecting outside `select` changes a child `select` did not pick last, so the kept
        scores are forgotten."""
        nodes = self.nodes
        total = 0
        for c in nodes:
            if c.status != INVALID:
                total += c.visits
        for c in nodes:
            pending = c.virtual_loss / max(1, virtual_loss)
            if c.visits and c.status == ACTIVE and \
                    c.visits + pending < forced_visits(c.prior, total, k):
                self.scored_for = None
                return c
        return None

    def select(self, node: UCTNode, color: int, fpu_reduction: float, c_puct: float,
               log_puct: float, log_const: float, dynamic_fpu: bool = False) -> UCTNode | None:
        touched = self.touched
        fresh = self.fresh
        for c in fresh:
            if c.visits:  # a first visit since the last selection: Pv has changed
                self.fresh = [c for c in fresh if not c.visits]
                self.policy = self._visited_policy()
                break
        scores = self.scores
        key = (node.visits, color, fpu_reduction, c_puct, log_puct, log_const, node.net_eval,
               dynamic_fpu)
        if key != self.scored_for:
            parent_visits = node.visits - self.offset
            numerator = math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
            base = node.net_eval
            if dynamic_fpu and node.visits:  # the running mean (dynamic komi)
                base = node.black_wins / node.visits
            fpu = base if color == BLACK else 1.0 - base
            fpu -= fpu_reduction * math.sqrt(self.policy)
            self.terms = terms = (fpu, c_puct * numerator, fpu_reduction, color == WHITE)
            scores[:] = child_scores(self.nodes, *terms)
            self.scored_for = key
        elif self.last >= 0:
            scores[self.last] = child_score(touched[self.last][1], *self.terms)
        fpu, cn = self.terms[0], self.terms[1]
        best = None
        best_i = -1
        best_score = -1e300
        if scores:
            k = scores.index(max(scores))  # the first of the best
            if scores[k] > best_score:
                best_i, best = touched[k]
                best_score = scores[k]
                self.last = k
        untouched = self.untouched
        k = self.start
        while k < len(untouched) and untouched[k][2].status:  # skip PRUNED ones
            k += 1
        if k < len(untouched):
            neg_prior, i, c = untouched[k]
            score = fpu + cn * c.prior
            if score > best_score or (score == best_score and i < best_i):
                if k == self.start:
                    self.start += 1
                else:
                    del untouched[k]
                at = bisect.bisect(touched, i, key=lambda t: t[0])
                touched.insert(at, (i, c))
                self.nodes.insert(at, c)
                scores.insert(at, score)
                self.last = at
                self.fresh.append(c)
                return c
        return best


#: The score of a child that may not be selected (PRUNED or INVALID).
_NOT_ACTIVE = float("-inf")


def child_score(c: UCTNode, fpu: float, cn: float, fpu_reduction: float, white: bool) -> float:
    """select_child's score of one child (-inf when it is not ACTIVE), given the node's FPU
    and c_puct * numerator, for RootSelector and ChildScores.

    The same arithmetic as select_child's loop, on purpose: there it is inlined, since a
    call per child would cost the hottest loop of the search a Python call each; so it is
    in `child_scores`, for whole lists. The tests keep the selectors' choices equal to
    select_child's, and child_scores equal to this."""
    if c.status:
        return _NOT_ACTIVE
    n = c.visits
    vl = c.virtual_loss
    if n:
        q = (c.black_wins + (vl if white else 0)) / (n + vl)
        if white:
            q = 1.0 - q
    elif vl:
        q = -1.0 - fpu_reduction
    else:
        q = fpu
    return q + cn * c.prior / (1 + n)


def child_scores(children, fpu: float, cn: float, fpu_reduction: float,
                 white: bool) -> list[float]:
    """`child_score` of each child, in one loop (hot path: the selectors score every
    touched child again after each batch, and a call per child cost a third of that)."""
    scores = []
    append = scores.append
    for c in children:
        if c.status:
            append(_NOT_ACTIVE)
            continue
        n = c.visits
        vl = c.virtual_loss
        if n:
            q = (c.black_wins + (vl if white else 0)) / (n + vl)
            if white:
                q = 1.0 - q
        elif vl:
            q = -1.0 - fpu_reduction
        else:
            q = fpu
        append(q + cn * c.prior / (1 + n))
    return scores


#: Inner nodes with at least this many inflated children select through a ChildScores
#: during a collection; smaller ones through select_child's plain loop (below this the two
#: cost the same; docs/performance.md, issue 18).
KEPT_SCORES_CHILDREN = 8


class ChildScores:
    """PUCT selection at one inner node during one collection of leaves, keeping the
    children's scores (hot path at big nodes; the root has RootSelector).

    Within a collection no backup runs (except a terminal leaf's, which changes the node's
    visits and so rescores everything), so a node's Npar, Pv, FPU and c_puct * numerator stay
    as they are, and the only child whose score can change between two descents through the
    node is the one selected there last (its virtual loss goes on, or off again after a
    collision): only that one is scored again, and the best is a C-level max. Late in a game
    the nodes one move below the root have a hundred or more inflated children and are passed
    through ten or more times per collection of 32, where select_child's loop over every child
    every time was most of the descent's cost (a sixth of the search's instructions at move
    200 of a 9-dan game). The search drops a node's ChildScores when it marks one of the
    node's children INVALID (a repetition found on replay, which may change Npar). Chooses
    exactly what select_child chooses (tests/test_node.py, tests/test_search.py)."""

    __slots__ = ("key", "scores", "last", "terms")

    def __init__(self) -> None:
        self.key = None  # the node's visits and the arguments the scores were made for
        self.scores: list[float] = []  # one per inflated child, in child order
        self.last = -1  # the child selected last
        self.terms = (0.0, 0.0, 0.0, False)  # fpu, c_puct * numerator, reduction, white

    def select(self, node: UCTNode, color: int, fpu_reduction: float, c_puct: float,
               log_puct: float, log_const: float, dynamic_fpu: bool = False) -> UCTNode | None:
        children = node.children
        scores = self.scores
        key = (node.visits, color, fpu_reduction, c_puct, log_puct, log_const, node.net_eval,
               dynamic_fpu)
        if key != self.key or len(scores) != len(children):
            parent_visits = 0
            visited_policy = 0.0
            for c in children:
                if c.status != INVALID:
                    n = c.visits
                    if n:
                        parent_visits += n
                        visited_policy += c.prior
            numerator = math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
            base = node.net_eval
            if dynamic_fpu and node.visits:  # the running mean (dynamic komi)
                base = node.black_wins / node.visits
            fpu = base if color == BLACK else 1.0 - base
            fpu -= fpu_reduction * math.sqrt(visited_policy)
            self.terms = terms = (fpu, c_puct * numerator, fpu_reduction, color == WHITE)
            scores[:] = child_scores(children, *terms)
            self.key = key
        elif self.last >= 0:
            scores[self.last] = child_score(children[self.last], *self.terms)
        fpu, cn = self.terms[0], self.terms[1]
        best = None
        best_score = -1e300
        self.last = -1
        if scores:
            top = max(scores)
            if top > best_score:  # the first of the best, as select_child's strict >
                self.last = scores.index(top)
                best = children[self.last]
                best_score = top
        i = len(children)
        if i < len(node._moves) and fpu + cn * node._priors[i] > best_score:
            best = node._inflate_next()
            scores.append(child_score(best, *self.terms))
            self.last = i
        return best
