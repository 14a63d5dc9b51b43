#!/usr/bin/env python3
"""Throughput of the trainer's supervised iterator (leelaz.training.supervised), in positions/s.

For each worker count: iter_games / iter_games_parallel over the given collections (SGF parse,
LZ's replay on GameState, board rows + move slots + results), then, separately, the input
planes of those games (GameArrays.planes, packed or not) in one process. Prints one line per
measurement; wall-clock time, so run it on an idle machine.

    python scripts/bench_supervised.py ../shared/data/tygem-9d/tygem-9d-2010-0[1-4].sgf.gz -j 1 16
"""

from __future__ import annotations

import argparse
import os
import time

from leelaz.training.supervised import DumpStats, iter_games, iter_games_parallel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("-j", "--workers", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--max-games", type=int, default=0, help="single-process runs: stop after")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; files: {', '.join(os.path.basename(f) for f in args.files)}")
    kept = []
    for workers in args.workers:
        stats = DumpStats()
        start = time.time()
        if workers == 1:
            games = []
            for g in iter_games(args.files, stats=stats):
                games.append(g)
                if args.max_games and len(games) >= args.max_games:
                    break
        else:
            games = list(iter_games_parallel(args.files, workers, stats=stats))
        elapsed = time.time() - start
        positions = sum(len(g) for g in games)
        print(f"workers {workers:3d}: {len(games)} games, {positions} positions in "
              f"{elapsed:.1f} s = {positions / elapsed:,.0f} positions/s "
              f"(skipped {stats.skipped})", flush=True)
        kept = games if len(games) > len(kept) else kept
    sample = kept[:2000]
    for packed in (False, True):
        start = time.time()
        count = sum(len(g.planes(packed)) for g in sample)
        elapsed = time.time() - start
        print(f"planes{' (packed)' if packed else ''}, 1 process: {count / elapsed:,.0f} "
              f"positions/s", flush=True)


if __name__ == "__main__":
    main()
