"""The search in steps (search/run.py): UCTSearch.start, SearchRun.prepare, collect /
apply_evaluations, UCTSearch.finish, as a driver that batches several games' leaves into one
network call (self-play) or acts between batches (dynamic komi) uses them.

References: `think` itself, on a deterministic evaluator (answers keyed by the position), must
build the same tree and choose the same move as the same batches driven step by step, alone or
interleaved with another game's, since every step is the same code."""

from __future__ import annotations

from conftest import position
from conftest import tree_nodes as _nodes
from fake_evaluator import HashEvaluator
from leelaz.game.coords import BLACK, WHITE
from leelaz.search.params import SearchParams
from leelaz.search.run import Limits, Progress
from leelaz.search.search import UCTSearch

VISITS = 120
BATCH = 8


def params() -> SearchParams:
    # No ramp (visits_per_pending_leaf=0): every batch asks for BATCH leaves, as the driver does.
    return SearchParams(max_visits=VISITS, batch_size=BATCH, visits_per_pending_leaf=0,
                        quiet=True, timemanage="off")


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
    run.run(Limits(VISITS, VISITS, 10**6), Progress())
    result = search.finish(run)
    assert seen == sorted(seen) and seen[-1] == VISITS and len(seen) >= VISITS // BATCH
    assert (result.move, result.playouts) == thought(state, WHITE)[:2]


def test_a_driver_with_the_runs_own_stopping_rules_plays_the_games_think_plays():
    """start_move / prepare / begin, then next_batch_size / collect / one call / apply /
    after_batch per round, over several moves of two games (tree reuse, the batch ramp,
    the early stop of the default time management): the moves and playouts of think()."""
    moves, visits = 4, 300

    def stepping_params():
        return SearchParams(max_visits=visits, batch_size=BATCH, quiet=True)

    starts = [position("D4 Q16"), position("Q4 D16 C3")]
    network = HashEvaluator(seed=4)
    searches = [UCTSearch(network, stepping_params(), rng=2) for _ in starts]
    states = [state.copy() for state in starts]
    played = [[] for _ in starts]
    runs = [None for _ in starts]
    while any(len(p) < moves for p in played):
        live, batches = [], []
        for i, search in enumerate(searches):
            if len(played[i]) >= moves:
                continue
            if runs[i] is None:
                runs[i], limits = search.start_move(states[i], time_limit_cs=10**6)
                runs[i].prepare()
                runs[i].begin(limits, Progress())
            live.append(i)
            batches.append(runs[i].collect(runs[i].next_batch_size()))
        evals = network.submit([st for b in batches for st in b.states]).result()
        for i, batch in zip(live, batches):
            mine, evals = evals[:len(batch.leaves)], evals[len(batch.leaves):]
            runs[i].apply_evaluations(batch, mine)
            if not runs[i].after_batch(batch.done + len(batch.leaves)):
                result = searches[i].finish(runs[i])
                played[i].append((result.move, result.playouts, result.root_visits))
                states[i].play(states[i].to_move, result.move)
                runs[i] = None
    for start, got in zip(starts, played):
        search = UCTSearch(HashEvaluator(seed=4), stepping_params(), rng=2)
        state, expected = start.copy(), []
        for _ in range(moves):
            result = search.think(state, time_limit_cs=10**6, use_clock=False)
            expected.append((result.move, result.playouts, result.root_visits))
            state.play(state.to_move, result.move)
        assert got == expected
    assert any(root < visits for p in played for _, _, root in p), played  # stopped early


def _children_signature(search: UCTSearch) -> list:
    """Every node's statistics and all its children's moves and priors, compact ones too."""
    out = []
    for node in _nodes(search.root):
        out.append((node.move, node.visits, node.black_wins, node.m2, node.net_eval,
                    node.expanded, node.children_moves(),
                    [c.prior for c in node.children] + list(node._priors)))
    return out


def test_leaves_of_several_runs_expanded_together_give_apply_s_trees():
    """expand_together (self-play's one expansion call per round) then apply, for three
    games with their own submits, one of them with --dumbpass (its own expand_batch call):
    the same trees, node counts, moves and playouts as think() on each game."""
    from leelaz.search.run import expand_together

    games = [(position("D4 Q16"), BLACK, False), (position("Q4 D16 C3"), WHITE, True),
             (position("C3"), WHITE, False)]

    def game_params(dumbpass):
        return SearchParams(max_visits=VISITS, batch_size=BATCH, visits_per_pending_leaf=0,
                            quiet=True, timemanage="off", dumbpass=dumbpass)

    network = HashEvaluator(seed=4)
    searches = [UCTSearch(network, game_params(dumbpass), rng=2) for _, _, dumbpass in games]
    runs = [search.start(state, color) for search, (state, color, _) in zip(searches, games)]
    for run in runs:
        run.prepare()
    together = 0
    while any(run.root.visits < VISITS for run in runs):
        live = [run for run in runs if run.root.visits < VISITS]
        batches = [run.collect(min(BATCH, VISITS - run.root.visits)) for run in live]
        pairs = []
        for run, batch in zip(live, batches):
            if batch.leaves:
                run.submit(batch)
                pairs.append((run, batch))
        expand_together(pairs)
        together += sum(batch.values is not None for _, batch in pairs)
        for run, batch in pairs:
            run.apply(batch)
    results = [search.finish(run) for search, run in zip(searches, runs)]
    assert together > 20
    for (state, color, dumbpass), search, result in zip(games, searches, results):
        alone = UCTSearch(HashEvaluator(seed=4), game_params(dumbpass), rng=2)
        expected = alone.think(state, color, time_limit_cs=10**6, use_clock=False)
        assert (result.move, result.playouts) == (expected.move, expected.playouts)
        assert search.nodes == alone.nodes
        assert _children_signature(search) == _children_signature(alone)


def test_only_a_device_s_search_asks_for_the_compiled_expansion(monkeypatch):
    """A pipelined search (an asynchronous evaluator, more than one leaf a batch) asks for
    the compiled kernels; a synchronous one (the CPU, where the network is the limit) never
    pays numba's import for them."""
    from fake_evaluator import AsyncHashEvaluator

    from leelaz.search import run as run_module

    asked = []
    monkeypatch.setattr(run_module, "request_compiled", lambda: asked.append(True))
    state = position("D4 Q16")
    UCTSearch(HashEvaluator(seed=4), params(), rng=2).think(state, BLACK, use_clock=False)
    assert asked == []
    UCTSearch(AsyncHashEvaluator(seed=4), params(), rng=2).think(state, BLACK,
                                                                  use_clock=False)
    assert asked == [True]


def test_a_snapshot_gives_every_root_child_as_move_info_does():
    """stats.snapshot makes an unvisited child's MoveInfo itself (a hot path of self-play);
    the reference is move_info, child by child, visited and unvisited alike."""
    from leelaz.search.stats import move_info, snapshot

    search = UCTSearch(HashEvaluator(seed=4), params(), rng=2)
    search.think(position("D4 Q16 C3"), WHITE, time_limit_cs=10**6, use_clock=False)
    root = search.root
    visited = [c for c in root.children if c.visits]
    assert visited and len(visited) < len(root.children)
    got = snapshot(root, WHITE, 3).children
    assert got == [move_info(c, WHITE) for c in root.children]
