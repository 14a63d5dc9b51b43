"""The search's own cost per playout: `--benchmark`'s search with an instant network.

    python scripts/bench_search_host.py [--visits 3200] [--batch 32] [--runs 5]

On a fast GPU the engine waits on this Python, not on the device (README, Speed), so this is
the figure the small networks' visits/s follow. The network is the registry's `random` backend
(backends/random_backend.py): it answers at once (asynchronously, as the OpenCL backend does)
with seeded random logits, peaked like a trained network's policy, and random values, so the
tree has a trained network's shape rather than a random net's degenerate chains. The position and settings are `--benchmark`'s; the best of `--runs` is
printed, as microseconds per playout and visits per second.
"""

from __future__ import annotations

import argparse
import time

from leelaz.backends import create_backend
from leelaz.game.coords import WHITE, parse_color, parse_gtp_vertex
from leelaz.game.state import GameState
from leelaz.nn.cache import NNCache
from leelaz.nn.network import Network
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch


def one_search(network: Network, params: SearchParams) -> tuple[int, float]:
    """`--benchmark`'s position (b r16, w d4, b c3; White to move); (playouts, seconds)."""
    state = GameState()
    for color, move in (("b", "r16"), ("w", "d4"), ("b", "c3")):
        state.play(parse_color(color), parse_gtp_vertex(move))
    network.cache = NNCache(150_000)
    search = UCTSearch(network, params, rng=1)
    began = time.perf_counter()
    search.think(state, WHITE, use_clock=False)
    return search.playouts, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visits", type=int, default=3200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    network = Network(None, create_backend("random", None, seed=1), seed=1)
    params = SearchParams(max_visits=args.visits, batch_size=args.batch, quiet=True,
                          timemanage="off")
    playouts, seconds = min((one_search(network, params) for _ in range(args.runs)),
                            key=lambda r: r[1])
    print(f"{playouts} playouts in {seconds:.3f} s: {seconds / playouts * 1e6:.1f} us per "
          f"playout, {args.visits / seconds:,.0f} visits/s (best of {args.runs})")


if __name__ == "__main__":
    main()
