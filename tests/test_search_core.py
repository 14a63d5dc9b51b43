"""The compiled search core (search/core/) against the Python search, its reference.

The same search (seed, parameters, evaluator, position) is run twice, once on the Python
search and once on the core (LEELAZ_SEARCH_CORE=python / compiled), and the two trees must be
the same node for node: moves, visits, statuses, child counts, the values backed up (to 1e-9),
and the same chosen move, winrate and principal variation. The positions are the 9-dan
games' (the `tygem_dir` fixture) at several moves, the networks a tame random one (NumPy) and
the shipped 6x128; batches of 1 (`-t 1`), 4, 8 and 16, pipelined or not, with and without root
noise; genmove, lz-genmove_analyze and lz-analyze (pondering) with avoid/allow and minmoves
(the same info line at every report), self-play's stepped games (the same SGFs and chunks);
then tree reuse, time management's pruning, the hand-over under memory pressure, the
switch from the Python search when the kernels get ready mid-call, and GTP's calls, which
write back only what their end reads and carry the rest to the next call (the same moves,
records and trees). The core's board is checked against game/board.py move for move on
whole games (captures, ko, suicide); the calls it does not cover are shown to run on the
Python search; numba's cache: a fresh install compiles in a child process, a quit during it
is clean, no writable cache is no failure."""

from __future__ import annotations

import dataclasses
import gzip
import random
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import requires  # noqa: E402

requires("numba")  # a dependency; a broken install skips here, strict mode fails

from leelaz.backends import create_backend  # noqa: E402
from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402
from leelaz.backends.weights import load_weights  # noqa: E402
from leelaz.game.board import Board  # noqa: E402
from leelaz.game.coords import BLACK, EMPTY, PASS  # noqa: E402
from leelaz.game.sgf import parse_game  # noqa: E402
from leelaz.game.sgf_replay import state_from_sgf  # noqa: E402
from leelaz.nn.cache import NNCache  # noqa: E402
from leelaz.nn.features import SYMMETRIC_POINTS  # noqa: E402
from leelaz.nn.network import Network  # noqa: E402
from leelaz.search import merge, stats  # noqa: E402
from leelaz.search.core import arrays as core_arrays  # noqa: E402
from leelaz.search.core import run as core_run  # noqa: E402
from leelaz.search.params import SearchParams  # noqa: E402
from leelaz.search.search import UCTSearch  # noqa: E402
from fake_evaluator import FakeEvaluator, HashEvaluator  # noqa: E402

@pytest.fixture(autouse=True, scope="module")
def compiled_core():
    """The kernels compiled (or loaded from numba's cache) before the searches: until they
    are, a search runs on the Python search."""
    assert core_run.kernels(wait=True) is not None


SHIPPED = Path(__file__).resolve().parent.parent / "weights" / "leelaz-6x128.txt.gz"


def _games(tygem_dir, count: int) -> list[str]:
    path = sorted(tygem_dir.glob("*.sgf.gz"))[0]
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        lines = [line for line in f if line.startswith("(")]
    return random.Random(7).sample(lines, count)


@pytest.fixture(scope="module")
def positions(tygem_dir):
    """Real positions: three games at the opening, the middle game and late."""
    out = []
    for text, move in zip(_games(tygem_dir, 3), (30, 120, 210)):
        game = parse_game(text)
        out.append(state_from_sgf(game, min(move, len(game.mainline()) - 1)))
    return out


@pytest.fixture(scope="module")
def tiny_net(random_weights):
    """A fresh tame random network for each search: a Network draws its random symmetries
    (the root's evaluation) from its own generator, so both searches get the same draws."""
    path = random_weights(1, 16)
    return lambda: Network.from_file(path, backend="numpy", seed=1)


def _signature(node, depth=0, out=None) -> list:
    """Every inflated node, depth first: what a tree is, compared across the two searches."""
    out = [] if out is None else out
    out.append((depth, node.move, node.visits, round(node.black_wins, 9), node.status,
                node.child_count(), round(node.prior, 12), node.expanded))
    for child in node.children:
        _signature(child, depth + 1, out)
    return out


class _Async:
    """The network as an asynchronous evaluator (a GPU's), so that the search pipelines."""

    asynchronous = True

    def __init__(self, net):
        self.net = net

    @property
    def reads_boards_before(self):
        return self.net.reads_boards_before

    def submit(self, states, *args, **kwargs):
        return self.net.submit(states, *args, **kwargs)

    def evaluate(self, states, *args, **kwargs):
        return self.net.evaluate(states, *args, **kwargs)


def _search(monkeypatch, mode, net, state, *, visits=300, batch=8, noise=False,
            asynchronous=False, seed=1, **params):
    with monkeypatch.context() as patched:
        return _search_in(patched, mode, net, state, visits=visits, batch=batch, noise=noise,
                          asynchronous=asynchronous, seed=seed, **params)


def _search_in(monkeypatch, mode, net, state, *, visits, batch, noise, asynchronous, seed,
               **params):
    monkeypatch.setenv(core_run.CORE_VARIABLE, mode)
    net = net()
    net.cache = NNCache(100_000)
    evaluator = _Async(net) if asynchronous else net
    p = SearchParams(max_visits=visits, batch_size=batch, quiet=True, noise=noise,
                     timemanage=params.pop("timemanage", "off"), **params)
    search = UCTSearch(evaluator, p, rng=seed)
    used = []
    original = core_run.CoreRun.core_collect

    def spy(run, limit):
        used.append(limit)
        return original(run, limit)

    monkeypatch.setattr(core_run.CoreRun, "core_collect", spy)
    result = search.think(state, state.to_move, use_clock=False)
    return search, result, used


def _same_search(monkeypatch, net, state, **kwargs):
    py, py_result, py_used = _search(monkeypatch, "python", net, state, **kwargs)
    co, co_result, co_used = _search(monkeypatch, "compiled", net, state, **kwargs)
    assert not py_used and co_used, "the switch chose the wrong search"
    assert _signature(co.root) == _signature(py.root)
    assert co_result.move == py_result.move
    assert co.root.visits == py.root.visits and co.nodes == py.nodes
    assert co.playouts == py.playouts
    color = state.to_move
    assert abs(co.root.raw_eval(color) - py.root.raw_eval(color)) < 1e-9
    assert (stats.principal_variation(co.root, color)
            == stats.principal_variation(py.root, color))
    return py, co


@pytest.mark.parametrize("batch", [1, 4, 16])
@pytest.mark.parametrize("noise", [False, True])
def test_the_same_trees_on_real_positions(monkeypatch, tiny_net, positions, batch, noise):
    for state in positions:
        _same_search(monkeypatch, tiny_net, state, visits=400, batch=batch, noise=noise,
                     fixed_symmetry=0)


def _tied_value(state) -> float:
    """Values from few levels, so that children often score alike."""
    return 0.3 + 0.1 * ((state.board.hash >> 7) % 5)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("noise", [False, True])
def test_the_same_trees_where_scores_tie(monkeypatch, positions, batch, noise):
    """Uniform priors and values of few levels: ties everywhere, decided by child order
    (the first best wins) and, at the root, by RootSelector's rule."""
    for state in positions:
        _same_search(monkeypatch, lambda: FakeEvaluator(value_fn=_tied_value), state,
                     visits=300, batch=batch, noise=noise)
    _same_search(monkeypatch, lambda: HashEvaluator(3), positions[2], visits=300,
                 batch=batch, noise=noise, dumbpass=True)


@pytest.mark.parametrize("noise", [False, True])
def test_the_same_trees_pipelined(monkeypatch, tiny_net, positions, noise):
    for state in positions:
        _same_search(monkeypatch, tiny_net, state, visits=400, batch=16, noise=noise,
                     asynchronous=True, fixed_symmetry=0)


def test_the_same_trees_with_the_shipped_network(monkeypatch, positions):
    if not SHIPPED.exists():
        pytest.fail(f"{SHIPPED} is part of the repository")
    weights = load_weights(str(SHIPPED))

    def net():
        return Network(weights, create_backend("numpy", weights), seed=1)
    for state, batch in zip(positions[1:], (1, 8)):
        _same_search(monkeypatch, net, state, visits=120, batch=batch, noise=batch > 1,
                     fixed_symmetry=0)


