#!/usr/bin/env python3
"""Pack SGF game collections into small game packs for training on another machine.

A pack holds, per game, the moves as uint16 policy slots, the winner and whether the result is
a fair value target (lzma-compressed npz, see leelaz.training.dataset.GamePack): about 0.9
bytes a move, so the 46 million moves of tygem-9d take ~42 MB, against 71 MB of gzipped SGF.
Positions are rebuilt from a pack by replaying it (PositionSet.from_pack), which is fast.

Split: the games of the months named by --val-months form the validation pack (whole games,
never trained on); the rest is dealt round-robin into --shards training packs, so that each
shard spans every month. Games with fewer than --min-moves moves are left out.

    python scripts/prepare_gpu_data.py --out .devdata --shards 6 --val-months 2011-12
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time


from leelaz.training.dataset import GamePack, read_sgf_collection, result_kind

DEFAULT_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "tygem-9d")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="folder of *.sgf.gz collections")
    p.add_argument("--out", default=".devdata")
    p.add_argument("--shards", type=int, default=6)
    p.add_argument("--val-months", default="2011-12", help="comma-separated YYYY-MM")
    p.add_argument("--val-games", type=int, default=0, help="keep only this many (0: all)")
    p.add_argument("--min-moves", type=int, default=20)
    p.add_argument("--limit-files", type=int, default=0, help="for quick tests")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    files = sorted(glob.glob(os.path.join(a.data, "*.sgf.gz")))
    if a.limit_files:
        files = files[:a.limit_files]
    val_months = [m.strip() for m in a.val_months.split(",") if m.strip()]
    train, val = [], []
    kinds: dict[str, int] = {}
    t0 = time.time()
    for path in files:
        games = [g for g in read_sgf_collection(path) if len(g[0]) >= a.min_moves]
        for _, result in games:
            k = result_kind(result)[1]
            kinds[k] = kinds.get(k, 0) + 1
        is_val = any(m in os.path.basename(path) for m in val_months)
        (val if is_val else train).extend(games)
        print(f"{os.path.basename(path)}: {len(games)} games ({'val' if is_val else 'train'})",
              file=sys.stderr)
    if a.val_games:
        val = val[:a.val_games]
    GamePack.from_games(val).save(os.path.join(a.out, "val.npz.xz"))
    sizes = []
    for s in range(a.shards):
        pack = GamePack.from_games(train[s::a.shards])
        path = os.path.join(a.out, f"train-{s}.npz.xz")
        pack.save(path)
        sizes.append(os.path.getsize(path))
        print(f"{path}: {pack.games} games, {len(pack.moves)} moves, "
              f"{sizes[-1] / 1e6:.1f} MB", file=sys.stderr)
    n_moves = sum(len(g[0]) for g in train)
    print(f"train {len(train)} games / {n_moves} positions in {a.shards} shards "
          f"({sum(sizes) / 1e6:.1f} MB); val {len(val)} games / "
          f"{sum(len(g[0]) for g in val)} positions ({','.join(val_months)}); "
          f"results {dict(sorted(kinds.items()))}; {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
