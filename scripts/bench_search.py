#!/usr/bin/env python3
"""Search speed: playouts per second of UCTSearch, alone and with a network.

The search's own cost is measured with an instant evaluator (a fixed peaked policy and a
constant value), so the figure is the Python tree work per playout: descent on state copies,
PUCT selection, expansion, backup, early-stop checks. With --weights the real network runs
too (NumPy backend unless --backend), showing how much of a playout is the network.
Figures are also given per CPU-second of this process, since the machine may be shared.

    python scripts/bench_search.py --visits 3000 --batch 1 8
    python scripts/bench_search.py --weights net.txt --visits 400 --batch 1 4 16
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from leelaz.game.state import GameState
from leelaz.search.params import SearchParams
from leelaz.search.search import UCTSearch


class _Evaluation:
    __slots__ = ("policy", "winrate")

    def __init__(self, policy, winrate):
        self.policy = policy
        self.winrate = winrate


class InstantEvaluator:
    """No network: one fixed, peaked policy (like a trained net's) and winrate 0.5."""

    def __init__(self, seed: int = 1):
        p = np.random.default_rng(seed).random(362) ** 6
        self.policy = (p / p.sum()).astype(np.float32)

    def evaluate(self, states, symmetry=None):
        return [_Evaluation(self.policy, 0.5) for _ in states]


def opening() -> GameState:
    """A few stones on the board, so that the position is not the trivial empty one."""
    state = GameState()
    for color, x, y in ((0, 15, 15), (1, 3, 3), (0, 2, 15), (1, 15, 3), (0, 9, 9)):
        state.play(color, (y + 1) * 21 + x + 1)
    return state


def run(evaluator, visits: int, batch: int) -> tuple[int, float, float]:
    search = UCTSearch(evaluator, SearchParams(max_visits=visits, batch_size=batch, quiet=True,
                                               timemanage="off"), rng=1)
    wall, cpu = time.perf_counter(), time.process_time()
    result = search.think(opening(), 1, time_limit_cs=10**9)
    return result.playouts, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--visits", type=int, default=2000)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--weights", help="also search with this network")
    ap.add_argument("--backend", default="numpy")
    args = ap.parse_args(argv)
    evaluators = [("instant", InstantEvaluator())]
    if args.weights:
        from leelaz.nn.network import Network
        evaluators.append((args.weights, Network.from_file(args.weights, backend=args.backend)))
    for name, ev in evaluators:
        for batch in args.batch:
            playouts, wall, cpu = run(ev, args.visits, batch)
            print(f"{name:>12s} batch {batch:3d}: {playouts:6d} playouts in {wall:6.2f} s = "
                  f"{playouts / wall:7.0f}/s ({playouts / max(cpu, 1e-9):7.0f} per CPU-second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