class _Clock:
    """A clock that moves 20 ms a batch (SearchRun.after_batch), so that the progress
    reports of lz-analyze / lz-genmove_analyze (one a batch at interval 1) and the batch
    sizes while pondering (the measured time per leaf stays 0) are the same in both
    searches, whatever the machine's speed."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def _analyze(monkeypatch, mode, net, state, tags_text, *, genmove, visits=300, batch=8,
             noise=False, seed=1):
    """One lz-analyze (a ponder) or lz-genmove_analyze (a think) with these tags, as the
    GTP command runs it: the info lines of every report, the final result, the search."""
    from types import SimpleNamespace

    from leelaz.gtp.analysis import format_info_line, parse_analyze_tags
    from leelaz.search import run as search_run
    from leelaz.search import search as search_module

    tags = parse_analyze_tags(tags_text.split(), state.to_move, state.move_num)
    clock = _Clock()
    fake_time = SimpleNamespace(monotonic=clock.monotonic)
    lines = []
    with monkeypatch.context() as patched:
        patched.setattr(search_run, "time", fake_time)
        patched.setattr(search_module, "time", fake_time)
        after_batch = search_run.SearchRun.after_batch

        def ticking(run, did):
            clock.now += 0.02
            return after_batch(run, did)

        patched.setattr(search_run.SearchRun, "after_batch", ticking)
        patched.setenv(core_run.CORE_VARIABLE, mode)
        evaluator = net()
        evaluator.cache = NNCache(100_000)
        search = UCTSearch(evaluator, SearchParams(max_visits=visits, batch_size=batch,
                                                   quiet=True, noise=noise, timemanage="off",
                                                   fixed_symmetry=0), rng=seed)
        used = []
        original = core_run.CoreRun.core_collect

        def spy(run, limit):
            used.append(limit)
            return original(run, limit)

        patched.setattr(core_run.CoreRun, "core_collect", spy)

        def report(result):
            lines.append(format_info_line(result, tags.min_moves))

        if genmove:
            result = search.think(state, tags.who, restrictions=tags, on_progress=report,
                                  progress_interval_cs=tags.interval_cs, use_clock=False,
                                  time_limit_cs=10**7)
        else:
            state = state.copy()
            state.set_to_move(tags.who)
            result = search.ponder(state, should_stop=lambda: False, on_progress=report,
                                   progress_interval_cs=tags.interval_cs, restrictions=tags)
    return search, result, lines + [format_info_line(result, tags.min_moves)], used


#: lz-analyze tags: every batch reported, at least 8 moves listed; Black may not play the
#: 4-4 and 3-4 points of one corner (nor anywhere on the left edge) for its next 3 moves,
#: White only on the right half for its next 2. `{}` is the side analyzed.
RESTRICTED = "{} interval 1 minmoves 8 avoid b D4,C4,D3,A1:A19 3 allow w K1:T19 2"
PLAIN = "{} 1 minmoves 5"


def _same_analysis(monkeypatch, net, state, tags, **kwargs):
    color = "b" if state.to_move == BLACK else "w"
    py, py_result, py_lines, py_used = _analyze(monkeypatch, "python", net, state,
                                                tags.format(color), **kwargs)
    co, co_result, co_lines, co_used = _analyze(monkeypatch, "compiled", net, state,
                                                tags.format(color), **kwargs)
    assert not py_used and co_used, "the switch chose the wrong search"
    assert len(py_lines) > 3  # a report a batch, then the final one
    assert co_lines == py_lines
    assert _signature(co.root) == _signature(py.root)
    assert co.root.visits == py.root.visits and co.nodes == py.nodes
    assert co_result.move == py_result.move
    return py, co, py_lines


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("genmove", [False, True], ids=["lz-analyze", "lz-genmove_analyze"])
def test_the_same_analysis_with_avoid_and_allow(monkeypatch, tiny_net, positions, batch,
                                                noise, genmove):
    """lz-analyze (pondering) and lz-genmove_analyze with avoid/allow and minmoves on real
    positions: the same info line at every report, the same tree, the same move; and the
    restrictions do bite (no avoided move below the root, none outside the allowed half)."""
    for state in positions[:2]:
        py, co, lines = _same_analysis(monkeypatch, tiny_net, state, RESTRICTED,
                                       genmove=genmove, batch=batch, noise=noise)
        assert " D4 " not in lines[-1] and "info move D4 " not in lines[-1]


@pytest.mark.parametrize("batch", [1, 16])
def test_the_same_pondering(monkeypatch, tiny_net, positions, batch):
    """Pondering (lz-analyze without restrictions) to a visit limit, then a genmove on the
    kept tree: the same reports, trees and moves."""
    for state in positions:
        _same_analysis(monkeypatch, tiny_net, state, PLAIN, genmove=False, batch=batch,
                       noise=batch > 1, visits=400)


def test_restrictions_reach_below_the_root(monkeypatch, tiny_net, positions):
    """Black avoids the left half for 3 moves: no Black child made on it at depths 0 and 2
    of the core's tree, and White's replies (depth 1) are unrestricted."""
    state = positions[1]
    if state.to_move != BLACK:
        state = state.copy()
        state.set_to_move(BLACK)
    co, _, _, _ = _analyze(monkeypatch, "compiled", tiny_net, state,
                           "b 1 avoid b A1:J19 3", genmove=False, visits=300, batch=8)
    from leelaz.game.coords import xy
    left = [0, 0, 0]
    white_left = 0
    stack = [(co.root, 0)]
    while stack:
        node, depth = stack.pop()
        for move in node.children_moves():
            if move >= 0 and xy(move)[0] < 9:
                if depth % 2 == 0 and depth < 3:
                    left[depth] += 1
                elif depth == 1:
                    white_left += 1
        stack += [(c, depth + 1) for c in node.children if depth < 2]
    assert left == [0, 0, 0] and white_left > 0


def test_the_same_trees_after_tree_reuse(monkeypatch, tiny_net, positions):
    trees = {}
    for mode in ("python", "compiled"):
        monkeypatch.setenv(core_run.CORE_VARIABLE, mode)
        net = tiny_net()
        net.cache = NNCache(100_000)
        search = UCTSearch(net, SearchParams(max_visits=300, batch_size=8, quiet=True,
                                                  timemanage="off", fixed_symmetry=0), rng=3)
        state = positions[1].copy()
        moves = []
        for _ in range(3):  # think, play the chosen move, think again on the kept subtree
            result = search.think(state, state.to_move, use_clock=False)
            moves.append(result.move)
            state.play(state.to_move, result.move)
        trees[mode] = (moves, _signature(search.root))
    assert trees["compiled"] == trees["python"]


def test_a_reused_tree_goes_into_the_arrays_child_by_child(monkeypatch, tiny_net, positions):
    """CoreTree.from_root (bytes joined per node's compact arrays) against the tree spelled
    out child by child, breadth first: each node's statistics and child range, each child's
    move, prior and node row (-1 uninflated), on a Python search's tree after two moves of
    reuse (nodes fully, partly and not inflated)."""
    from leelaz.search.core.arrays import CoreTree

    monkeypatch.setenv(core_run.CORE_VARIABLE, "python")
    search = UCTSearch(tiny_net(), SearchParams(max_visits=300, batch_size=8, quiet=True,
                                                timemanage="off"), rng=3)
    state = positions[1].copy()
    for _ in range(2):
        state.play(state.to_move, search.think(state, state.to_move, use_clock=False).move)
    search.think(state, state.to_move, use_clock=False)
    nodes, rows, moves, priors, kids = [search.root], [], [], [], []
    for u in nodes:  # grows as children are met: breadth first
        inflated = len(u.children) if u.expanded else 0
        count = (len(u._moves) or inflated) if u.expanded else 0
        rows.append((u.visits, u.black_wins, u.move, u.expanded, len(moves), count, inflated))
        for k in range(count):
            if k < inflated:
                c = u.children[k]
                kids.append(len(nodes))
                nodes.append(c)
                moves.append(c.move)
                priors.append(c.prior)
            else:
                kids.append(-1)
                moves.append(u._moves[k])
                priors.append(u._priors[k])
    assert any(0 < r[6] < r[5] for r in rows) and any(r[6] == r[5] > 0 for r in rows)
    tree = CoreTree.from_root(search.root)
    n, m = int(tree.nodes_used[0]), int(tree.children_used[0])
    assert (n, m) == (len(nodes), len(moves)) and tree.objects == nodes
    got = list(zip(tree.visits[:n].tolist(), tree.wins[:n].tolist(), tree.nmove[:n].tolist(),
                   tree.expanded[:n].tolist(), tree.first[:n].tolist(),
                   tree.count[:n].tolist(), tree.inflated[:n].tolist()))
    want = [(v, w, mv, e, first if e else 0, count, inf)
            for v, w, mv, e, first, count, inf in rows]
    assert got == want
    assert tree.cnode[:m].tolist() == kids and tree.cmove[:m].tolist() == moves
    assert np.array_equal(tree.cprior[:m], np.array(priors, np.float32))


def _same_arrays(a, b) -> None:
    n, m = int(a.nodes_used[0]), int(a.children_used[0])
    assert (n, m) == (int(b.nodes_used[0]), int(b.children_used[0]))
    for name, _ in core_arrays._NODE_FIELDS:
        assert np.array_equal(getattr(a, name)[:n], getattr(b, name)[:n]), name
    for name, _ in core_arrays._CHILD_FIELDS:
        assert np.array_equal(getattr(a, name)[:m], getattr(b, name)[:m]), name
    assert len(a.objects) == len(b.objects) and all(
        x is y for x, y in zip(a.objects, b.objects))


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("noise", [False, True])
def test_the_kept_tree_copied_is_the_tree_read_from_the_nodes(monkeypatch, tiny_net,
                                                               positions, batch, noise):
    """CoreTree.from_kept (the last call's arrays, the rows below the root's children
    copied by the kernels) against CoreTree.from_root (every row read from the UCTNodes)
    at each reuse: genmoves with the tree reused two moves down, a ponder on the
    opponent's turn (one move down) and a genmove on the position just analysed (the same
    root); every field of every row, and the same UCTNode behind each row."""
    CoreTree = core_arrays.CoreTree
    copied = []
    original = CoreTree.from_kept.__func__

    def checked(cls, kept, root, kernels):
        tree = original(cls, kept, root, kernels)
        if tree is not None:
            _same_arrays(tree, CoreTree.from_root(root))
            copied.append((int(tree.nodes_used[0]), len(root.children)))
        return tree

    monkeypatch.setattr(CoreTree, "from_kept", classmethod(checked))
    search = UCTSearch(tiny_net(), SearchParams(max_visits=400, batch_size=batch, quiet=True,
                                                timemanage="off", noise=noise), rng=5)
    state = positions[2].copy()
    for _ in range(2):  # a genmove, its move and the reply the tree expected: two moves down
        move = search.think(state, state.to_move, use_clock=False).move
        node = next(c for c in search.root.children if c.move == move)
        state.play(state.to_move, move)
        state.play(state.to_move, max(node.children, key=lambda c: c.visits).move)
    state.play(state.to_move, search.think(state, state.to_move, use_clock=False).move)
    search.ponder(state, should_stop=lambda: False, max_visits=600)  # one move down
    state.play(state.to_move, search.think(state, state.to_move, use_clock=False).move)
    search.ponder(state, should_stop=lambda: False, max_visits=1000)
    search.think(state, state.to_move, use_clock=False)  # the root just analysed
    assert len(copied) == 6  # every call after the first
    assert any(n > k + 1 for n, k in copied)  # rows below the root's children were copied


def test_the_kept_tree_goes_to_the_next_call_only(monkeypatch, tiny_net, positions):
    """The arrays kept after a call on the core are the next call's only: a call on the
    Python search in between (which changes the UCTNodes) leaves none for the call after."""
    search = UCTSearch(tiny_net(), SearchParams(max_visits=200, batch_size=4, quiet=True,
                                                timemanage="off"), rng=2)
    state = positions[1].copy()
    state.play(state.to_move, search.think(state, state.to_move, use_clock=False).move)
    assert search._core_kept is not None
    monkeypatch.setenv(core_run.CORE_VARIABLE, "python")
    state.play(state.to_move, search.think(state, state.to_move, use_clock=False).move)
    assert search._core_kept is None
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    used = []
    original = core_arrays.CoreTree.from_kept.__func__
    monkeypatch.setattr(core_arrays.CoreTree, "from_kept", classmethod(
        lambda cls, *args: used.append(1) or original(cls, *args)))
    search.think(state, state.to_move, use_clock=False)
    assert not used and search._core_kept is not None
    search.reset()
    assert search._core_kept is None


def test_tree_statistics_on_the_arrays_are_the_walks(monkeypatch, tiny_net, positions):
    """core/kernels.tree_stats (a genmove's `average depth` and `non leaf nodes` lines)
    counts what stats.tree_stats_counts counts walking the UCTNodes, on trees the core grew
    from real positions with and without reuse; a run without the core's tree gives None."""
    from leelaz.search.run import Progress

    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    assert core_run.kernels(wait=True) is not None
    checked = 0
    for state in positions:
        search = UCTSearch(tiny_net(), SearchParams(max_visits=500, batch_size=8, quiet=True,
                                                    timemanage="off"), rng=3)
        state = state.copy()
        for _ in range(2):
            run, limits = search.start_move(state, state.to_move)
            run.prepare()
            run.run(limits, Progress())
            assert isinstance(run, core_run.CoreRun) and run.tree is not None
            got = core_run.tree_stats_counts(run, run.root)
            assert got == stats.tree_stats_counts(run.root) and got[1] > 10
            checked += 1
            state.play(state.to_move, search.finish(run).move)
    assert checked == 2 * len(positions)
    assert core_run.tree_stats_counts(object(), search.root) is None


def test_root_contention_on_the_arrays_is_prune_noncontenders():
    """core/kernels.root_contention against search/timemanage.prune_noncontenders on made-up
    root children (visits from none to past the t table, wins, M2, some INVALID or PRUNED):
    the same count and, when pruning, the same statuses, for both colours and several
    playouts left."""
    from leelaz.search.core.run import _quantiles
    from leelaz.search.node import UCTNode
    from leelaz.search.select import ACTIVE, INVALID, PRUNED
    from leelaz.search.timemanage import prune_noncontenders

    kernels = core_run.kernels(wait=True)
    rng = random.Random(4)
    for trial in range(300):
        k = rng.randint(1, 40)
        root = UCTNode()
        root.expanded = True
        for i in range(k):
            c = UCTNode(i, rng.random())
            c.visits = rng.choice([0, 0, 1, 2, 3, rng.randint(1, 50), rng.randint(1, 3000)])
            c.black_wins = c.visits * rng.random()
            c.m2 = rng.random() * c.visits / 4 + 1e-4
            c.status = rng.choice([ACTIVE] * 6 + [PRUNED, INVALID])
            root.children.append(c)
        root.visits = sum(c.visits for c in root.children) + 1
        rows = np.arange(1, k + 1)
        cnode = np.concatenate(([0] * 5, rows)).astype(np.int32)  # the range starts at 5
        visits = np.array([root.visits] + [c.visits for c in root.children], np.int64)
        wins = np.array([0.0] + [c.black_wins for c in root.children])
        m2 = np.array([1e-4] + [c.m2 for c in root.children])
        for color in (BLACK, 1 - BLACK):
            for left in (0, rng.randint(0, 100), rng.randint(0, 5000)):
                for prune in (False, True):
                    status = np.array([0] + [c.status for c in root.children], np.int8)
                    before = [c.status for c in root.children]
                    want = prune_noncontenders(root, color, left, prune)
                    got = kernels.root_contention(color != BLACK, left, prune, 5, k, cnode,
                                                  visits, wins, m2, status,
                                                  _quantiles(int(root.visits)))
                    assert got == want, (trial, color, left, prune)
                    assert status[1:].tolist() == [c.status for c in root.children]
                    for c, st in zip(root.children, before):
                        c.status = st


def test_time_management_prunes_the_same_children(monkeypatch, tiny_net, positions):
    """timemanage on: children that cannot catch up with the visits left are PRUNED (and
    skipped by selection) in both; the trees stay the same."""
    py, co = _same_search(monkeypatch, tiny_net, positions[0], visits=600, batch=4,
                          timemanage="on", fixed_symmetry=0)
    assert py.root.visits == 600


def test_memory_pressure_hands_the_tree_to_the_python_search(monkeypatch, tiny_net,
                                                            positions):
    """Past half the tree's memory, expansions are trimmed: the core hands its tree over,
    and the result is the Python search's."""
    handed = []
    original = core_run.CoreRun._hand_over

    def spy(run):
        handed.append(run.root.visits)
        original(run)

    monkeypatch.setattr(core_run.CoreRun, "_hand_over", spy)
    from leelaz.memory import tree_bytes
    limit = 2 * tree_bytes(40_000, 150)  # trimmed from about a hundred visits on
    py, co = _same_search(monkeypatch, tiny_net, positions[1], visits=400, batch=8,
                          max_tree_bytes=limit, fixed_symmetry=0)
    assert handed, "the core never handed over"


def test_board_play_is_the_python_boards(tygem_dir):
    """The kernels' board against game/board.py on whole games and on random moves that
    capture, take ko and commit suicide: the same stones and ko hash after every move."""
    kernels = core_run.kernels()
    delta = core_run._delta()
    rng = random.Random(5)
    games = [parse_game(text) for text in _games(tygem_dir, 4)]
    sequences = [[(c, v) for c, v in state_from_sgf(g).moves()] for g in games]
    for _ in range(3):  # random games: many captures and suicides
        board = Board()
        seq = []
        color = BLACK
        for _ in range(400):
            empty = [v for v, c in enumerate(board.square) if c == EMPTY]
            v = rng.choice(empty + [PASS]) if empty else PASS
            seq.append((color, v))
            board.play_move(color, v)
            color = 1 - color
        sequences.append(seq)
    for seq in sequences:
        board = Board()
        rows = core_run._board_rows(board)
        for color, v in seq:
            board.play_move(color, v)
            kernels.play(*rows, 0, color, v, delta)
            sq, par, nxt, libs, stn, meta = rows
            assert bytes(sq[0]) == bytes(board.square)
            assert meta[0, 2] == core_run._signed(board.ko_hash)
            assert meta[0, 0] == board.ko_move and meta[0, 1] == board.passes
            assert list(meta[0, 3:5]) == board.prisoners
            assert (libs[0][par[0][np.array(board.square) < 2]]
                    == np.array([board.libs[board.parent[p]] for p in range(441)
                                 if board.square[p] < 2])).all()


def test_leaf_hashes_are_the_python_boards_full_hashes(tygem_dir):
    """leaf_inputs.leaf_hashes from a root's board and a leaf's kernel meta row is the
    Board.hash that game/board.py keeps move by move (its pass, ko, prisoner and
    side-to-move terms), from roots at several moves of games with captures, kos, suicides
    and passes, searched for the side to move or for the other colour."""
    from leelaz.search.core.leaf_inputs import leaf_hashes

    kernels = core_run.kernels()
    delta = core_run._delta()
    rng = random.Random(11)
    games = [[(c, v) for c, v in state_from_sgf(parse_game(t)).moves()]
             for t in _games(tygem_dir, 3)]
    random_games = []
    for _ in range(2):
        board, seq, color = Board(), [], BLACK
        for _ in range(300):
            empty = [v for v, c in enumerate(board.square) if c == EMPTY]
            v = rng.choice(empty + [PASS] * 3) if empty else PASS
            seq.append((color, v))
            board.play_move(color, v)
            color = 1 - color
        random_games.append(seq)
    checked = 0
    for seq in games + random_games:
        for start in (0, 37, 150):
            if start >= len(seq):
                continue
            root = Board()
            for color, v in seq[:start]:
                root.play_move(color, v)
            first = seq[start][0]
            for searched in (first, 1 - first):
                board = root.copy()
                rows = core_run._board_rows(root)
                color = searched
                for length, (_, v) in enumerate(seq[start:start + 40], start=2):
                    if v != PASS and board.square[v] != EMPTY:
                        break  # the other colour's move would not be legal here
                    board.play_move(color, v)
                    kernels.play(*rows, 0, color, v, delta)
                    got = leaf_hashes(kernels, root, searched, rows[5], np.array([length]))
                    assert got == [board.hash], (start, searched, length)
                    checked += 1
                    color = 1 - color
    assert checked > 500


def test_leaf_histories_are_each_leafs_last_eight_positions():
    """kernels.leaf_histories, the core's copy of a batch's input histories, against the
    history spelled out leaf by leaf: slot j is the path's move moves - 1 - j (kept at ring
    slot k % 8) while the path has one, then the root's history from its newest; paths of 1
    to 20 moves."""
    from leelaz.search.core.leaf_inputs import HISTORY

    rng = np.random.default_rng(5)
    n = 40
    hist = rng.integers(0, 4, (n, HISTORY, 441), dtype=np.uint8)
    root = rng.integers(0, 4, (HISTORY, 441), dtype=np.uint8)
    moves = rng.integers(1, 21, n)
    moves[:3] = [1, 8, 9]
    got = np.empty((n, HISTORY, 441), np.uint8)
    core_run.kernels(wait=True).leaf_histories(n, hist, moves + 1, root, got)
    for i in range(n):
        path = [hist[i, k % HISTORY] for k in range(moves[i] - 1, -1, -1)][:HISTORY]
        want = np.concatenate(path + [root[j] for j in range(HISTORY - len(path))])
        assert np.array_equal(got[i].reshape(-1), want), (i, moves[i])


def test_leaf_states_give_the_network_what_python_gamestates_give(monkeypatch, tiny_net,
                                                                   positions):
    """The same batch of leaves made both ways (core/leaf_inputs.py from the kernels'
    arrays, and GameStates of Python Boards as the Python search makes them): the same
    packed inputs and input planes under every symmetry, cache keys, sides to move and move
    numbers."""
    from leelaz.nn.features import input_planes_batch, packed_inputs
    from leelaz.nn.network import cache_key

    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    for state in positions:
        search = UCTSearch(tiny_net(), SearchParams(max_visits=400, batch_size=16, quiet=True,
                                                    noise=True), rng=3)
        run = core_run.CoreRun.replacing(search.start(state))
        run.prepare()
        assert run.tree is not None and run._leaf_inputs is not None
        for _ in range(6):  # a few batches, so that paths grow deep
            batch = run.core_collect(16)
            n = len(batch.leaves)
            if not n:
                continue
            assert batch.histories is not None  # the Network takes the arrays
            fast = batch.states  # the arrays as LeafStates
            slow = [leaf[1] for leaf in run._python_states(batch.buffers, n)]
            syms = [i % 8 for i in range(n)]
            assert packed_inputs(fast, syms) == packed_inputs(slow, syms)
            planes = [np.zeros((n, 18, 361), np.float32) for _ in range(2)]
            input_planes_batch(fast, planes[0], syms)
            input_planes_batch(slow, planes[1], syms)
            assert np.array_equal(planes[0], planes[1])
            assert [cache_key(s) for s in fast] == [cache_key(s) for s in slow]
            assert [s.to_move for s in fast] == [s.to_move for s in slow]
            assert [s.move_num for s in fast] == [s.move_num for s in slow]
            run.submit(batch)
            run.core_apply(batch)


def test_the_networks_answers_for_arrays_are_its_answers_for_states(tiny_net, positions):
    """Network.submit_histories (a batch as the core's arrays) against Network.submit (the
    same batch as GameStates of Python Boards): the same policies and winrates, bit for bit,
    with the same random symmetries drawn, a fixed one, cache hits among misses, and the
    same cache afterwards; through the packed inputs and through the planes."""
    from leelaz.nn.network import cache_key

    for packed in (False, True):
        for state in positions[:3]:
            search = UCTSearch(tiny_net(), SearchParams(max_visits=400, batch_size=16,
                                                        quiet=True), rng=3)
            run = core_run.CoreRun.replacing(search.start(state))
            run.prepare()
            for step in range(4):
                batch = run.core_collect(16)
                n = len(batch.leaves)
                if not n:
                    continue
                slow = [leaf[1] for leaf in run._python_states(batch.buffers, n)]
                by_states, by_arrays = tiny_net(), tiny_net()
                for net in (by_states, by_arrays):
                    net._rng = random.Random(step)  # the same symmetries drawn
                    if packed:
                        net.backend.__class__ = _PackedNumpy
                    net.evaluate(slow[::3])  # some hits in the cache
                symmetry = None if step % 2 else step
                evals = by_states.submit(slow, symmetry).result()
                answer = by_arrays.submit_histories(*batch.histories,
                                                    symmetry=symmetry).result()
                assert len(answer) == n
                assert np.array_equal(answer.policies, np.stack([e.policy for e in evals]))
                assert answer.winrates.tolist() == [e.winrate for e in evals]
                assert by_arrays.evaluations == by_states.evaluations
                for st in slow:
                    a = by_arrays.cache.lookup(cache_key(st))
                    b = by_states.cache.lookup(cache_key(st))
                    assert np.array_equal(a.policy, b.policy) and a.winrate == b.winrate
                run.submit(batch)
                run.core_apply(batch)


class _PackedNumpy(NumpyBackend):
    """The NumPy backend taking packed positions, as a GPU's does (planes made here)."""

    @property
    def accepts_packed_inputs(self):
        return True

    def submit_packed(self, packed, batch):
        from leelaz.backends.base import PACKED_ROW

        boxes = np.frombuffer(packed, np.uint8, batch * PACKED_ROW).reshape(batch, 8, 441)
        pairs = np.frombuffer(packed, np.uint8, 2 * batch, batch * PACKED_ROW)
        planes = np.zeros((batch, 18, 361), np.float32)
        for i in range(batch):
            side, sym = int(pairs[2 * i]), int(pairs[2 * i + 1])
            colours = boxes[i][:, SYMMETRIC_POINTS[sym]]
            planes[i, :8] = colours == side
            planes[i, 8:16] = colours == 1 - side
            planes[i, 16 + side] = 1
        return self.submit(planes.reshape(batch, 18, 19, 19))


def test_progress_reports_on_the_arrays_are_the_uctnodes(monkeypatch, tiny_net, positions):
    """core/report.snapshot and root_report (the arrays, kernels.principal_variations)
    against stats.snapshot and merge.root_report of the tree written back, field by field
    and exactly, after every batch
    of pipelined searches on real positions, with a batch's virtual loss in flight, with and
    without noise, for both colours."""
    from leelaz.search.core import report
    from leelaz.search.run import Limits, Progress

    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    compared = 0
    for noise in (False, True):
        for state in positions:
            search = UCTSearch(tiny_net(), SearchParams(max_visits=600, batch_size=16,
                                                        quiet=True, noise=noise), rng=5)
            run = core_run.CoreRun.replacing(search.start(state))
            run.prepare()
            run.begin(Limits(600, 600, 10**9), Progress())
            in_flight = None
            for _ in range(30):
                batch = run.core_collect(16)
                if batch.leaves:
                    run.submit(batch)
                if in_flight is not None:
                    run.core_apply(in_flight)
                in_flight = batch if batch.leaves else None
                t = run.tree
                fast = report.snapshot(t, run._k, run.color, state.move_num,
                                       core_run._quantiles(int(t.visits[0])),
                                       run.params.lcb_min_visit_ratio, playouts=3, nodes=4,
                                       elapsed=1.5)
                run._write_back()
                slow = stats.snapshot(run.root, run.color, state.move_num, playouts=3,
                                      nodes=4, elapsed=1.5,
                                      ratio=run.params.lcb_min_visit_ratio)
                assert fast == slow
                compared += sum(1 for c in slow.children if len(c.pv) > 2)
                fast_report = report.root_report(t, run._k, run.color,
                                                 core_run._quantiles(int(t.visits[0])))
                assert fast_report == merge.root_report(run.root, run.color)
            if in_flight is not None:
                run.core_apply(in_flight)
    assert compared > 100  # long principal variations were compared


def test_area_score_is_the_python_boards(positions):
    kernels = core_run.kernels()
    for state in positions:
        rows = core_run._board_rows(state.board)
        assert kernels.area_score(rows[0], 0, 7.5) == state.board.area_score(7.5)


class _Tags:
    has_move_restrictions = True

    def is_allowed(self, color, vertex, move_num):
        return True


def test_calls_the_core_does_not_cover_run_on_the_python_search(monkeypatch, tiny_net,
                                                                positions):
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    search = UCTSearch(tiny_net(), SearchParams(max_visits=50, batch_size=4, quiet=True))
    state = positions[0]
    assert core_run.covers(search)
    assert core_run.covers(search, restrictions=_Tags(), on_progress=print, pondering=True)
    dynamic = UCTSearch(tiny_net(), SearchParams(max_visits=50, dynamic_fpu=True, quiet=True))
    assert not core_run.covers(dynamic)
    used = []
    monkeypatch.setattr(core_run.CoreRun, "core_collect", lambda run, limit: used.append(1))
    dynamic.think(state, state.to_move, use_clock=False)
    dynamic.ponder(state, should_stop=lambda: dynamic.current is not None
                   and dynamic.current.root.visits >= 20)
    assert not used
    monkeypatch.setenv(core_run.CORE_VARIABLE, "python")
    assert not core_run.covers(search)  # the reference, on request


def test_without_numba_one_line_says_so_and_the_python_search_runs(monkeypatch, capsys,
                                                                  tiny_net, positions):
    """numba missing (its import fails): one stderr line naming it, once; every search
    then runs on the Python search."""
    import sys

    monkeypatch.setitem(sys.modules, "leelaz.search.core.kernels", None)  # import fails
    monkeypatch.setattr(core_run, "_kernels", None)
    monkeypatch.setattr(core_run, "_loading", None)
    monkeypatch.setattr(core_run, "_said_missing", False)
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    search = UCTSearch(tiny_net(), SearchParams(max_visits=30, batch_size=4, quiet=True))
    for _ in range(2):
        assert core_run.kernels(wait=True) is None
        monkeypatch.setattr(core_run, "_loading", None)  # as a later process would try
        search.think(positions[0], positions[0].to_move, use_clock=False)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["leelaz: numba is not installed, so the search runs in pure Python "
                     "(pip install numba)"]


def test_the_core_is_the_default_and_python_forces_the_reference(monkeypatch, tiny_net,
                                                                  positions):
    monkeypatch.delenv(core_run.CORE_VARIABLE, raising=False)
    search = UCTSearch(tiny_net(), SearchParams(max_visits=40, batch_size=4, quiet=True))
    used = []
    original = core_run.CoreRun.core_collect

    def spy(run, limit):
        used.append(limit)
        return original(run, limit)

    monkeypatch.setattr(core_run.CoreRun, "core_collect", spy)
    search.think(positions[0], positions[0].to_move, use_clock=False)
    assert used, "the default did not search on the core"
    monkeypatch.setenv(core_run.CORE_VARIABLE, "python")
    assert not core_run.covers(search)
    used.clear()
    search.think(positions[0], positions[0].to_move, use_clock=False)
    assert not used


def test_where_numba_can_keep_no_cache_the_kernels_compile_without_it(monkeypatch):
    """numba refuses cache=True where neither the sources' folder nor the user's cache
    directory is writable (here: no cache locator applies); the kernels must still load."""
    from numba.core import config

    from leelaz.search.core import kernels

    assert kernels._can_cache()
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES",
                        "numba.core.caching.IPythonCacheLocator")  # none for a .py file
    assert not kernels._can_cache()


