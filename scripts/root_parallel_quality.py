"""How much a merged visit is worth: K trees of N/K visits each against one tree of N.

    python scripts/root_parallel_quality.py [--sgf GAME] [--moves 30:231:5] [--visits 800]
        [--trees 4] [--oracle 3200]

Root parallelism (--search-processes) reports the visits of all its trees; this asks what
they buy, with no clock involved: at each position of the game, the move a long single search
(--oracle visits) prefers is the judge, and the script counts how often each of these
chooses it: one tree of --visits, --trees trees of --visits / --trees each (their root
statistics merged as search/merge.py merges a helper's), and one tree of --visits / --trees.
Every tree has its own Network (no shared cache, as separate processes have none), batch 1
(no virtual-loss effects), the shipped network on NumPy. Results go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys

from leelaz.cli import find_weights
from leelaz.config import EngineConfig
from leelaz.game.coords import gtp_vertex
from leelaz.game.sgf_replay import state_from_sgf
from leelaz.nn.network import Network
from leelaz.search.merge import merged_root, root_report
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch
from leelaz.search.stats import snapshot

GAME = "leelaz/tools/bench/game-9d.sgf"


_LOADED = {}


def search(weights, state, visits: int, seed: int) -> UCTSearch:
    if weights not in _LOADED:  # one backend; each search gets a Network (a cache) of its own
        loaded = Network.from_file(weights, backend="numpy")
        _LOADED[weights] = (loaded.weights, loaded.backend)
    net = Network(*_LOADED[weights], seed=seed)
    s = UCTSearch(net, SearchParams(max_visits=visits, batch_size=1, quiet=True,
                                    timemanage="off"), rng=seed)
    s.think(state, state.to_move, use_clock=False)
    return s


def best(root, color) -> int:
    root.sort_children(color)
    return snapshot(root, color, 0).best().move


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sgf", default=GAME)
    ap.add_argument("--moves", default="30:231:5")
    ap.add_argument("--visits", type=int, default=800)
    ap.add_argument("--trees", type=int, default=4)
    ap.add_argument("--oracle", type=int, default=3200)
    a = ap.parse_args()
    weights = find_weights(EngineConfig())
    start, stop, step = (int(x) for x in a.moves.split(":"))
    hits = {"one": 0, "merged": 0, "small": 0}
    n = 0
    for move in range(start, stop, step):
        state = state_from_sgf(a.sgf, move)
        color = state.to_move
        judge = search(weights, state, a.oracle, 1).last_result.move
        one = search(weights, state, a.visits, 2).last_result.move
        trees = [search(weights, state, a.visits // a.trees, 10 + i) for i in range(a.trees)]
        small = trees[0].last_result.move
        reports = [root_report(t.root, color) for t in trees[1:]]
        merged = best(merged_root(trees[0].root, reports), color)
        n += 1
        for key, got in (("one", one), ("merged", merged), ("small", small)):
            hits[key] += got == judge
        print(f"move {move}: oracle {gtp_vertex(judge)}, one {gtp_vertex(one)}, merged "
              f"{gtp_vertex(merged)}, small {gtp_vertex(small)}; so far {hits} of {n}",
              flush=True)
    print(f"positions {n}: one tree of {a.visits}: {hits['one']}, {a.trees} trees of "
          f"{a.visits // a.trees} merged: {hits['merged']}, one tree of "
          f"{a.visits // a.trees}: {hits['small']} (agreement with {a.oracle} visits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
