"""PUCT selection: which child a descent goes to, as Leela Zero's `UCTNode::uct_select_child`
(src/UCTNode.cpp) chooses it, written once.

Owns: the node statuses selection reads (ACTIVE / PRUNED / INVALID), the selection
arithmetic (`visited_sums`, `puct_terms`: the FPU header; `child_score`: the score;
`forced_visits`: KataGo's forced playouts at the root), the plain selection `select_child`
(UCTNode.select_child), and the two selectors that keep what they can between descents:
`RootSelector` (the root, with `forced_child`) and `ChildScores` (a big inner node within one
collection of leaves). Imports: stdlib and game.coords only; it sees a node through its
fields (`children`, `visits`, `black_wins`, `net_eval`, `status`, `prior`, `virtual_loss`, the
compact `_moves` / `_priors` and `_inflate_next`), so search/node.py can import it.

The score (the AlphaGo Zero paper's notation, as in search/node.py):
    Npar   the valid (not INVALID) children's visits
    Pv     the prior mass of the visited valid children
    FPU    the node's network value for the side to move (with `dynamic_fpu` and visits, its
           running mean instead: the dynamic-komi modes) - reduction * sqrt(Pv); the root
           has its own reduction (SearchParams.root_fpu_reduction: 0 with noise)
    Q      a visited child's mean value for the side to move, each pending virtual visit
           counted as a loss; FPU for an unvisited child; -1 - reduction for an unvisited
           child waiting for its evaluation (virtual loss, no visits), so another is preferred
    score  Q + c_puct * sqrt(Npar * ln(log_puct * Npar + log_const)) * P / (1 + N)
The first strictly best ACTIVE child wins, in child order (LZ's `value > best_value`).

`visited_sums`, `puct_terms` and `child_score` are the reference, which the selectors use.
Two hot paths repeat them inline on purpose: `child_scores` (the score, for whole lists: a
Python call per child cost a third of the selectors' rescoring) and `select_child` (all three,
see there). tests/test_node.py keeps `child_scores` equal to `child_score` to the last bit,
and tests/test_select.py keeps every selector's choice and scores equal to Leela Zero's score
computed independently, on searched trees.
"""

from __future__ import annotations

import bisect
import math

from leelaz.game.coords import BLACK, WHITE

ACTIVE = 0
PRUNED = 1  # skipped by selection (root only, time management); still counts as valid
INVALID = 2  # a superko repetition: never selected, not counted

#: The score of a child that may not be selected (PRUNED or INVALID).
_NOT_ACTIVE = float("-inf")

#: Inner nodes with at least this many inflated children select through a ChildScores
#: during a collection; smaller ones through select_child (below this the two cost the same;
#: docs/performance.md).
KEPT_SCORES_CHILDREN = 8


# ----------------------------------------------------------------------------- arithmetic
def visited_sums(children) -> tuple[int, float]:
    """(Npar, Pv): the valid children's visits and the prior mass of the visited ones, summed
    in child order (so any recount gives the same float)."""
    parent_visits = 0
    visited_policy = 0.0
    for c in children:
        if c.status != INVALID:
            n = c.visits
            if n:
                parent_visits += n
                visited_policy += c.prior
    return parent_visits, visited_policy


def puct_terms(node, color: int, parent_visits: int, visited_policy: float,
               fpu_reduction: float, c_puct: float, log_puct: float, log_const: float,
               dynamic_fpu: bool) -> tuple[float, float, float, bool]:
    """The node's part of every child's score: (FPU, c_puct * numerator, the FPU reduction,
    whether White is to move), the arguments `child_score` takes after the child."""
    numerator = math.sqrt(parent_visits * math.log(log_puct * parent_visits + log_const))
    base = node.net_eval
    if dynamic_fpu and node.visits:  # the running mean (dynamic komi)
        base = node.black_wins / node.visits
    fpu = base if color == BLACK else 1.0 - base
    fpu -= fpu_reduction * math.sqrt(visited_policy)
    return fpu, c_puct * numerator, fpu_reduction, color == WHITE