_FRESH_PROCESS = """
import sys, time
import leelaz.search.search
from leelaz.search.core import run
from numba.core.registry import CPUDispatcher
if sys.argv[1] == "quit":
    run.kernels()
    time.sleep(1.0)
    sys.exit(0)
k = run.kernels(wait=True)
misses = sum(sum(f.stats.cache_misses.values()) for f in vars(k).values()
             if isinstance(f, CPUDispatcher))
hits = sum(sum(f.stats.cache_hits.values()) for f in vars(k).values()
           if isinstance(f, CPUDispatcher))
print(misses, hits)
"""


def test_a_visit_limited_run_sizes_its_arrays_once(monkeypatch, tiny_net, positions):
    """A run of a known number of playouts (self-play's moves) has its arrays sized for
    all of them at its start: they never grow (copying every row) during its batches,
    and the tree is the one the growing arrays give."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    trees = []
    original = core_run.CoreRun.core_collect
    for reserve in (core_run.RESERVE_PLAYOUTS, 0):
        monkeypatch.setattr(core_run, "RESERVE_PLAYOUTS", reserve)
        sizes = []

        def spy(run, limit):
            sizes.append((len(run.tree.visits), len(run.tree.cnode)))
            return original(run, limit)

        monkeypatch.setattr(core_run.CoreRun, "core_collect", spy)
        search = UCTSearch(tiny_net(), SearchParams(max_visits=800, batch_size=8,
                                                    quiet=True, timemanage="off"), rng=4)
        search.think(positions[2], positions[2].to_move, use_clock=False)
        trees.append(_signature(search.root))
        if reserve:
            assert len(set(sizes)) == 1 and len(sizes) > 50
        else:
            assert len(set(sizes)) > 1  # the growth policy: the arrays grew
    assert trees[0] == trees[1]


def _huge_page_flags(values: np.ndarray) -> set[str] | None:
    """The huge-page flags ("hg": advised, "nh": never) of the kernel's mapping under
    `values` (VmFlags in /proc/self/smaps); None where there is no such record. An address
    a few pages in: advice covers whole pages only."""
    address = values.ctypes.data + 3 * 4096
    try:
        with open("/proc/self/smaps") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        head = line.split(" ", 1)[0]
        if "-" in head and not head.endswith(":"):  # a mapping: start-end perms ...
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= address < end
        elif inside and line.startswith("VmFlags:"):
            return set(line.split()[1:]) & {"hg", "nh"}
    return None


def test_the_trees_arrays_are_never_backed_by_huge_pages():
    """A tree's tiers, new and grown, lie in memory the kernel is told never to back with
    huge pages, where NumPy advises huge pages for other arrays this large (arrays._tier
    says why): by the kernel's own record of the mappings."""
    rows = 1 << 22  # 32 MB of int64 visits, 16 MB of int32 cnode (untouched)
    if _huge_page_flags(np.empty(rows, np.int64)) != {"hg"}:
        pytest.skip("NumPy gives no huge-page advice here (not Linux, or turned off)")
    tree = core_arrays.CoreTree(rows, rows)
    assert _huge_page_flags(tree.visits) == {"nh"}
    assert _huge_page_flags(tree.cnode) == {"nh"}
    tree.reserve(2 * rows, 2 * rows)  # both tiers grow: new arrays
    assert _huge_page_flags(tree.visits) == {"nh"}
    assert _huge_page_flags(tree.cnode) == {"nh"}


