"""The search in steps (search/run.py): UCTSearch.start, SearchRun.prepare, collect /
apply_evaluations, UCTSearch.finish, as a driver that batches several games' leaves into one
network call (self-play) or acts between batches (dynamic komi) uses them.

References: `think` itself, on a deterministic evaluator (answers keyed by the position), must
build the same tree and choose the same move as the same batches driven step by step, alone or
interleaved with another game's, since every step is the same code."""

from __future__ import annotations

from fake_evaluator import HashEvaluator
from leelaz.game.coords import BLACK, WHITE, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch

VISITS = 120
BATCH = 8


def params() -> SearchParams:
    # No ramp (visits_per_pending_leaf=0): every batch asks for BATCH leaves, as the driver does.
    return SearchParams(max_visits=VISITS, batch_size=BATCH, visits_per_pending_leaf=0,
                        quiet=True, timemanage="off")


def position(moves: str) -> GameState:
    state = GameState()
    color = BLACK
    for move in moves.split():
        state.play(color, parse_gtp_vertex(move))
        color = 1 - color
    return state


def signature(search: UCTSearch) -> list:
    out, stack = [], [search.root]
    while stack:
        node = stack.pop()
        out.append((node.move, node.visits, node.black_wins, node.status, len(node.children)))
        stack.extend(node.children)
    return out


def thought(state, color):
    search = UCTSearch(HashEvaluator(seed=4), params(), rng=2)
    result = search.think(state, color, time_limit_cs=10**6, use_clock=False)
    return result.move, result.playouts, signature(search)


def test_stepped_searches_of_two_games_in_one_network_call_equal_think():
    games = [(position("D4 Q16"), BLACK), (position("Q4 D16 C3"), WHITE)]
    network = HashEvaluator(seed=4)
    searches = [UCTSearch(network, params(), rng=2) for _ in games]
    runs = [search.start(state, color) for search, (state, color) in zip(searches, games)]
    for run in runs:
        run.prepare()
    calls = 0
    while any(run.root.visits < VISITS for run in runs):
        live = [run for run in runs if run.root.visits < VISITS]
        batches = [run.collect(min(BATCH, VISITS - run.root.visits)) for run in live]
        states = [st for batch in batches for st in batch.states]
        evals = network.submit(states).result() if states else []
        calls += 1
        for run, batch in zip(live, batches):
            mine, evals = evals[:len(batch.leaves)], evals[len(batch.leaves):]
            run.apply_evaluations(batch, mine)
    results = [search.finish(run) for search, run in zip(searches, runs)]
    for (state, color), search, result in zip(games, searches, results):
        move, playouts, tree = thought(state, color)
        assert (result.move, result.playouts) == (move, playouts)
        assert signature(search) == tree
        assert all(node.virtual_loss == 0 for node in _nodes(search.root))
    assert calls < sum(r.playouts for r in results) / BATCH + 2  # really one call per round


def test_between_batches_runs_after_every_batch_and_may_stop_nothing():
    state, seen = position("D4"), []
    search = UCTSearch(HashEvaluator(seed=4), params(), rng=2)
    run = search.start(state, WHITE)
    run.between_batches = lambda r: seen.append(r.root.visits)
    run.prepare()
    from leelaz.search.run import Limits, Progress

    run.run(Limits(VISITS, VISITS, 10**6), Progress())
    result = search.finish(run)
    assert seen == sorted(seen) and seen[-1] == VISITS and len(seen) >= VISITS // BATCH
    assert (result.move, result.playouts) == thought(state, WHITE)[:2]


def _nodes(root):
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)