def child_score(c, fpu: float, cn: float, fpu_reduction: float, white: bool) -> float:
    """The PUCT score of one child (-inf when it is not ACTIVE), given the node's
    `puct_terms`: the reference."""
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
    """`child_score` of each child, in one loop: a deliberate inlined copy (hot path: every
    selection below the root, and the selectors' rescoring after each batch)."""
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


def fresh_score(prior: float, fpu: float, cn: float) -> float:
    """`child_score` of a child never selected (no visits, no virtual loss, ACTIVE), from
    its prior alone: how the compact children and the root's untouched ones are scored."""
    return fpu + cn * prior


def forced_visits(prior: float, total: int, k: float) -> float:
    """KataGo's forced playouts (Wu, "Accelerating Self-Play Learning in Go", 2019, section
    3.1): the visits a root child with (noised) prior `prior` is owed when the root's children
    hold `total` visits. Self-play's target pruning removes them again (selfplay/targets.py)."""
    return math.sqrt(k * prior * total)


# ----------------------------------------------------------------------------- selection
def select_child(node, color: int, fpu_reduction: float, c_puct: float, log_puct: float,
                 log_const: float, dynamic_fpu: bool = False):
    """PUCT selection at `node` (hot path; UCTNode.select_child). Assumes the node has
    children; None when no child is ACTIVE.

    A deliberate inlined copy of `visited_sums`, `puct_terms` and `child_score` (hot path:
    every descent step below the root, where most nodes have one to a few inflated children):
    calling them cost the search's selection a tenth more instructions, and scoring into a
    list (`child_scores`) and taking its max half as much again. The compact children
    (search/node.py) are sorted by prior and a never-selected child scores `fresh_score`, so
    only the first of them can beat the inflated ones: it is inflated when it does."""
    children = node.children
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
    base = node.black_wins / node.visits if dynamic_fpu and node.visits else node.net_eval
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
    if i < len(node._moves) and fpu + cn * node._priors[i] > best_score:  # fresh_score
        best = node._inflate_next()
    return best