@pytest.mark.parametrize("batch", [1, 8])
def test_a_tree_on_arrays_full_of_garbage_is_the_python_searchs(monkeypatch, tiny_net,
                                                                positions, batch):
    """No row of the tiers is read before it is written (they are made uncleared,
    arrays._tier): with every new tier array full of garbage, the compiled search grows
    the Python search's trees, move after move with the tree reused."""
    made = []

    def garbage(size, dtype):
        array_ = np.empty(size, dtype)
        array_.view(np.uint8)[:] = 0xA5
        made.append(size)
        return array_

    trees = {}
    for mode in ("python", "compiled"):
        monkeypatch.setenv(core_run.CORE_VARIABLE, mode)
        search = UCTSearch(tiny_net(), SearchParams(max_visits=300, batch_size=batch,
                                                    quiet=True, timemanage="off",
                                                    fixed_symmetry=0), rng=3)
        state = positions[1].copy()
        moves = []
        with monkeypatch.context() as patched:
            patched.setattr(core_arrays, "_tier", garbage)
            for _ in range(3):
                moves.append(search.think(state, state.to_move, use_clock=False).move)
                state.play(state.to_move, moves[-1])
        trees[mode] = (moves, _signature(search.root))
    assert made  # the compiled search's trees came to garbage
    assert trees["compiled"] == trees["python"]


