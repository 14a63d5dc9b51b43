"""`leelaz dump-supervised`: Leela Zero's dump_supervised over whole SGF collections, in parallel.

Owns: the verb (one process per input file, a progress bar over all games, the summary).
Imports: click, training.supervised, game.sgf, leelaz.progress.

Each input file is dumped exactly as the GTP command `dump_supervised FILE OUTDIR/NAME` would
(Leela Zero's skip rules, games shuffled within the file, 32 games per chunk): the chunks are
OUTDIR/NAME.0.gz, NAME.1.gz, ... where NAME is the file name without .sgf/.gz. One bad file is
reported and does not stop the others; the exit status is then 1.

One run at a time writes into OUTDIR (a lock on the folder, selfplay/lifetime.py), and the
workers die with the verb: a rerun after a SIGKILL never shares the folder with a dying run.
Workers are spawned, so that their parent is this process whatever Python's default start
method is.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time

import click

from leelaz.progress import progress
from leelaz.tools import ToolError, make_folder
from leelaz.training.supervised import DumpStats, dump_supervised

_counter = None  # the shared game counter, set in each worker by _init


def _init(counter, parent: int) -> None:
    """A pool worker's start: it dies with the verb (a SIGKILLed run must not leave workers
    writing into the folder a rerun uses), and counts games into the parent's counter."""
    from leelaz.selfplay.lifetime import die_with_parent
    die_with_parent(parent)
    global _counter
    _counter = counter


def _bump(n: int) -> None:
    with _counter.get_lock():
        _counter.value += n


def chunk_name(path: str) -> str:
    """`tygem-9d-2011-12.sgf.gz` -> `tygem-9d-2011-12`."""
    base = os.path.basename(path)
    for ext in (".gz", ".sgf"):
        if base.endswith(ext):
            base = base[:-len(ext)]
    return base


def _dump_one(job) -> tuple[str, DumpStats | None, str | None]:
    path, out_dir, seed, level = job
    messages: list[str] = []
    try:
        stats = dump_supervised(path, os.path.join(out_dir, chunk_name(path)),
                                log=messages.append, seed=seed, level=level, progress=_bump)
    except Exception as err:  # noqa: BLE001 (one bad file must not stop the others)
        return path, None, f"{type(err).__name__}: {err}"
    not_found = sum(1 for m in messages if m.startswith("Mainline move not found"))
    return path, stats, f"{not_found} illegal main-line moves" if not_found else None


def _count_games(path: str) -> int:
    """Cheap estimate for the bar: one game per line in these collections."""
    from leelaz.game.sgf import SgfError, read_text
    try:
        return sum(1 for line in read_text(path).splitlines() if line.strip().startswith("("))
    except (SgfError, OSError):
        return 0  # the worker reports the failure


def _check_inputs(files: tuple[str, ...]) -> None:
    names: dict[str, str] = {}
    for path in files:
        if not os.path.isfile(path):
            raise ToolError(f"{path}: no such file")
        name = chunk_name(path)
        if name in names:
            raise ToolError(f"{path} and {names[name]} would both write {name}.N.gz")
        names[name] = path


def skipped_text(skipped: dict[str, int]) -> str:
    """`3 skipped (no result 2, handicap 1)`, or `none skipped`: the summary's words."""
    if not skipped:
        return "none skipped"
    parts = ", ".join(f"{reason} {n}" for reason, n in
                      sorted(skipped.items(), key=lambda item: (-item[1], item[0])))
    return f"{sum(skipped.values())} skipped ({parts})"


def _add(totals: DumpStats, stats: DumpStats) -> None:
    totals.games_in_file += stats.games_in_file
    totals.games_dumped += stats.games_dumped
    totals.positions += stats.positions
    totals.chunks += stats.chunks
    for k, v in stats.skipped.items():
        totals.skipped[k] = totals.skipped.get(k, 0) + v


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
EPILOG = """\b
Example:
  leelaz dump-supervised ../shared/data/tygem-9d/*.sgf.gz -o /data/chunks
"""


@click.command(context_settings=CONTEXT, epilog=EPILOG,
               short_help="dump_supervised over SGF collections, a process per file.")
@click.argument("files", nargs=-1, required=True, metavar="SGF...")
@click.option("-o", "--out-dir", required=True, metavar="DIR",
              help="Folder for the chunks (one run at a time).")
@click.option("-j", "--workers", type=click.IntRange(1, None), default=os.cpu_count() or 1,
              show_default=True, help="Files dumped at the same time.")
@click.option("--seed", type=int, default=None, help="Shuffle seed (default: random).")
@click.option("--level", type=click.IntRange(0, 9), default=9, show_default=True,
              help="gzip level (Leela Zero uses 9).")
def command(files, out_dir, workers, seed, level) -> int:
    """Write Leela Zero training chunks from SGF collections (.sgf, .sgf.gz), one process per
    file, as the GTP command dump_supervised does for one."""
    _check_inputs(files)
    make_folder(out_dir)
    from leelaz.selfplay.lifetime import FolderBusy, FolderLock
    try:
        lock = FolderLock(out_dir, "dump-supervised")
    except FolderBusy as exc:
        raise ToolError(str(exc)) from None
    with lock:
        return _dump_all(files, out_dir, workers, seed, level)


def _dump_all(files, out_dir, workers, seed, level) -> int:
    total = sum(_count_games(p) for p in files)
    ctx = mp.get_context("spawn")
    counter = ctx.Value("q", 0)
    jobs = [(p, out_dir, None if seed is None else seed + i, level)
            for i, p in enumerate(files)]
    totals, failed, start = DumpStats(), 0, time.time()
    with progress(total, "games", unit="game") as bar, \
            ctx.Pool(min(workers, len(jobs)), initializer=_init,
                     initargs=(counter, os.getpid())) as pool:
        pending = pool.imap_unordered(_dump_one, jobs)
        shown = 0
        for _ in jobs:
            while True:
                try:
                    path, stats, note = pending.next(timeout=0.5)
                    break
                except mp.TimeoutError:
                    bar.update(counter.value - shown)
                    shown = counter.value
            bar.update(counter.value - shown)
            shown = counter.value
            if stats is None:
                failed += 1
                print(f"{path}: FAILED: {note}", file=sys.stderr, flush=True)
            else:
                _add(totals, stats)
    elapsed = time.time() - start
    print(f"{len(files) - failed} files, {totals.games_in_file} games, "
          f"{totals.games_dumped} dumped, {totals.positions} positions in "
          f"{len(totals.chunks)} chunks, {skipped_text(totals.skipped)}; {elapsed:.1f} s, "
          f"{totals.positions / max(elapsed, 1e-9):.0f} positions/s", file=sys.stderr)
    return 1 if failed else 0
