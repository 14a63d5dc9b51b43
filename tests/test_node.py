"""UCTNode arithmetic against hand-computed numbers (PUCT, FPU, virtual loss, Welford, LCB),
expansion order and the Student-t table against published quantiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from leelaz.game.coords import BLACK, PASS, WHITE, vertex
from leelaz.search.lcb import t_quantile
from leelaz.search.node import ACTIVE, INVALID, PRUNED, UCTNode, node_less

C_PUCT, LOG_PUCT, LOG_CONST = 0.5, 0.015, 1.7

A, B, C, D = vertex(0, 0), vertex(1, 0), vertex(2, 0), vertex(3, 0)


def policy_with(entries: dict[int, float], pass_prior: float = 0.0) -> np.ndarray:
    """A 362-slot policy with the given priors (by vertex) and zero elsewhere."""
    p = np.zeros(362, dtype=np.float32)
    for v, prior in entries.items():
        x, y = v % 21 - 1, v // 21 - 1
        p[y * 19 + x] = prior
    p[361] = pass_prior
    return p


def make_node(priors: dict[int, float], net_eval_black: float) -> UCTNode:
    node = UCTNode()
    node.create_children(list(priors), policy_with(priors), False, net_eval_black)
    node.inflate_all()
    return node


def child(node: UCTNode, move: int) -> UCTNode:
    return next(c for c in node.children if c.move == move)


def set_stats(node: UCTNode, visits: int, black_wins: float) -> None:
    node.visits = visits
    node.black_wins = black_wins


# ----------------------------------------------------------------------------- t table
@pytest.mark.parametrize("df,expected,tol", [
    (1, 31830.99, 0.05), (2, 223.60, 0.01), (3, 47.93, 0.01), (5, 15.55, 0.01),
    (10, 7.527, 0.001), (30, 5.054, 0.001), (100, 4.478, 0.001), (1000, 4.285, 0.001)])
def test_t_quantiles_match_published_values(df, expected, tol):
    # One-sided alpha = 1e-5; df = 1 has the closed form 1 / tan(pi * alpha) = 31830.988...
    assert abs(t_quantile(df) - expected) <= tol


def test_t_quantile_clamps_to_table():
    assert t_quantile(5000) == t_quantile(1000)
    assert t_quantile(0) == t_quantile(1)


# ----------------------------------------------------------------------------- statistics
def test_welford_and_lcb_by_hand():
    node = UCTNode()
    for v in (1.0, 0.0, 1.0, 1.0):
        node.update(v)
    assert node.visits == 4 and node.black_wins == 3.0
    # Squared deviations from the mean 0.75: 3 * 0.0625 + 0.5625 = 0.75, plus the 1e-4 start.
    assert node.m2 == pytest.approx(0.7501)
    assert node.variance() == pytest.approx(0.7501 / 3)
    # LCB = 0.75 - t(3) * sqrt(var / 4); t(3) = 47.9277
    expected = 0.75 - 47.9277 * math.sqrt(0.7501 / 3 / 4)
    assert node.lcb(BLACK) == pytest.approx(expected, abs=1e-3)
    # White's mean is 0.25 and the spread is the same.
    assert node.lcb(WHITE) == pytest.approx(0.25 - 47.9277 * math.sqrt(0.7501 / 12), abs=1e-3)


def test_lcb_below_two_visits_is_a_large_negative_plus_visits():
    node = UCTNode()
    assert node.lcb(BLACK) == -1e6
    node.update(0.9)
    assert node.lcb(BLACK) == -1e6 + 1


def test_eval_with_virtual_loss_counts_pending_visits_as_losses():
    node = UCTNode()
    set_stats(node, 4, 3.0)  # Black 0.75
    node.virtual_loss = 3
    # Black: 3 / (4 + 3); White: 1 - (3 + 3) / 7 = 1/7
    assert node.eval_with_vl(BLACK) == pytest.approx(3 / 7)
    assert node.eval_with_vl(WHITE) == pytest.approx(1 / 7)


# ----------------------------------------------------------------------------- expansion
def test_expansion_renormalises_and_orders_by_prior_then_vertex():
    node = UCTNode()
    pol = policy_with({A: 0.2, B: 0.1, C: 0.1, D: 0.4}, pass_prior=0.1)
    count = node.create_children([A, B, C], pol, True, 0.3)  # D is not a candidate
    assert count == 4
    node.inflate_all()
    moves = [c.move for c in node.children]
    # 0.2 / 0.5 = 0.4 first; then the three 0.2s with the higher vertex first, pass last.
    assert moves == [A, C, B, PASS]
    assert [round(c.prior, 6) for c in node.children] == [0.4, 0.2, 0.2, 0.2]
    assert node.net_eval == pytest.approx(0.3)


def test_expansion_with_zero_priors_spreads_evenly():
    node = UCTNode()
    node.create_children([A, B], np.zeros(362, dtype=np.float32), True, 0.5)
    node.inflate_all()
    assert [round(c.prior, 6) for c in node.children] == [pytest.approx(1 / 3, abs=1e-6)] * 3


def test_compact_children_inflate_lazily_in_order():
    node = UCTNode()
    node.create_children([A, B, C], policy_with({A: 0.5, B: 0.3, C: 0.2}), False, 0.5)
    assert node.children == [] and node.child_count() == 3
    first = node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST)
    assert first.move == A and len(node.children) == 1
    assert node.find_child(C).move == C and len(node.children) == 3


# ----------------------------------------------------------------------------- selection
def test_puct_hand_computed_black():
    # Parent net value 0.6 for Black. A: P .5, N 2, W 1.2; B: P .3, N 1, W .3; C: P .2, N 0.
    node = make_node({A: 0.5, B: 0.3, C: 0.2}, 0.6)
    set_stats(child(node, A), 2, 1.2)
    set_stats(child(node, B), 1, 0.3)
    # Npar = 3, numerator = sqrt(3 ln(0.045 + 1.7)) = 1.292384
    # A: 0.6 + 0.5*0.5*1.292384/3 = 0.707699
    # B: 0.3 + 0.5*0.3*1.292384/2 = 0.396929
    # C: FPU 0.6 - 0.25*sqrt(0.8) = 0.376393, + 0.5*0.2*1.292384 = 0.505632
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == A
    # Make A worse: W 0.6 -> Q 0.3, score 0.407699: C (0.505632) wins.
    set_stats(child(node, A), 2, 0.6)
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == C
    # Without FPU reduction C scores 0.6 + 0.129238 = 0.729238; with a reduction of 0.5,
    # 0.6 - 0.447214 + 0.129238 = 0.282024 < B's 0.396929 (and A's 0.407699): A.
    assert node.select_child(BLACK, 0.0, C_PUCT, LOG_PUCT, LOG_CONST).move == C
    assert node.select_child(BLACK, 0.5, C_PUCT, LOG_PUCT, LOG_CONST).move == A


def test_puct_white_sees_flipped_values():
    # Same tree, White to move: A's Q = 1 - 0.6 = 0.4 -> 0.507699; B's 0.7 -> 0.796929;
    # C's FPU = (1 - 0.6) - 0.223607 = 0.176393 + 0.129238 = 0.305632. B wins.
    node = make_node({A: 0.5, B: 0.3, C: 0.2}, 0.6)
    set_stats(child(node, A), 2, 1.2)
    set_stats(child(node, B), 1, 0.3)
    assert node.select_child(WHITE, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == B


def test_virtual_loss_steers_selection_away():
    node = make_node({A: 0.5, B: 0.3, C: 0.2}, 0.6)
    set_stats(child(node, A), 2, 1.2)
    set_stats(child(node, B), 1, 0.3)
    # Pending visits on A: Q = 1.2 / (2 + 3) = 0.24 -> 0.24 + 0.107699 = 0.347699 < C's 0.505632.
    child(node, A).virtual_loss = 3
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == C


def test_unvisited_child_waiting_for_evaluation_scores_minus_one():
    node = make_node({A: 0.6, B: 0.4}, 0.5)
    child(node, A).virtual_loss = 3  # N = 0 and pending: -1 - 0.25 + U
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == B


def test_zero_parent_visits_picks_highest_prior_and_ties_go_to_child_order():
    node = make_node({A: 0.25, B: 0.25, C: 0.5}, 0.5)
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == C
    child(node, C).status = PRUNED
    # A and B tie: the higher vertex (B) comes first in the order, so it wins.
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == B


def test_invalid_children_are_neither_selected_nor_counted():
    node = make_node({A: 0.5, B: 0.3, C: 0.2}, 0.6)
    set_stats(child(node, A), 100, 90.0)
    child(node, A).status = INVALID
    set_stats(child(node, B), 1, 0.3)
    # Npar = 1 (A not counted): numerator = sqrt(ln(1.715)) = 0.734452.
    # B: 0.3 + 0.5*0.3*0.734452/2 = 0.355084; C: 0.6 - 0.25*sqrt(0.3) + 0.5*0.2*0.734452
    #    = 0.6 - 0.136931 + 0.073445 = 0.536514 -> C.
    assert node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST).move == C


# ----------------------------------------------------------------------------- ordering
def test_node_comparator_prefers_lcb_then_visits_then_prior():
    a, b = UCTNode(A, 0.1), UCTNode(B, 0.2)
    assert node_less(a, b, BLACK, 2.0)  # both unvisited: lower prior is worse
    for v in (1.0, 1.0, 1.0, 0.0):  # Q .75
        a.update(v)
    for v in (1.0,) * 10:
        b.update(v)
    # Both above the threshold: LCB decides (b's many wins have the higher bound).
    assert node_less(a, b, BLACK, 2.0)
    assert not node_less(b, a, BLACK, 2.0)
    # With a threshold above a's visits, visits decide: b still better.
    assert node_less(a, b, BLACK, 5.0)
    assert a.status == ACTIVE


# ----------------------------------------------------------------------------- memory pressure
def test_partial_expansion_keeps_high_priors_and_can_be_completed():
    node = UCTNode()
    priors = {A: 0.5, B: 0.3, C: 0.004, D: 0.001}
    # Ratio 0.01: keep priors >= 1% of the best (0.5 / 0.805 renormalised): A and B only.
    assert node.create_children(list(priors), policy_with(priors), False, 0.5, 0.01) == 2
    assert node.psa_ratio == 0.01 and node.children_moves() == [A, B]
    first = node.select_child(BLACK, 0.25, C_PUCT, LOG_PUCT, LOG_CONST)
    first.update(1.0)
    # Memory freed: expanding again with ratio 0 appends C and D after the existing ones.
    assert node.create_children(list(priors), policy_with(priors), False, 0.5, 0.0) == 2
    assert node.psa_ratio == 0.0
    assert node.children_moves() == [A, B, C, D]
    assert node.children[0] is first and first.visits == 1  # statistics kept
    node.inflate_all()
    assert [round(c.prior, 4) for c in node.children] == [0.6211, 0.3727, 0.005, 0.0012]


def test_expansion_with_everything_cut_leaves_the_node_expandable():
    node = UCTNode()
    priors = {A: 0.5, B: 0.5}
    assert node.create_children(list(priors), policy_with(priors), False, 0.5, 2.0) == 0
    assert node.expanded and node.psa_ratio == 2.0 and not node.has_children()
    assert node.create_children(list(priors), policy_with(priors), False, 0.5, 0.0) == 2
    assert node.children_moves() == [B, A]


# ----------------------------------------------------------------------------- root selector
@pytest.mark.parametrize("seed, reused", [(1, False), (2, False), (3, False), (4, True),
                                          (5, True)])
def test_root_selector_chooses_exactly_like_select_child(seed, reused):
    """Random priors with many ties, random values, virtual loss and pruning: the fast root
    selector and the plain loop agree at every step; also on a reused root whose children
    (one of them an INVALID repeat) already have visits."""
    import random

    from leelaz.game.coords import ALL_VERTICES
    from leelaz.search.node import RootSelector

    rng = random.Random(seed)
    moves = list(ALL_VERTICES[:120])
    pol = np.zeros(362, dtype=np.float32)
    for i in range(120):
        pol[i] = rng.choice([0.001, 0.002, 0.01, 0.05, rng.random() / 10])
    root = UCTNode()
    root.create_children(moves, pol, True, 0.55)
    root.inflate_all()
    root.update(0.55)  # the root's own evaluation
    if reused:  # an earlier search's visits, as tree reuse hands them over
        for c in rng.sample(root.children, 15):
            for _ in range(rng.randrange(1, 6)):
                value = rng.random()
                c.update(value)
                root.update(value)
        rng.choice([c for c in root.children if c.visits]).status = INVALID
    selector = RootSelector(root)
    for step in range(400):
        color = BLACK if step % 3 else WHITE
        red = rng.choice([0.0, 0.25])
        expected = root.select_child(color, red, C_PUCT, LOG_PUCT, LOG_CONST)
        got = selector.select(root, color, red, C_PUCT, LOG_PUCT, LOG_CONST)
        assert got is expected, step
        roll = rng.random()
        if roll < 0.1:
            got.virtual_loss += 3  # pending, as in a batch
        else:  # a backup goes through the child and the root
            value = rng.choice([0.0, 0.5, 1.0, rng.random()])
            got.update(value)
            root.update(value)
        if rng.random() < 0.05:  # time management prunes / unprunes a child
            victim = rng.choice(root.children)
            victim.status = PRUNED if victim.status == ACTIVE else ACTIVE
            selector.forget_scores()  # as the search does before each collection
        if rng.random() < 0.05:
            for c in root.children:
                if c.virtual_loss:
                    c.virtual_loss = 0
                    c.update(0.5)
                    root.update(0.5)


@pytest.mark.parametrize("seed, reused", [(11, False), (12, True), (13, True)])
def test_noncontenders_counted_from_the_touched_children_as_from_all(seed, reused):
    """timemanage.count_noncontenders (no_pruning mode, from the RootSelector's touched
    children) gives prune_noncontenders' count over every child, for any playouts left,
    through a search's worth of selections, backups, pending virtual loss and repeats."""
    import random

    from leelaz.game.coords import ALL_VERTICES
    from leelaz.search.node import RootSelector
    from leelaz.search.timemanage import (count_noncontenders, prune_noncontenders,
                                          two_contenders_by_visits)

    rng = random.Random(seed)
    moves = list(ALL_VERTICES[:150])
    pol = np.zeros(362, dtype=np.float32)
    for i in range(150):
        pol[i] = rng.choice([0.001, 0.01, 0.05, rng.random() / 10])
    root = UCTNode()
    root.create_children(moves, pol, True, 0.5)
    root.inflate_all()
    root.update(0.5)
    if reused:
        for c in rng.sample(root.children, 20):
            for _ in range(rng.randrange(1, 30)):
                value = rng.random()
                c.update(value)
                root.update(value)
        rng.choice([c for c in root.children if c.visits]).status = INVALID
    selector = RootSelector(root)
    checked, shortcuts = set(), set()
    for step in range(600):
        color = BLACK if (step // 50) % 2 else WHITE
        got = selector.select(root, color, 0.25, C_PUCT, LOG_PUCT, LOG_CONST)
        if got is None:
            break
        roll = rng.random()
        if roll < 0.05:
            got.status = INVALID  # a repetition found on the way down
        elif roll < 0.15:
            got.virtual_loss += 3  # still pending
        else:
            value = rng.choice([0.0, 1.0, rng.random(), rng.random()])
            got.update(value)
            root.update(value)
        selector.forget_scores()
        for left in (0, 1, 5, rng.randrange(0, 60), 10**6):
            expected = prune_noncontenders(root, color, left, False)
            assert count_noncontenders(selector.touched_children(), selector.untouched_left(),
                                       color, left) == expected, (step, left)
            checked.add(expected)
            two = two_contenders_by_visits(selector.touched_children(), left)
            visits = sorted(c.visits for c in root.children if c.status != INVALID)
            assert two == (visits[-2] > 0 and visits[-2] >= visits[-1] - left)
            if two:  # the early stop's shortcut: the search goes on whatever the count says
                assert expected < len(root.children) - 1
            shortcuts.add(two)
    assert len(checked) > 20  # the counts went through many values
    assert shortcuts == {False, True}


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_root_selector_keeps_exact_scores_through_a_collection(seed):
    """The search's pattern: batches of descents with one colour, each leaving virtual loss
    on its child (or taking it off again after a collision, or backing up a terminal value at
    once), then the batch's backups, pruning and forget_scores. The selector's kept scores
    must choose exactly what the plain loop chooses at every descent."""
    import random

    from leelaz.game.coords import ALL_VERTICES
    from leelaz.search.node import RootSelector

    rng = random.Random(seed)
    moves = list(ALL_VERTICES[:90])
    pol = np.zeros(362, dtype=np.float32)
    for i in range(90):
        pol[i] = rng.choice([0.002, 0.01, 0.05, rng.random() / 10])
    root = UCTNode()
    root.create_children(moves, pol, True, 0.45)
    root.inflate_all()
    root.update(0.45)
    selector = RootSelector(root)
    color, vl = WHITE, 3
    checked = 0
    for _ in range(60):
        selector.forget_scores()
        pending = []
        for _ in range(rng.randrange(1, 40)):
            expected = root.select_child(color, 0.25, C_PUCT, LOG_PUCT, LOG_CONST)
            got = selector.select(root, color, 0.25, C_PUCT, LOG_PUCT, LOG_CONST)
            assert got is expected
            checked += 1
            if got is None:
                break
            roll = rng.random()
            if roll < 0.1:  # a collision: the virtual loss comes straight off again
                continue
            if roll < 0.15:  # a terminal position: backed up during the collection
                value = rng.choice([0.0, 1.0])
                got.update(value)
                root.update(value)
                continue
            got.virtual_loss += vl
            pending.append(got)
        reexpansions = rng.random() < 0.2  # a batch that brings back no value at all
        for c in pending:  # the batch comes back
            c.virtual_loss -= vl
            if not reexpansions:
                value = rng.random()
                c.update(value)
                root.update(value)
        if rng.random() < 0.3:  # time management (un)prunes between batches
            victim = rng.choice(root.children)
            victim.status = PRUNED if victim.status == ACTIVE else ACTIVE
    assert checked > 500


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_sort_children_is_the_node_less_sort(seed):
    """sort_children (children without visits sorted apart by prior) gives exactly the
    stable sort by node_less over all children: ties of priors, of visits, of LCBs, visits
    around the LCB threshold, virtual loss, both colours."""
    import functools
    import random

    rng = random.Random(seed)
    for color in (BLACK, WHITE):
        root = UCTNode()
        for i in range(250):
            c = UCTNode(i, rng.choice([0.001, 0.002, 0.05, rng.random() / 10]))
            visits = rng.choice([0, 0, 0, 1, 2, 3, rng.randrange(1, 60), 40])
            for _ in range(visits):
                c.update(rng.choice([0.0, 1.0, 0.5]))
            c.virtual_loss = rng.choice([0, 0, 3])
            root.children.append(c)
        order = list(root.children)
        threshold = max(2.0, 0.1 * max(c.visits for c in order))

        def cmp(a, b):
            if node_less(a, b, color, threshold):
                return -1
            return 1 if node_less(b, a, color, threshold) else 0
        expected = sorted(order, key=functools.cmp_to_key(cmp), reverse=True)
        root.sort_children(color, 0.1)
        assert [c.move for c in root.children] == [c.move for c in expected]


@pytest.mark.parametrize("seed", [31, 32, 33, 34])
def test_best_child_is_the_first_maximum_over_every_child(seed):
    """best_child (which looks at the visited children alone) gives std::max_element's
    answer over all of them by node_less: unvisited children first and among the rest,
    ties of visits, LCBs and priors, virtual loss, both colours, and no visits at all."""
    import random

    rng = random.Random(seed)
    for color in (BLACK, WHITE):
        for none_visited in (False, True):
            node = UCTNode()
            for i in range(200):
                c = UCTNode(i, rng.choice([0.001, 0.002, 0.05, rng.random() / 10]))
                visits = 0 if none_visited or i < 5 else rng.choice(
                    [0, 0, 0, 0, 1, 2, 3, rng.randrange(1, 60), 40])
                for _ in range(visits):
                    c.update(rng.choice([0.0, 1.0, 0.5]))
                c.virtual_loss = rng.choice([0, 0, 3])
                node.children.append(c)
            children = node.children
            threshold = max(2.0, 0.1 * max(c.visits for c in children))
            want = children[0]
            for c in children[1:]:
                if node_less(want, c, color, threshold):
                    want = c
            assert node.best_child(color, 0.1) is want


def test_child_scores_is_child_score_of_each_child():
    """node.child_scores (the selectors' rescoring loop) is child_score child by child, to
    the last bit: visited, pending, fresh, PRUNED and INVALID children, both colours."""
    import random

    from leelaz.search.node import child_score, child_scores

    rng = random.Random(3)
    children = []
    for i in range(200):
        c = UCTNode(i, rng.choice([0.0, 0.001, rng.random()]))
        for _ in range(rng.choice([0, 0, 1, 5])):
            c.update(rng.random())
        c.virtual_loss = rng.choice([0, 0, 3, 6])
        c.status = rng.choice([ACTIVE, ACTIVE, ACTIVE, PRUNED, INVALID])
        children.append(c)
    for white in (False, True):
        terms = (rng.random(), 3 * rng.random(), rng.choice([0.0, 0.25]), white)
        expected = [child_score(c, *terms) for c in children]
        assert child_scores(children, *terms) == expected
        assert len(set(expected)) > 50


def test_backup_is_update_inlined():
    """search.node.backup repeats UCTNode.update for a whole path (hot path): the same
    visits, wins and M2, to the last bit, and the virtual loss taken off."""
    from leelaz.search.node import backup

    rng = np.random.default_rng(12)
    inlined = [UCTNode() for _ in range(4)]
    called = [UCTNode() for _ in range(4)]
    for node in inlined:
        node.virtual_loss = 3 * 40
    for _ in range(40):
        value = float(rng.random())
        depth = int(rng.integers(1, 5))
        backup(inlined[:depth], value, 3)
        for node in inlined[depth:]:
            node.virtual_loss -= 3
        for node in called[:depth]:
            node.update(value)
    for a, b in zip(inlined, called):
        assert (a.visits, a.black_wins, a.m2) == (b.visits, b.black_wins, b.m2)
        assert a.virtual_loss == 0


# ----------------------------------------------------------------------------- child scores
@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_child_scores_choose_exactly_like_select_child_through_collections(seed):
    """Two twin inner nodes (compact children, inflated as they are chosen) go through the
    search's pattern: collections of descents leaving virtual loss (or taking it off after a
    collision, or backing up a terminal value at once, or finding a repetition that makes
    the child INVALID), then the batch's backups. One selects with select_child, the other
    with a ChildScores per collection (dropped when a child turns INVALID, as the search
    does): they must choose the same child at every descent."""
    import random

    from leelaz.game.coords import ALL_VERTICES
    from leelaz.search.node import ChildScores

    rng = random.Random(seed)
    moves = list(ALL_VERTICES[:150])
    pol = np.zeros(362, dtype=np.float32)
    for i in range(150):
        pol[i] = rng.choice([0.001, 0.002, 0.01, 0.05, rng.random() / 10])
    twins = []
    for _ in range(2):
        node = UCTNode()
        node.create_children(moves, pol, True, 0.4)
        node.update(0.4)
        twins.append(node)
    plain, kept_node = twins
    color = rng.choice([BLACK, WHITE])
    red, vl = 0.25, 3
    checked = 0
    for _ in range(80):
        kept = ChildScores()
        pending = []
        for _ in range(rng.randrange(1, 40)):
            expected = plain.select_child(color, red, C_PUCT, LOG_PUCT, LOG_CONST)
            got = kept.select(kept_node, color, red, C_PUCT, LOG_PUCT, LOG_CONST)
            assert (got is None) == (expected is None)
            if got is None:
                break
            k = kept_node.children.index(got)
            assert plain.children.index(expected) == k
            checked += 1
            pair = (plain.children[k], got)
            roll = rng.random()
            if roll < 0.08:  # a collision: no virtual loss stays
                continue
            if roll < 0.12:  # a terminal position: backed up during the collection
                value = rng.choice([0.0, 1.0])
                for node, c in zip(twins, pair):
                    c.update(value)
                    node.update(value)
                continue
            if roll < 0.14:  # a repetition found on replay, perhaps of a visited child
                for c in pair:
                    c.status = INVALID
                kept = ChildScores()
                continue
            for c in pair:
                c.virtual_loss += vl
            pending.append(k)
        for k in pending:  # the batch comes back
            value = rng.random()
            for node in twins:
                c = node.children[k]
                c.virtual_loss -= vl
                c.update(value)
                node.update(value)
    assert checked > 800
    assert len(kept_node.children) > 32