def test_kernels_asked_for_before_any_search_are_ready():
    """A process that asks for the kernels before it has imported the search (a tool, a
    probe) gets them: the warm-up imports the search it runs, instead of failing with one
    line that the search runs in pure Python."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop(core_run.CORE_VARIABLE, None)
    code = ("from leelaz.search.core import run; "
            "print(run.kernels(wait=True) is not None)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    assert "unavailable" not in done.stderr


def test_a_cold_cache_is_compiled_in_a_child_and_a_quit_stops_it(tmp_path):
    """A fresh install (an empty numba cache): the process that needs the kernels compiles
    nothing itself (a child fills the cache; it only loads), and a quit while the child
    compiles ends at once and cleanly."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(tmp_path / "quit"))
    env.pop(core_run.CORE_VARIABLE, None)
    quit_ = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, "quit"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert quit_.returncode == 0 and quit_.stderr == ""
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cold")
    cold = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, "wait"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr
    misses, hits = map(int, cold.stdout.split())
    assert misses == 0 and hits > 0
    assert any((tmp_path / "cold").rglob("*.nbi"))


class _Loading:
    """A loading thread that is still at work."""

    def is_alive(self) -> bool:
        return True

    def join(self) -> None:
        pass


@pytest.mark.parametrize("batch", [1, 8])
def test_a_ponder_switches_to_the_core_when_its_kernels_get_ready(monkeypatch, tiny_net,
                                                                 positions, batch):
    """lz-analyze starts while the kernels still load: its first batches are the Python
    search's, the rest the core's once they are ready, and everything is as the Python
    search alone would have it (reports, tree)."""
    from leelaz.search import run as search_run

    state = positions[1]
    tags = PLAIN.format("b" if state.to_move == BLACK else "w")
    py, _, py_lines, _ = _analyze(monkeypatch, "python", tiny_net, state, tags,
                                  genmove=False, batch=batch)
    ready = core_run._kernels
    with monkeypatch.context() as patched:
        patched.setattr(core_run, "_kernels", None)
        patched.setattr(core_run, "_loading", _Loading())
        after_batch = search_run.SearchRun.after_batch
        batches = []

        def ready_after_four(run, did):
            batches.append(run.tree is None)
            if len(batches) == 4:
                core_run._kernels = ready
            return after_batch(run, did)

        patched.setattr(search_run.SearchRun, "after_batch", ready_after_four)
        co, _, co_lines, co_used = _analyze(patched, "compiled", tiny_net, state, tags,
                                            genmove=False, batch=batch)
    assert batches[:4] == [True] * 4 and not any(batches[4:]) and co_used
    assert co_lines == py_lines
    assert _signature(co.root) == _signature(py.root)


