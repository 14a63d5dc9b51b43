"""Choosing the move once the search is over: ordering, random play, pass and resign rules.

Owns: `choose_move` and its helpers (Leela Zero's get_best_move, randomize_first_proportionally,
get_nopass_child, should_resign; src/UCTSearch.cpp). Imports: game.coords, search.node,
search.params.

The root's children are sorted in place (best first), as Leela Zero does, so the order that
analysis output and training records see afterwards is the same.
"""

from __future__ import annotations

from typing import Callable

from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, PASS, RESIGN, WHITE
from leelaz.search.node import UCTNode
from leelaz.search.params import SearchParams


def randomize_first(root: UCTNode, params: SearchParams, uniform: Callable[[], float]) -> None:
    """Swap a child sampled by visits ** (1 / temp) to the front (self-play -m).

    Only children with more than randomvisits visits take part; nothing happens when the
    first child itself has no more than randomvisits visits.
    """
    children = root.children
    if not children:
        return
    first = children[0].visits
    if first <= params.random_visits:
        return
    accum = 0.0
    cumulative = []
    for c in children:
        if c.visits > params.random_visits:
            accum += (c.visits / first) ** (1.0 / params.random_temp)
        cumulative.append(accum)
    pick = uniform() * accum
    for i, edge in enumerate(cumulative):
        if pick < edge:
            if i:
                children[0], children[i] = children[i], children[0]
            return


def nopass_child(root: UCTNode, state, color: int) -> UCTNode | None:
    """The first child that is neither a pass nor a true eye of `color`."""
    board = state.board
    for c in root.children:
        if c.move != PASS and c.valid() and not board.is_eye(color, c.move):
            return c
    return None


def _eval_of(child: UCTNode, color: int, unvisited: float) -> float:
    return unvisited if child.visits == 0 else child.raw_eval(color)


def should_resign(params: SearchParams, state, color: int, besteval: float,
                  resign_allowed: bool) -> bool:
    """Resign rules: never with -r 0, never before move 91, 10% (or -r x%) of winrate, and for
    White against a handicap with the default setting a threshold blended down by 1/(1+h)."""
    if not resign_allowed or params.resign_pct == 0:
        return False
    movenum = state.move_num
    if movenum <= NUM_INTERSECTIONS // 4:
        return False
    default = params.resign_pct < 0
    threshold = 0.01 * (10 if default else params.resign_pct)
    if besteval > threshold:
        return False
    if state.handicap > 0 and color == WHITE and default:
        handicap_threshold = threshold / (1 + state.handicap)
        blend = min(1.0, movenum / (0.6 * NUM_INTERSECTIONS))
        if besteval > blend * threshold + (1 - blend) * handicap_threshold:
            return False
    return True


def choose_move(root: UCTNode, state, color: int, params: SearchParams, *, nopass: bool,
                noresign: bool, allowed: Callable[[int, int], bool], uniform: Callable[[], float],
                log: Callable[[str], None]) -> int:
    """The move to play from a searched root (children sorted in place).

    `allowed(color, vertex)` says whether analysis tags permit a move (pass, resign included).
    """
    if not root.children:
        return PASS
    root.sort_children(color, params.lcb_min_visit_ratio)
    if state.move_num < params.random_count:
        randomize_first(root, params, uniform)
    first = root.children[0]
    best = first.move
    besteval = _eval_of(first, color, 0.5)
    if nopass:
        if best == PASS:
            best, besteval = _instead_of_pass(root, state, color, log,
                                              "Preferring not to pass.\n",
                                              "Pass is the only acceptable move.\n") \
                or (best, besteval)
    elif not params.dumbpass:
        score = state.final_score()
        relative = score if color == BLACK else -score
        if best == PASS:
            best, besteval = _pass_on_top(root, state, color, relative, besteval, log)
        elif state.last_move == PASS:
            if not allowed(color, PASS):
                log("Passing is forbidden, I'll play on.\n")
            elif relative < 0:
                log("Passing loses, I'll play on.\n")
            elif relative > 0:
                log("Passing wins, I'll pass out.\n")
                best = PASS
            elif besteval < 0.5:
                log("Passing draws, make it depend on evaluation.\n")
                best = PASS
    if best != PASS and should_resign(params, state, color, besteval,
                                      not noresign and allowed(color, RESIGN)):
        log(f"Eval ({100.0 * besteval:.2f}%) looks bad. Resigning.\n")
        best = RESIGN
    return best


def _instead_of_pass(root, state, color, log, found: str, missing: str):
    """The best move other than pass as (move, eval), saying `found`; None (saying
    `missing`) when there is none."""
    alt = nopass_child(root, state, color)
    if alt is None:
        log(missing)
        return None
    log(found)
    return alt.move, _eval_of(alt, color, 1.0)


def _pass_on_top(root, state, color, relative, besteval, log):
    """Pass came out best: play on when passing loses (or may draw against a winning try)."""
    best = PASS
    if relative < 0:
        log("Passing loses :-(\n")
        best, besteval = _instead_of_pass(root, state, color, log,
                                          "Avoiding pass because it loses.\n",
                                          "No alternative to passing.\n") or (best, besteval)
    elif relative > 0:
        log("Passing wins :-)\n")
    else:
        log("Passing draws :-|\n")
        alt = nopass_child(root, state, color)
        if alt is not None and alt.visits > 0 and alt.raw_eval(color) > 0.5:
            log("Avoiding pass because there could be a winning alternative.\n")
            best, besteval = alt.move, alt.raw_eval(color)
        if best == PASS:
            log("No seemingly better alternative to passing.\n")
    return best, besteval
