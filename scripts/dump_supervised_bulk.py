#!/usr/bin/env python3
"""dump_supervised over whole SGF collections, one process per file, with a progress bar.

Each input file is dumped exactly as the GTP command `dump_supervised FILE OUTDIR/NAME` would
(Leela Zero's skip rules, games shuffled within the file, 32 games per chunk): the chunks are
OUTDIR/NAME.0.gz, NAME.1.gz, ... where NAME is the file name without .sgf/.gz. Files run in
parallel (--workers, default all cores); the bar counts games over all files (tqdm if it is
installed, a plain line on stderr otherwise). A summary goes to stderr at the end.

    python scripts/dump_supervised_bulk.py ../shared/data/tygem-9d/*.sgf.gz -o /data/chunks

Uses leelaz's public API only (leelaz.training.supervised).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

from leelaz.training.supervised import DumpStats, dump_supervised

_counter = None  # shared game counter, set in each worker by _init


def _init(counter) -> None:
    global _counter
    _counter = counter


def _bump(n: int) -> None:
    with _counter.get_lock():
        _counter.value += n


def _name(path: str) -> str:
    base = os.path.basename(path)
    for ext in (".gz", ".sgf"):
        if base.endswith(ext):
            base = base[:-len(ext)]
    return base


def _dump_one(job) -> tuple[str, DumpStats | None, str | None]:
    path, out_dir, seed, level = job
    messages: list[str] = []
    try:
        stats = dump_supervised(path, os.path.join(out_dir, _name(path)), log=messages.append,
                                seed=seed, level=level, progress=_bump)
    except Exception as err:  # one bad file must not stop the others
        return path, None, f"{type(err).__name__}: {err}"
    not_found = sum(1 for m in messages if m.startswith("Mainline move not found"))
    return path, stats, f"{not_found} illegal main-line moves" if not_found else None


def _count_games(path: str) -> int:
    """Cheap estimate for the bar: one game per line in these collections."""
    from leelaz.game.sgf import SgfError, read_text
    try:
        return sum(1 for line in read_text(path).splitlines() if line.strip().startswith("("))
    except SgfError:
        return 0  # the worker reports the failure


class _Bar:
    """tqdm when available, else a line on stderr at most every 2 seconds."""

    def __init__(self, total: int):
        self.total, self.done, self._last = total, 0, 0.0
        self.start = time.time()
        try:
            from tqdm import tqdm
            self._tqdm = tqdm(total=total, unit="game", file=sys.stderr, smoothing=0.1,
                             mininterval=1.0)
        except ImportError:
            self._tqdm = None

    def update_to(self, done: int) -> None:
        if self._tqdm is not None:
            self._tqdm.update(done - self.done)
        elif done != self.done and (time.time() - self._last >= 2 or done >= self.total):
            self._last = time.time()
            rate = done / max(time.time() - self.start, 1e-9)
            print(f"{done}/{self.total} games ({rate:.0f} games/s)", file=sys.stderr, flush=True)
        self.done = done

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="SGF collections (.sgf or .sgf.gz)")
    ap.add_argument("-o", "--out-dir", required=True, help="folder for the chunks")
    ap.add_argument("-j", "--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=None, help="shuffle seed (default: random)")
    ap.add_argument("--level", type=int, default=9, help="gzip level (LZ uses 9)")
    args = ap.parse_args(argv)

    os.makedirs(args.out_dir, exist_ok=True)
    total = sum(_count_games(p) for p in args.files)
    counter = mp.Value("q", 0)
    jobs = [(p, args.out_dir, None if args.seed is None else args.seed + i, args.level)
            for i, p in enumerate(args.files)]
    bar = _Bar(total)
    totals = DumpStats()
    failed = 0
    start = time.time()
    with mp.Pool(min(args.workers, len(jobs)), initializer=_init, initargs=(counter,)) as pool:
        pending = pool.imap_unordered(_dump_one, jobs)
        remaining = len(jobs)
        while remaining:
            try:
                path, stats, note = pending.next(timeout=0.5)
            except mp.TimeoutError:
                bar.update_to(counter.value)
                continue
            remaining -= 1
            bar.update_to(counter.value)
            if stats is None:
                failed += 1
                print(f"{path}: FAILED: {note}", file=sys.stderr)
                continue
            totals.games_in_file += stats.games_in_file
            totals.games_dumped += stats.games_dumped
            totals.positions += stats.positions
            totals.chunks += stats.chunks
            for k, v in stats.skipped.items():
                totals.skipped[k] = totals.skipped.get(k, 0) + v
    bar.close()
    elapsed = time.time() - start
    print(f"{len(args.files) - failed} files, {totals.games_in_file} games, "
          f"{totals.games_dumped} dumped, {totals.positions} positions in "
          f"{len(totals.chunks)} chunks, skipped {totals.skipped}; {elapsed:.1f} s, "
          f"{totals.positions / max(elapsed, 1e-9):.0f} positions/s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