def test_a_genmove_starts_loading_the_kernels_only_once_answered(monkeypatch, tiny_net,
                                                                positions):
    monkeypatch.delenv(core_run.CORE_VARIABLE, raising=False)
    monkeypatch.setattr(core_run, "_kernels", None)
    monkeypatch.setattr(core_run, "_loading", None)
    search = UCTSearch(tiny_net(), SearchParams(max_visits=40, batch_size=4, quiet=True))
    import threading

    loading = []
    original = core_run.CoreRun.replacing

    def spy(cls, run):
        if threading.current_thread() is threading.main_thread():  # not the warm-up's
            loading.append(core_run._loading)
        return original(run)

    monkeypatch.setattr(core_run.CoreRun, "replacing", classmethod(spy))
    state = positions[0]
    search.think(state, state.to_move, use_clock=False)
    assert not loading and core_run._loading is not None  # Python search, then loading
    assert core_run.kernels(wait=True) is not None
    search.think(state, state.to_move, use_clock=False)
    assert loading  # the core's


@pytest.mark.parametrize("parallel,forced_k", [(1, 0.0), (3, 0.0), (3, 2.0)])
def test_selfplay_games_on_the_core_are_the_python_searchs(monkeypatch, tmp_path,
                                                          random_weights, parallel, forced_k):
    """Self-play drives the search in steps (selfplay/game.py: start_move, collect, one
    network call for every game's leaves, apply, after_batch, finish): with its own
    settings (noise, random opening moves, 6 leaves a batch, tree reuse; forced playouts
    and target pruning with forced_k) the games and training chunks on the core are the
    Python search's, byte for byte."""
    import glob
    import re

    from leelaz.selfplay import play_selfplay

    texts = {}
    for mode in ("python", "compiled"):
        monkeypatch.setenv(core_run.CORE_VARIABLE, mode)
        monkeypatch.setenv(core_run.WAIT_VARIABLE, "1")  # the core from the first move
        used = []
        original = core_run.CoreRun.core_collect

        def spy(run, limit, original=original, used=used):
            used.append(limit)
            return original(run, limit)

        monkeypatch.setattr(core_run.CoreRun, "core_collect", spy)
        out = tmp_path / mode
        play_selfplay(random_weights(1, 16), str(out), 3, visits=60, parallel=parallel,
                      seed=3, cpu_only=True, progress=False, max_moves=40, forced_k=forced_k)
        monkeypatch.setattr(core_run.CoreRun, "core_collect", original)
        sgfs = sorted(glob.glob(str(out / "*.sgf")))
        texts[mode] = [(re.sub(r"DT\[[^\]]*\]", "", open(s).read()),
                        gzip.open(s[:-len(".sgf")] + ".txt.0.gz").read()) for s in sgfs]
        assert bool(used) == (mode == "compiled"), "the switch chose the wrong search"
    assert len(texts["python"]) == 3
    assert texts["compiled"] == texts["python"]


