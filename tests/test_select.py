"""PUCT selection (search/select.py) on trees a search really builds, with its virtual loss
in flight: the plain loop (`select_child`), the root's `RootSelector` and the inner nodes'
`ChildScores` choose the same child, and every score they keep equals the score of Leela
Zero's `UCTNode::uct_select_child` (src/UCTNode.cpp) computed here from the node's fields, to
1e-12, with and without root noise and dynamic FPU.

The independent score: Npar and Pv summed over the valid children, numerator =
sqrt(Npar * ln(log_puct * Npar + log_const)), FPU = the parent's value for the side to move
(its network value, or with dynamic FPU its running mean) - reduction * sqrt(Pv), the root
with its own reduction; Q = a visited child's value with each pending virtual visit a loss,
FPU unvisited, -1 - reduction unvisited with virtual loss pending; score = Q + c_puct * P *
(numerator / (1 + N)), in LZ's order of operations (the search's own differs by rounding only).
"""

from __future__ import annotations

import math

import pytest

from conftest import position
from fake_evaluator import HashEvaluator
from leelaz.game.coords import BLACK, WHITE
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch
from leelaz.search.select import (ACTIVE, INVALID, ChildScores, child_score, child_scores,
                                  puct_terms, select_child, visited_sums)

TOLERANCE = 1e-12
BATCH = 16


def lz_scores(node, color: int, reduction: float, p: SearchParams) -> list[float | None]:
    """uct_select_child's value of every child, inflated then compact, in child order; None
    for a child that may not be chosen (not ACTIVE)."""
    inflated = node.children
    valid = [c for c in inflated if c.status != INVALID]
    npar = sum(c.visits for c in valid)
    pv = sum(c.prior for c in valid if c.visits)
    numerator = math.sqrt(npar * math.log(p.log_puct * npar + p.log_const))
    parent = node.black_wins / node.visits if p.dynamic_fpu and node.visits else node.net_eval
    fpu = (parent if color == BLACK else 1.0 - parent) - reduction * math.sqrt(pv)
    scores: list[float | None] = []
    for c in inflated:
        if c.status != ACTIVE:
            scores.append(None)
            continue
        if c.visits:
            pending_losses = c.virtual_loss if color == WHITE else 0
            black = (c.black_wins + pending_losses) / (c.visits + c.virtual_loss)
            q = black if color == BLACK else 1.0 - black
        elif c.virtual_loss:
            q = -1.0 - reduction
        else:
            q = fpu
        scores.append(q + p.c_puct * c.prior * (numerator / (1 + c.visits)))
    for prior in node._priors[len(inflated):]:  # never selected: FPU, no visits
        scores.append(fpu + p.c_puct * prior * numerator)
    return scores


def lz_choice(scores: list[float | None]) -> list[int]:
    """The children whose score is the best to within TOLERANCE (rounding may order near
    ties either way)."""
    best = max(s for s in scores if s is not None)
    return [i for i, s in enumerate(scores) if s is not None and s >= best - TOLERANCE]


def same_scores(kept: list[float], want: list[float | None]) -> None:
    assert len(kept) <= len(want)
    for got, expected in zip(kept, want):
        if expected is None:
            assert got == float("-inf")
        else:
            assert got == pytest.approx(expected, abs=TOLERANCE)


def walk(root, color):
    """(node, colour to move there, depth) for every node with children."""
    stack = [(root, color, 0)]
    while stack:
        node, to_move, depth = stack.pop()
        if node.children or len(node._moves):
            yield node, to_move, depth
        stack.extend((c, 1 - to_move, depth + 1) for c in node.children)


def check_node(node, color, reduction, p, kept=None) -> int:
    """select_child and a selector (`kept`, else a new ChildScores) at one node, twice: as
    found, and again after the chosen child takes a descent's virtual loss (the selectors
    then rescore only that child). Returns how many choices were compared."""
    args = (color, reduction, p.c_puct, p.log_puct, p.log_const, p.dynamic_fpu)
    selector = kept if kept is not None else ChildScores()
    compared = 0
    added = []
    for _ in range(2):
        want = lz_scores(node, color, reduction, p)
        if all(s is None for s in want):
            assert select_child(node, *args) is None
            break
        plain = select_child(node, *args)  # may inflate the next compact child
        fast = selector.select(node, *args)
        assert fast is plain
        k = node.children.index(plain)
        assert k in lz_choice(want)
        if isinstance(selector, ChildScores):
            same_scores(selector.scores, want)
        else:  # the root's: its touched children, and what an untouched one scores
            order = {id(c): i for i, c in enumerate(node.children)}
            for c, score in zip(selector.touched_children(), selector.scores):
                expected = want[order[id(c)]]
                if expected is None:
                    assert score == float("-inf")
                else:
                    assert score == pytest.approx(expected, abs=TOLERANCE)
        compared += 1
        plain.virtual_loss += p.virtual_loss
        added.append(plain)
    for c in added:
        c.virtual_loss -= p.virtual_loss
    return compared


