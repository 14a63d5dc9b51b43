"""A measurement, not part of leelaz: the time a move on the clock spends outside its
batches, before the first (the tree reuse, the root) and after the last (statistics, the
move choice), at the tree sizes a GPU reaches at 0.5 s a move.

The search runs in this process with the instant network of `leelaz bench search`, from
move 120 of the 9-dan game (`bench search --at`), MOVES moves in a row at BUDGET
centiseconds each, the tree reused from move to move; after each move it frees what the
reuse left behind, as the GTP loop does after a genmove's reply; each genmove is asked as
GTP asks it (`defer_tree`, where the code has it). Statistics are written (to nowhere), as in
a game.

    PYTHONPATH=$PWD python3 dev/move_overhead_probe.py [BUDGET_CS] [MOVES]
"""

from __future__ import annotations

import inspect
import sys
import time

from leelaz.nn.cache import NNCache
from leelaz.search import run as run_module
from leelaz.search.core import run as core_run
from leelaz.search.core.arrays import CoreTree
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch
from leelaz.tools.bench.search import game_position, make_network

MARKS: dict[str, float] = {}


def _timed_run(original):
    def run(self, limits, progress):
        MARKS["first batch"] = time.perf_counter()
        MARKS["write-back"] = 0.0
        try:
            return original(self, limits, progress)
        finally:
            MARKS["last batch"] = time.perf_counter() - MARKS["write-back"]
    return run


def _timed_write_back(original):
    """The compiled core writes its arrays back into the UCTNodes inside its run (and at
    each progress report): that time counts as after the last batch."""
    def write_back(self, *args, **kwargs):
        began = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            MARKS["write-back"] += time.perf_counter() - began
    return write_back


def _timed_tree_in(original):
    """The reused tree into the compiled core's arrays (before the first batch): from_kept,
    and from_root where that gives none."""
    def tree_in(cls, *args):
        began = time.perf_counter()
        try:
            return original(cls, *args)
        finally:
            MARKS["from_root"] += time.perf_counter() - began
    return classmethod(tree_in)


def main() -> None:
    budget = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    moves = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    run_module.SearchRun.run = _timed_run(run_module.SearchRun.run)
    core_run.CoreRun.run = _timed_run(core_run.CoreRun.run)  # the default search
    core_run.CoreRun._write_back = _timed_write_back(core_run.CoreRun._write_back)
    CoreTree.from_root = _timed_tree_in(CoreTree.from_root.__func__)
    CoreTree.from_kept = _timed_tree_in(CoreTree.from_kept.__func__)
    network = make_network(None, "numpy")
    network.cache = NNCache(200_000)
    search = UCTSearch(network, SearchParams(batch_size=16, timemanage="off"), rng=1,
                       log=lambda text: None)
    state = game_position(120)
    before, after, trees_in = [], [], []
    # As the GTP loop asks a genmove (where the code has it): the tree left partly written
    # back, the rest carried to the next move in the arrays.
    deferred = "defer_tree" in inspect.signature(search.think).parameters
    options = {"defer_tree": True} if deferred else {}
    for i in range(moves):
        MARKS["from_root"] = 0.0
        began = time.perf_counter()
        result = search.think(state, state.to_move, time_limit_cs=budget, use_clock=False,
                              **options)
        ended = time.perf_counter()
        before.append(MARKS["first batch"] - began)
        after.append(ended - MARKS["last batch"])
        trees_in.append(MARKS["from_root"])
        print(f"move {120 + i}: {1e3 * (ended - began):.1f} ms, {search.playouts} playouts, "
              f"root {search.root.visits} visits; before the first batch "
              f"{1e3 * before[-1]:.1f} ms (the tree in {1e3 * MARKS['from_root']:.1f} ms), "
              f"after the last {1e3 * after[-1]:.1f} ms (the "
              f"core's write-back {1e3 * MARKS.get('write-back', 0.0):.1f} ms)")
        state.play(state.to_move, result.move)
        if hasattr(search, "release_discarded"):  # the GTP loop's, after the reply
            search.release_discarded()
    later = before[1:]  # the first move has no tree to reuse
    reused = trees_in[1:]
    print(f"mean before the first batch (moves with a reused tree) "
          f"{1e3 * sum(later) / len(later):.1f} ms, after the last "
          f"{1e3 * sum(after) / len(after):.1f} ms")
    print(f"the tree into the arrays (moves with a reused tree): mean "
          f"{1e3 * sum(reused) / len(reused):.1f} "
          f"ms, max {1e3 * max(reused):.1f} ms, over 100 ms on "
          f"{sum(t > 0.1 for t in reused)} of {len(reused)} moves")


if __name__ == "__main__":
    main()