def test_a_reader_between_batches_sees_the_tree_as_it_is(monkeypatch, tiny_net, positions):
    """A helper search process reports its tree from should_stop, between two batches
    (search_processes/helper.py): `current_root` is the core's tree written back, so the
    root's visits are its own one and its children's."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    search = UCTSearch(tiny_net(), SearchParams(max_visits=200, batch_size=8, quiet=True))
    seen = []

    def should_stop():
        run = search.current
        assert run.tree is not None  # on the core
        root = run.current_root()
        seen.append(root.visits - sum(c.visits for c in root.children))
        return False

    search.ponder(positions[0], should_stop=should_stop)
    assert len(seen) > 5 and set(seen) == {1}


def test_a_growing_tree_is_written_back_as_it_grows(monkeypatch, tiny_net, positions):
    """While a search goes on, the core writes its tree back whenever WRITE_BACK_ROWS nodes
    were added since the last time (progress reports read the arrays, so nothing else
    would until the end, while the GUI waits): between two batches never more than that
    and two batches' nodes are left unwritten, and the search grows the same tree as with
    everything written at the end."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    trees = []
    for rows in (10**9, 64):
        monkeypatch.setattr(core_run, "WRITE_BACK_ROWS", rows)
        search = UCTSearch(_Async(tiny_net()), SearchParams(max_visits=600, batch_size=8,
                                                            quiet=True), rng=2)
        unwritten = []

        def should_stop():
            t = search.current.tree
            unwritten.append(int(t.nodes_used[0]) - t.rows_written())
            return False

        search.ponder(positions[1], should_stop=should_stop, max_visits=600)
        trees.append(_signature(search.root))
        if rows == 64:
            assert max(unwritten) < 64 + 2 * 8 and len(unwritten) > 40
        else:
            assert max(unwritten) > 400  # everything waited for the end
    assert trees[0] == trees[1]