@pytest.mark.parametrize("noise, dynamic_fpu, moves", [
    (False, False, "Q16 D4 Q3 C16"),
    (True, False, "Q16 D4 Q3 C16"),
    (False, True, "D4 Q16 C3 R4 E17"),
    (True, True, "D4 Q16 C3 R4 E17"),
])
def test_every_selector_chooses_and_scores_as_uct_select_child(noise, dynamic_fpu, moves):
    state = position(moves)
    color = state.to_move
    p = SearchParams(noise=noise, dynamic_fpu=dynamic_fpu, max_visits=600, batch_size=BATCH,
                     visits_per_pending_leaf=0, timemanage="off", quiet=True)
    search = UCTSearch(HashEvaluator(seed=5), p, rng=7)
    network = HashEvaluator(seed=5)
    run = search.start(state, color)
    run.prepare()
    root_checks = inner_checks = pending = 0
    while run.root.visits < p.max_visits:
        batch = run.collect(BATCH)  # its virtual loss stays on the paths until applied
        pending += sum(1 for n, _, _ in walk(run.root, color) for c in n.children
                       if c.virtual_loss)
        for node, to_move, depth in list(walk(run.root, color)):
            if depth == 0:
                root_checks += check_node(node, to_move, p.root_fpu_reduction(), p,
                                          run.root_selector)
            else:
                inner_checks += check_node(node, to_move, p.fpu_reduction, p)
        run.apply_evaluations(batch, network.submit(batch.states).result())
    assert root_checks > 60 and inner_checks > 5000 and pending > 1000
    if noise:  # the root's reduction is 0 with noise, the inner nodes' is not
        assert p.root_fpu_reduction() == 0.0 < p.fpu_reduction


def test_the_selectors_are_the_reference_score_and_header():
    """select_child's inlined loop and child_scores give child_score's scores, with the
    header of puct_terms over visited_sums: one random node, both colours, virtual loss."""
    import random

    from leelaz.search.node import UCTNode

    rng = random.Random(9)
    node = UCTNode()
    node.net_eval = 0.43
    for i in range(40):
        c = UCTNode(i, rng.choice([0.001, 0.01, rng.random() / 5]))
        for _ in range(rng.choice([0, 0, 1, 4])):
            v = rng.random()
            c.update(v)
            node.update(v)
        c.virtual_loss = rng.choice([0, 0, 3])
        c.status = rng.choice([ACTIVE, ACTIVE, ACTIVE, INVALID])
        node.children.append(c)
    p = SearchParams()
    for color in (BLACK, WHITE):
        terms = puct_terms(node, color, *visited_sums(node.children), 0.25, p.c_puct,
                           p.log_puct, p.log_const, False)
        scores = child_scores(node.children, *terms)
        assert scores == [child_score(c, *terms) for c in node.children]
        same_scores(scores, lz_scores(node, color, 0.25, p))
        chosen = select_child(node, color, 0.25, p.c_puct, p.log_puct, p.log_const)
        assert node.children.index(chosen) == scores.index(max(scores))


def test_a_root_selector_touches_exactly_the_children_touches_names():
    """RootSelector.touches (the compiled core's test at `prepare`, where no selector is
    made) names the children a new selector counts as touched: visited ones, ones with
    virtual loss in flight, INVALID ones, in a tree with all three."""
    from leelaz.search.select import RootSelector

    state = position("Q16 D4 Q3 C16")
    p = SearchParams(max_visits=200, batch_size=BATCH, visits_per_pending_leaf=0,
                     timemanage="off", quiet=True)
    run = UCTSearch(HashEvaluator(seed=5), p, rng=7).start(state, state.to_move)
    run.prepare()
    network = HashEvaluator(seed=5)
    while run.root.visits < 120:
        batch = run.collect(BATCH)
        run.apply_evaluations(batch, network.submit(batch.states).result())
    batch = run.collect(BATCH)  # virtual loss on its paths
    children = run.root.children
    unvisited = [c for c in children if not c.visits and not c.virtual_loss]
    unvisited[-1].status = INVALID
    selector = RootSelector(run.root)
    named = [c for c in children if RootSelector.touches(c)]
    assert selector.touched_children() == named
    assert any(c.virtual_loss for c in named)
    assert unvisited[-1] in named and any(c.visits for c in named)
    assert len(named) < len(children)
