"""`leelaz bench data`: throughput of the trainer's supervised iterator, in positions/s.

Owns: that benchmark. Imports: training.supervised, tools.bench.common.

For each worker count: iter_games / iter_games_parallel over the given collections (SGF parse,
Leela Zero's replay on GameState, board rows + move slots + results), then, separately, the
input planes of those games (GameArrays.planes, packed or not) in one process. Wall-clock
time: run it on an idle machine.
"""

from __future__ import annotations

import os
import time

import click

from leelaz.tools.bench.common import CONTEXT, say
from leelaz.tools import ToolError


@click.command("data", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="SGF...")
@click.option("-j", "--workers", type=click.IntRange(1, None), multiple=True,
              help="Worker counts to measure (repeat; default: 1 and every core).")
@click.option("--max-games", type=click.IntRange(0, None), default=0,
              help="Single-process runs: stop after this many games.")
def command(files, workers, max_games) -> None:
    """Positions per second of the trainer's SGF iterator and of its input planes."""
    from leelaz.training.supervised import DumpStats, iter_games, iter_games_parallel

    for path in files:
        if not os.path.isfile(path):
            raise ToolError(f"{path}: no such file")
    counts = workers or (1, os.cpu_count() or 1)
    say(f"{os.cpu_count()} CPUs; files: {', '.join(os.path.basename(f) for f in files)}")
    kept = []
    for count in counts:
        stats = DumpStats()
        start = time.time()
        if count == 1:
            games = []
            for g in iter_games(list(files), stats=stats):
                games.append(g)
                if max_games and len(games) >= max_games:
                    break
        else:
            games = list(iter_games_parallel(list(files), count, stats=stats))
        elapsed = max(time.time() - start, 1e-9)
        positions = sum(len(g) for g in games)
        say(f"workers {count:3d}: {len(games)} games, {positions} positions in {elapsed:.1f} s"
            f" = {positions / elapsed:,.0f} positions/s (skipped {stats.skipped})")
        kept = games if len(games) > len(kept) else kept
    sample = kept[:2000]
    for packed in (False, True):
        start = time.time()
        count = sum(len(g.planes(packed)) for g in sample)
        elapsed = max(time.time() - start, 1e-9)
        say(f"planes{' (packed)' if packed else ''}, 1 process: {count / elapsed:,.0f} "
            "positions/s")