def test_written_back_children_are_the_arrays_rows(monkeypatch, tiny_net, positions):
    """A write-back rewrites a node's children only when the node was expanded or inflated
    since the last one (core/arrays.py, `to_root`): after every batch of a search written
    back every 64 nodes and at every check, each expanded UCTNode's children are the
    UCTNodes of its inflated child rows, in order, and its compact arrays hold all its
    children's moves and priors as the child tier does (empty once all are inflated)."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    monkeypatch.setattr(core_run, "WRITE_BACK_ROWS", 64)
    search = UCTSearch(_Async(tiny_net()), SearchParams(max_visits=600, batch_size=8,
                                                        quiet=True), rng=2)
    checked = []

    def should_stop():
        run = search.current
        t = run.tree
        run.current_root()  # the write-back
        inflations = 0
        for nd in range(int(t.nodes_used[0])):
            u = t.objects[nd]
            assert u.expanded == bool(t.expanded[nd])
            if not u.expanded:
                continue
            lo, k, inf = int(t.first[nd]), int(t.count[nd]), int(t.inflated[nd])
            assert [id(c) for c in u.children] == [id(t.objects[c])
                                                   for c in t.cnode[lo:lo + inf].tolist()]
            assert [c.move for c in u.children] == t.cmove[lo:lo + inf].tolist()
            if inf < k:
                assert list(u._moves) == t.cmove[lo:lo + k].tolist()
                assert np.array_equal(np.array(u._priors, np.float32), t.cprior[lo:lo + k])
            else:
                assert len(u._moves) == 0 and len(u._priors) == 0
            inflations += inf
        checked.append(inflations)
        return False

    search.ponder(positions[1], should_stop=should_stop, max_visits=600)
    assert len(checked) > 40 and checked[-1] > checked[0] + 400  # the tree grew under it


def _genmoves(net, state, moves, *, defer, complete, python_at=None, monkeypatch=None):
    """`moves` genmoves in a row from `state` (each move played), the tree reused, after
    every second one a ponder on the opponent's turn; with `defer` as the GTP loop asks
    them, `complete` writing the whole tree after each (complete_tree) or leaving it to the
    next call's arrays; at move `python_at` the Python search. Returns per call (the move,
    its record, the explanation, the statistics' lines, the node count, whether the tree
    was partly written at its end) and the tree."""
    lines: list[str] = []
    search = UCTSearch(_Async(net()), SearchParams(max_visits=500, batch_size=8,
                                                   timemanage="off"), rng=3,
                       log=lines.append)
    state = state.copy()
    out = []
    for i in range(moves):
        if monkeypatch is not None:
            monkeypatch.setenv(core_run.CORE_VARIABLE, "python" if i == python_at else
                               "compiled")
        lines.clear()
        result = search.think(state, state.to_move, use_clock=False, defer_tree=defer)
        timeless = [re.sub(r"\d+ n/s", "n/s", line) for line in lines]  # not the speed
        out.append((result.move, dataclasses.replace(result, elapsed=0.0),
                    search.explanation, timeless, search.nodes,
                    search._unwritten is not None))
        state.play(state.to_move, result.move)
        if complete:
            search.complete_tree()
        if i % 2:  # the opponent's turn analysed: a ponder one move down
            lines.clear()
            result = search.ponder(state, should_stop=lambda: False, max_visits=700,
                                   defer_tree=defer)
            out.append((None, dataclasses.replace(result, elapsed=0.0), None, list(lines),
                        search.nodes, search._unwritten is not None))
            if complete:
                search.complete_tree()
    search.complete_tree()
    return out, _signature(search.root), search


def test_calls_that_write_back_only_what_they_read_are_the_same_calls(
        monkeypatch, tiny_net, positions):
    """think and ponder with defer_tree=True (GTP's genmoves, lz-analyze, pondering): the
    core writes back at the end only the rows the move choice and the statistics read
    (core/report.rows_read); the next call writes the way to its root, the root and its
    children (CoreTree.write_for_reuse) and takes the rest along in its arrays
    (CoreTree.from_kept), or writes it all first (the Python search). Against every row
    written at the end: the same moves, records (every root child, its principal
    variation), explanations, statistics' lines and node counts at each of five genmoves
    and two ponders with the tree reused, and the same UCTNode tree once completed, also
    with the whole tree written after each call, when from_kept gives none (from_root then
    reads the UCTNodes, written first), and when the Python search (which reads the whole
    tree) takes a move in between."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    state = positions[1]
    took = []  # per reuse: (the kept tree partly written, from_kept took it)
    from_kept = core_arrays.CoreTree.from_kept.__func__

    def spied(cls, kept, *args):
        partly = not kept.in_sync()
        tree = from_kept(cls, kept, *args)
        took.append((partly, tree is not None))
        return tree

    monkeypatch.setattr(core_arrays.CoreTree, "from_kept", classmethod(spied))
    reference, ref_tree, _ = _genmoves(tiny_net, state, 5, defer=False, complete=False)
    assert not any(partial for *_, partial in reference)
    assert took == [(False, True)] * 6
    for complete in (True, False):
        took.clear()
        deferred, tree, search = _genmoves(tiny_net, state, 5, defer=True, complete=complete)
        searched = [d for d in deferred if d[0] is None or d[1].root_visits == 500]
        assert len(searched) == 5 and all(d[-1] for d in searched)  # not all rows written
        assert [d[:5] for d in deferred] == [r[:5] for r in reference]
        assert tree == ref_tree
        assert search._core_kept is not None and search._core_kept.in_sync()
        assert took == [(not complete, True)] * 6
    monkeypatch.setattr(core_arrays.CoreTree, "from_kept", classmethod(
        lambda cls, *args: None))  # as when a root child disagrees: from_root reads all
    deferred, tree, _ = _genmoves(tiny_net, state, 5, defer=True, complete=False)
    assert [d[:5] for d in deferred] == [r[:5] for r in reference]
    assert tree == ref_tree
    reference, ref_tree, _ = _genmoves(tiny_net, state, 4, defer=False, complete=False,
                                       python_at=2, monkeypatch=monkeypatch)
    deferred, tree, _ = _genmoves(tiny_net, state, 4, defer=True, complete=False,
                                  python_at=2, monkeypatch=monkeypatch)
    assert [d[:5] for d in deferred] == [r[:5] for r in reference]
    assert tree == ref_tree


def _gtp_genmoves(monkeypatch, net, command: str, deferred: bool):
    """Four of GTP's `command` in a row on one engine: what each reply said, whether the
    tree was partly written when it was sent, how many calls took a partly written tree
    into their arrays, the node counts, and the whole tree at the end."""
    from gtp_session import Session

    from leelaz.config import EngineConfig
    from leelaz.gtp import search_commands

    with monkeypatch.context() as patched:
        patched.setenv(core_run.CORE_VARIABLE, "compiled")
        if not deferred:  # the reference: every row written back before the reply
            think = UCTSearch.think
            patched.setattr(UCTSearch, "think", lambda self, *args, **kwargs: think(
                self, *args, **{**kwargs, "defer_tree": False}))
        took = []
        from_kept = core_arrays.CoreTree.from_kept.__func__
        patched.setattr(core_arrays.CoreTree, "from_kept", classmethod(
            lambda cls, kept, *args: took.append(not kept.in_sync()) or from_kept(
                cls, kept, *args)))
        s = Session(EngineConfig(visits=300, ponder=False, seed=1, timemanage="off",
                                 quiet=True))
        s.engine.network = net()
        search_commands.register(s.engine)
        search = s.engine.session.search
        partial, replies, nodes, writes = [], [], [], []
        write_raw = s.engine.write_raw
        patched.setattr(s.engine, "write_raw", lambda text: (
            writes.append(search._unwritten is not None), write_raw(text)))
        for color in "bwbw":
            replies.append(s.reply(f"{command} {color}"))
            partial.append(writes[-1])  # as the reply's end was written
            nodes.append(search.nodes)
        search.complete_tree()
        return replies, partial, sum(took), nodes, _signature(search.root)


@pytest.mark.parametrize("command", ["genmove", "kgs-genmove_cleanup",
                                     "lz-genmove_analyze"])
def test_gtp_genmoves_reply_before_the_tree_is_written_and_reuse_it_so(monkeypatch,
                                                                        tiny_net, command):
    """GTP's genmoves on the core reply while only the rows their end read are in the
    UCTNodes, and the next genmove takes the rest along in its arrays (CoreTree.from_kept
    on a partly written tree): the same replies, node counts and, once written, the same
    tree as an engine that writes every row before it replies."""
    reference = _gtp_genmoves(monkeypatch, tiny_net, command, deferred=False)
    deferred = _gtp_genmoves(monkeypatch, tiny_net, command, deferred=True)
    assert not any(reference[1]) and all(deferred[1])
    assert reference[2] == 0 and deferred[2] == 3  # every reuse took a partly written tree
    assert all(r.startswith("=") for r in deferred[0])
    assert deferred[0] == reference[0]
    assert deferred[3] == reference[3]
    assert deferred[4] == reference[4]


def test_a_write_back_of_some_rows_writes_them_and_their_children_and_keeps_the_rest(
        monkeypatch, tiny_net, positions):
    """CoreTree.to_root with `spans`: each row given has its UCTNode's children (the
    UCTNodes of its inflated child rows, in order) and its children their statistics as
    the arrays hold them; a row neither given nor the child of one is left as it was
    (a new row has no UCTNode yet); `in_sync` says the tree is not all written, and a
    write-back without `spans` then gives the tree of one that wrote everything."""
    monkeypatch.setenv(core_run.CORE_VARIABLE, "compiled")
    monkeypatch.setattr(core_run, "WRITE_BACK_ROWS", 10**9)
    seen = []

    def should_stop():
        run = search.current
        t = run.tree
        n = int(t.nodes_used[0])
        if n < 300 or seen:
            return False
        before = [(u.visits, u.expanded) if u is not None else None for u in
                  t.objects + [None] * (n - len(t.objects))]
        spans = np.array([0, *t.cnode[t.first[0]:t.first[0] + 2].tolist()], np.int64)
        spans = spans[spans < n]
        t.to_root(run._boards, spans)
        children = set(t._children_of(spans).tolist())
        assert not t.in_sync()
        for nd in range(n):
            u = t.objects[nd]
            if nd in spans.tolist() or nd in children:
                assert u.visits == int(t.visits[nd]) and u.black_wins == float(t.wins[nd])
            if nd in spans.tolist() and t.expanded[nd]:
                lo, inf = int(t.first[nd]), int(t.inflated[nd])
                assert [id(c) for c in u.children] == [id(t.objects[c]) for c in
                                                       t.cnode[lo:lo + inf].tolist()]
            elif nd not in children and nd not in spans.tolist():
                assert (None if u is None else (u.visits, u.expanded)) == before[nd]
        assert any(b != ((t.objects[nd].visits, t.objects[nd].expanded)
                         if t.objects[nd] is not None else None)
                   for nd, b in enumerate(before)) and any(
            t.objects[nd] is None for nd in range(n))  # some written, some left
        t.to_root(run._boards)
        assert t.in_sync()
        seen.append(n)
        return False

    trees = []
    for check in (False, True):
        search = UCTSearch(_Async(tiny_net()), SearchParams(max_visits=800, batch_size=8,
                                                            quiet=True), rng=4)
        search.ponder(positions[1], should_stop=should_stop if check else lambda: False,
                      max_visits=800)
        trees.append(_signature(search.root))
    assert seen and trees[0] == trees[1]


def _loading_in_child(queue) -> None:
    queue.put(core_run._loading is None)


def test_a_forked_child_loads_the_kernels_anew(monkeypatch):
    """A process forked while its parent loads the kernels (a helper search process, a
    self-play worker) has no loading thread of its own: it must start one when asked, not
    wait for its parent's forever (on the Python search)."""
    import multiprocessing
    import os

    if not hasattr(os, "register_at_fork"):
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(core_run, "_kernels", None)
    monkeypatch.setattr(core_run, "_loading", _Loading())
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_loading_in_child, args=(queue,))
    child.start()
    assert queue.get(timeout=60) is True
    child.join(60)


def test_the_kernels_load_only_when_no_move_is_on_the_clock(monkeypatch):
    """Loading numba holds the GIL for most of a second: it waits until no genmove has been
    searching for IDLE_SECONDS (the opponent's time)."""
    import time
    from types import SimpleNamespace

    began = []

    def import_module(name):
        began.append(time.monotonic())
        raise ImportError(name)  # (as without numba: nothing is loaded)

    monkeypatch.setattr(core_run, "importlib", SimpleNamespace(import_module=import_module))
    for name, value in (("_kernels", None), ("_loading", None), ("_hurry", False),
                        ("_said_missing", True), ("_clocked", 0), ("_clock_free_since", 0.0)):
        monkeypatch.setattr(core_run, name, value)
    core_run.on_clock(True)
    core_run.kernels()
    time.sleep(0.5)
    assert not began  # a move is being searched
    core_run.on_clock(False)
    ended = time.monotonic()
    core_run._loading.join(10)
    assert began and began[0] - ended >= 0.9 * core_run.IDLE_SECONDS