class RootSelector:
    """PUCT selection at the root without scoring every child at every selection (hot path).

    The root has all its children inflated (often 300+), and most of them have never been
    selected: no visits and no pending virtual loss. All of those score FPU + U(prior), so the
    best of them is simply the untouched child with the highest prior (the earliest on a tie).
    This keeps the touched children (in child order) apart from the untouched ones (sorted by
    prior, then order), so one selection costs O(touched) instead of O(children), with exactly
    the choices `select_child` makes. Valid for one search: build it after the root
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
                 "scores", "scored_for", "last", "terms", "out_of_order")

    @staticmethod
    def touches(child) -> bool:
        """Whether a new selector counts `child` as touched: it may have visits or be
        INVALID (visits, virtual loss or INVALID now)."""
        return bool(child.visits or child.virtual_loss or child.status == INVALID)

    def __init__(self, root):
        touched = []
        untouched = []
        for i, c in enumerate(root.children):
            if c.visits or c.virtual_loss or c.status == INVALID:  # touches(c), inlined
                touched.append((i, c))
            else:
                untouched.append((-c.prior, i, c))
        untouched.sort(key=lambda t: (t[0], t[1]))
        self.touched = touched  # (order, child), in child order
        self.nodes = [c for _, c in touched]  # the same children, alone
        self.untouched = untouched  # (-prior, order, child), best first
        #: The untouched children are not in child order (root noise): equal fresh scores
        #: must then be looked for (`select`); in prior order the first of them is the earliest.
        self.out_of_order = any(a[1] > b[1] for a, b in zip(untouched, untouched[1:]))
        self.start = 0  # untouched[:start] have been selected (moved to touched)
        valid = sum(c.visits for c in root.children if c.status != INVALID)
        self.offset = root.visits - valid  # Npar = root.visits - offset
        self.fresh = [c for _, c in touched if not c.visits]  # touched, not visited yet
        self.policy = visited_sums(self.nodes)[1]  # Pv
        self.scores: list[float] = []  # score of each touched child, -inf if not ACTIVE
        self.scored_for = None  # the arguments and root visits the scores were made for
        self.last = -1  # index in touched of the child selected last
        self.terms = (0.0, 0.0, 0.0, False)  # puct_terms

    def forget_scores(self) -> None:
        """Score every touched child again at the next selection."""
        self.scored_for = None

    def touched_children(self) -> list:
        """The root children ever selected, or with visits, virtual loss or INVALID when the
        selector was made: every child that can have visits or be INVALID (the others have
        neither: only a selected child is visited, or found to repeat a position)."""
        return self.nodes

    def untouched_left(self) -> int:
        """How many root children are not among `touched_children`."""
        return len(self.untouched) - self.start

    def forced_child(self, k: float, virtual_loss: int):
        """The first visited, active root child (in child order) whose visits, pending ones
        counted, are below `forced_visits` of its prior; None when none is owed any. Only
        children already visited are forced (KataGo forces created children, not new ones).
        Selecting outside `select` changes a child `select` did not pick last, so the kept
        scores are forgotten."""
        nodes = self.nodes
        total = visited_sums(nodes)[0]
        for c in nodes:
            pending = c.virtual_loss / max(1, virtual_loss)
            if c.visits and c.status == ACTIVE and \
                    c.visits + pending < forced_visits(c.prior, total, k):
                self.scored_for = None
                return c
        return None

    def select(self, node, color: int, fpu_reduction: float, c_puct: float,
               log_puct: float, log_const: float, dynamic_fpu: bool = False):
        touched = self.touched
        fresh = self.fresh
        for c in fresh:
            if c.visits:  # a first visit since the last selection: Pv has changed
                self.fresh = [c for c in fresh if not c.visits]
                self.policy = visited_sums(self.nodes)[1]
                break
        scores = self.scores
        key = (node.visits, color, fpu_reduction, c_puct, log_puct, log_const, node.net_eval,
               dynamic_fpu)
        if key != self.scored_for:
            self.terms = terms = puct_terms(node, color, node.visits - self.offset,
                                            self.policy, fpu_reduction, c_puct, log_puct,
                                            log_const, dynamic_fpu)
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
            score = fresh_score(c.prior, fpu, cn)
            # Untouched children scoring the same (all of them while no child has a visit,
            # cn being 0; else priors a rounding apart) go to the earliest in child order, as
            # in select_child: with noise the root's children are not in prior order.
            j = k + 1
            while self.out_of_order and j < len(untouched) and \
                    fresh_score(untouched[j][2].prior, fpu, cn) == score:
                if not untouched[j][2].status and untouched[j][1] < i:
                    k = j
                    neg_prior, i, c = untouched[k]
                j += 1
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
        self.terms = (0.0, 0.0, 0.0, False)  # puct_terms

    def select(self, node, color: int, fpu_reduction: float, c_puct: float,
               log_puct: float, log_const: float, dynamic_fpu: bool = False):
        children = node.children
        scores = self.scores
        key = (node.visits, color, fpu_reduction, c_puct, log_puct, log_const, node.net_eval,
               dynamic_fpu)
        if key != self.key or len(scores) != len(children):
            parent_visits, visited_policy = visited_sums(children)
            self.terms = terms = puct_terms(node, color, parent_visits, visited_policy,
                                            fpu_reduction, c_puct, log_puct, log_const,
                                            dynamic_fpu)
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
        if i < len(node._moves) and fresh_score(node._priors[i], fpu, cn) > best_score:
            best = node._inflate_next()
            scores.append(child_score(best, *self.terms))
            self.last = i
        return best
