#!/usr/bin/env python3
"""Search speed: `leelaz --benchmark` against Leela Zero 0.17's `--benchmark` on one file.

Both programs search the benchmark position (b R16, w D4, b C3; White to move, infinite clock,
seed 1, timemanage off) for the same number of visits with the same thread count, on the same
network file (by default a seeded random 6x128 net, as scripts/make_random_weights.py writes
it), alternately, several times; the best run of each counts, since this machine is shared
and loaded. The speed is each program's own `N visits, N nodes, N playouts, R n/s` line
(playouts per second of search, start-up excluded).

Then one instrumented run of our search in this process splits the time per playout into the
network (`Network.submit` and the wait for its result, timed around every call) and everything outside it (descent,
expansion, backup, the batch bookkeeping); `--profile` adds cProfile's top functions by own
time (profiling slows the search, so the split is measured without it).

    python scripts/bench_search.py                      # 6x128, 3200 visits, -t 2, best of 3
    python scripts/bench_search.py -v 800 --runs 2 --profile

`--search-only` measures the search alone instead: playouts per second of UCTSearch with an
instant network (the registry's `random` backend: peaked random policies and values at no
cost), so the figure is the Python tree work per playout (descent on state copies, PUCT selection, expansion, backup, early-stop
checks); with -w the real network runs too (NumPy backend unless --backend). Figures are also
given per CPU-second of this process, since the machine may be shared.

    python scripts/bench_search.py --search-only -v 3000 --batch 1 8
    python scripts/bench_search.py --search-only -w net.txt -v 400 --batch 1 4 16

Only the standard library, NumPy and leelaz; the reference is run as a subprocess.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCRIPTS = Path(__file__).resolve().parent
STATS = re.compile(r"^(\d+) visits, (\d+) nodes, (\d+) playouts, (\d+) n/s$", re.M)


def default_weights(folder: str) -> str:
    """A seeded random 6x128 network (the same bytes every time)."""
    sys.path.insert(0, str(SCRIPTS))
    import make_random_weights
    path = os.path.join(folder, "bench-6x128-s1.txt.gz")
    if not os.path.exists(path):
        make_random_weights.write_weights(path, make_random_weights.random_tensors(6, 128, 1))
    return path


def run_benchmark(argv: list[str], timeout: float) -> dict:
    """Run one `--benchmark` command; its stats line as numbers, plus the wall time."""
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - began
    m = STATS.search(proc.stderr)
    if proc.returncode != 0 or m is None:
        raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    visits, nodes, playouts, rate = (int(x) for x in m.groups())
    return {"visits": visits, "nodes": nodes, "playouts": playouts, "nps": rate, "wall": wall}


def split_playout_time(weights: str, visits: int, threads: int, profile: bool) -> dict:
    """Our benchmark search in this process, with the network's calls timed: seconds per playout
    inside and outside the network (and the cProfile text with --profile)."""
    from leelaz.cli import BENCHMARK_MOVES, build_engine, load_network, parse_args
    from leelaz.game.coords import WHITE, parse_color, parse_gtp_vertex
    from leelaz.game.timecontrol import TimeControl

    cfg = parse_args(["--cpu-only", "--benchmark", "-w", weights, "-t", str(threads),
                      "-v", str(visits)])
    network = load_network(cfg, weights, lambda text: None)
    engine = build_engine(cfg, out=io.StringIO(), err=io.StringIO(), network=network)
    spent = {"seconds": 0.0, "calls": 0, "positions": 0}
    submit = network.submit

    class TimedResult:
        """The pending batch; waiting for it counts as network time too."""

        def __init__(self, pending):
            self.pending = pending

        def result(self):
            began = time.perf_counter()
            try:
                return self.pending.result()
            finally:
                spent["seconds"] += time.perf_counter() - began

    def timed(states, *args, **kwargs):
        # The search calls submit(...).result(); evaluate() is the same pair.
        began = time.perf_counter()
        try:
            return TimedResult(submit(states, *args, **kwargs))
        finally:
            spent["seconds"] += time.perf_counter() - began
            spent["calls"] += 1
            spent["positions"] += len(states)

    network.submit = timed
    state = engine.state
    state.time_control = TimeControl.from_time_settings(0, 1, 0)
    for color, move in BENCHMARK_MOVES:
        state.play(parse_color(color), parse_gtp_vertex(move))
    state.set_to_move(WHITE)
    profiler = cProfile.Profile() if profile else None
    began = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    engine.search.think(state, WHITE)
    if profiler is not None:
        profiler.disable()
    total = time.perf_counter() - began
    playouts = max(1, engine.search.playouts)
    out = {"total": total, "playouts": playouts, "net": spent["seconds"],
           "calls": spent["calls"], "positions": spent["positions"],
           "outside": total - spent["seconds"]}
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
        out["profile"] = text.getvalue()
    return out


# ---- the search alone (--search-only) --------------------------------------------------------

def opening():
    """A few stones on the board, so that the position is not the trivial empty one."""
    from leelaz.game.state import GameState
    state = GameState()
    for color, x, y in ((0, 15, 15), (1, 3, 3), (0, 2, 15), (1, 15, 3), (0, 9, 9)):
        state.play(color, (y + 1) * 21 + x + 1)
    return state


def run_search_only(evaluator, visits: int, batch: int) -> tuple[int, float, float]:
    from leelaz.search.params import SearchParams
    from leelaz.search.search import UCTSearch
    search = UCTSearch(evaluator, SearchParams(max_visits=visits, batch_size=batch, quiet=True,
                                               timemanage="off"), rng=1)
    wall, cpu = time.perf_counter(), time.process_time()
    result = search.think(opening(), 1, time_limit_cs=10**9)
    return result.playouts, time.perf_counter() - wall, time.process_time() - cpu


def search_only(args) -> int:
    from leelaz.backends import create_backend
    from leelaz.nn.network import Network

    evaluators = [("instant", Network(None, create_backend("random", None, seed=1), seed=1))]
    if args.weights:
        evaluators.append((args.weights, Network.from_file(args.weights, backend=args.backend)))
    for name, ev in evaluators:
        for batch in args.batch:
            playouts, wall, cpu = run_search_only(ev, args.visits, batch)
            print(f"{name:>12s} batch {batch:3d}: {playouts:6d} playouts in {wall:6.2f} s = "
                  f"{playouts / wall:7.0f}/s ({playouts / max(cpu, 1e-9):7.0f} per CPU-second)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-w", "--weights", help="network file (default: random 6x128, seed 1)")
    ap.add_argument("-v", "--visits", type=int, default=3200,
                    help="visits per benchmark (LZ's --benchmark default: 3200)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of each program; best counts (0: only the in-process split)")
    ap.add_argument("--reference", default="/usr/games/leelaz")
    ap.add_argument("--profile", action="store_true", help="cProfile's top functions too")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--search-only", action="store_true",
                    help="the search alone with an instant evaluator (and -w's network)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8],
                    help="--search-only: batch sizes (leaves per evaluate call)")
    ap.add_argument("--backend", default="numpy", help="--search-only: backend for -w")
    args = ap.parse_args(argv)
    if args.search_only:
        return search_only(args)

    with tempfile.TemporaryDirectory() as folder:
        weights = args.weights or default_weights(folder)
        common = ["--cpu-only", "--benchmark", "-w", weights, "-t", str(args.threads)]
        if args.visits != 3200:
            common += ["-v", str(args.visits)]
        ours_cmd = [sys.executable, "-m", "leelaz", *common]
        ref_cmd = [args.reference, *common]
        print(f"network {weights}; {args.visits} visits, -t {args.threads}; "
              f"best of {args.runs} runs each, alternating (load average "
              f"{os.getloadavg()[0]:.1f} at start)")
        ours, ref = [], []
        for i in range(args.runs):
            for name, cmd, results in (("leelaz", ours_cmd, ours), ("LZ 0.17", ref_cmd, ref)):
                r = run_benchmark(cmd, args.timeout)
                results.append(r)
                print(f"  run {i + 1} {name:8s} {r['visits']} visits, {r['playouts']} "
                      f"playouts, {r['nps']} n/s ({r['wall']:.1f} s wall)", flush=True)
        if args.runs > 0:
            best_ours = max(r["nps"] for r in ours)
            best_ref = max(r["nps"] for r in ref)
            print(f"best: leelaz {best_ours} n/s, LZ 0.17 {best_ref} n/s, ratio "
                  f"{best_ours / max(best_ref, 1):.2f} (load average now "
                  f"{os.getloadavg()[0]:.1f})")

        split = split_playout_time(weights, args.visits, args.threads, args.profile)
        n = split["playouts"]
        print(f"in-process search: {n} playouts in {split['total']:.2f} s; network "
              f"{1000 * split['net'] / n:.2f} ms/playout ({split['calls']} evaluate calls, "
              f"{split['positions']} positions), outside the network "
              f"{1000 * split['outside'] / n:.2f} ms/playout "
              f"({100 * split['outside'] / split['total']:.0f}% of the search)")
        if "profile" in split:
            print(split["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
