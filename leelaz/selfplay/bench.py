"""`leelaz bench selfplay`: self-play moves/s and visits/s, ours against Leela Zero 0.17 driven
the way autogtp drives it, same net, same device, same run.

Owns: `bench_selfplay`, `reference_selfplay` (K `leelaz -g` processes playing genmove loops),
`instant_backend` (the `random` backend: the host-side ceiling of one process),
`backend_peak` (the backend alone at a batch size). Imports: subprocess, numpy, backends,
selfplay.selfplay, selfplay.runner (the games' LoadPlan). The command line is
leelaz/tools/bench/selfplay.py.

The reference: K processes of `LZ -g -q --noponder -v 1601 -r 5 -m 30 -n -d -t 6 --batchsize
5 -w NET -s SEED` (autogtp's self-play line, autogtp/Management.cpp; `--cpu-only` added when
asked), each sent `genmove b` / `genmove w` in turn until a resignation, two passes or more
than 722 moves, then replaced by a fresh process (autogtp starts one per game). Moves/s =
all moves answered by all processes / wall time, start-up included, as autogtp's own
"ms/move". Ours: `play_selfplay` with the same settings for the same time (games in flight
at the end count their moves, as the reference's do).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np

#: autogtp's self-play flags (less -w, -s and the device choice).
AUTOGTP_FLAGS = "-g -q --noponder -v {visits} -r 5 -m 30 -n -d -t 6 --batchsize 5"
DEFAULT_REFERENCE = "/usr/games/leelaz"


@dataclass
class Throughput:
    label: str
    moves: int
    seconds: float
    visits: int = 0  # playouts (0 when unknown: the reference's -q hides them)
    evaluations: int = 0
    games: int = 0
    mean_batch: float = 0.0  # rows per network call

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        extra = ""
        if self.visits:
            extra += f", {self.visits / self.seconds:,.0f} visits/s"
        if self.evaluations:
            extra += f", {self.evaluations / self.seconds:,.0f} evals/s"
        ms = 1000 * self.seconds / self.moves if self.moves else 0.0
        return (f"{self.label}: {self.moves} moves in {self.seconds:.1f} s = "
                f"{self.moves_per_second:.2f} moves/s ({ms:.0f} ms/move){extra}")


def instant_backend(weights):
    """The registry's `random` backend: answers at once, so a run measures what one process
    of self-play costs on the host alone (the ceiling a GPU cannot lift). Synchronous, so
    the runner keeps one group of games, as on NumPy."""
    from leelaz.backends import create_backend
    return create_backend("random", weights, asynchronous=False)


def ours(weights: str, *, seconds: float, visits: int, parallel: int, workers: int,
         cpu_only: bool, gpus=(), instant: bool = False, seed: int = 1,
         **engine_options) -> Throughput:
    from leelaz.selfplay.selfplay import play_selfplay
    folder = tempfile.mkdtemp(prefix="leelaz-bench-selfplay-")
    try:
        s = play_selfplay(weights, folder, 10**9, visits=visits, parallel=parallel,
                          workers=workers, seed=seed, cpu_only=cpu_only, gpus=tuple(gpus),
                          progress=False, seconds=seconds,
                          backend=instant_backend if instant else None, **engine_options)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    label = (f"leelaz --parallel {parallel} --workers {workers}"
             + (" (instant network)" if instant else f" [{s.backend}]"))
    if s.network_calls:
        label += f" mean batch {s.mean_batch:.1f}"
    return Throughput(label, s.moves, s.seconds, s.playouts, s.evaluations, s.games_this_run,
                      s.mean_batch)


def backend_peak(weights: str, batch: int, *, seconds: float = 10.0, cpu_only: bool = False,
                 gpus=(), precision: str = "auto", backend: str = "auto") -> float:
    """The backend alone: evaluations/s at `batch` rows a call, two calls in flight (as the
    runner's two groups of games keep it), on random 0/1 planes."""
    from leelaz.backends.weights import load_weights
    from leelaz.selfplay.runner import verbs_plan
    net = load_weights(weights)
    plan = verbs_plan(net, batch, cpu_only=cpu_only, gpus=gpus, precision=precision,
                      network_backend=backend)  # as the games chose it
    backend = plan.open_backend(net)
    planes = np.random.default_rng(1).integers(0, 2, (batch, 18, 19, 19)).astype(np.float32)
    backend.submit(planes).result()  # warm up (kernels built, buffers grown)
    done = 0
    began = time.monotonic()
    previous = backend.submit(planes)
    while time.monotonic() - began < seconds:
        current = backend.submit(planes)
        previous.result()
        done += batch
        previous = current
    previous.result()
    done += batch
    return done / (time.monotonic() - began)


def reference_selfplay(binary: str, weights: str, *, processes: int, seconds: float,
                       visits: int, cpu_only: bool, extra: str = "",
                       seed: int = 1) -> Throughput:
    """K reference processes playing genmove loops for `seconds`; moves answered / wall time."""
    flags = AUTOGTP_FLAGS.format(visits=visits)
    base = [binary] + shlex.split(flags) + (["--cpu-only"] if cpu_only else []) \
        + shlex.split(extra) + ["-w", weights]
    deadline = time.monotonic() + seconds
    counts = [0] * processes
    games = [0] * processes
    began = time.monotonic()

    def loop(k: int) -> None:
        game = 0
        while time.monotonic() < deadline:
            game += 1
            done = _reference_game(base + ["-s", str(seed * 1000 + k * 100 + game)], deadline,
                                   counts, k)
            games[k] += done

    threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Throughput(f"Leela Zero 0.17 x{processes} ({' '.join(base[1:-2])})", sum(counts),
                      time.monotonic() - began, games=sum(games))


def _reference_game(argv, deadline, counts, k) -> int:
    """One game in a fresh process; 1 if it finished before the deadline."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    try:
        passes = moves = 0
        color = "b"
        while time.monotonic() < deadline:
            proc.stdin.write(f"genmove {color}\n")
            proc.stdin.flush()
            reply = ""
            while True:
                line = proc.stdout.readline()
                if not line:
                    return 0
                if line.startswith("=") or line.startswith("?"):
                    reply = line[1:].strip().lower()
                    proc.stdout.readline()  # the blank line after the reply
                    break
            if time.monotonic() > deadline:
                return 0  # answered after the end: not counted
            counts[k] += 1
            moves += 1
            if reply == "resign":
                return 1
            passes = passes + 1 if reply == "pass" else 0
            if passes >= 2 or moves > 722:
                return 1
            color = "w" if color == "b" else "b"
        return 0
    finally:
        proc.kill()
        proc.wait()


def bench_selfplay(weights: str, *, seconds: float = 60.0, visits: int = 1601,
                   parallel: tuple = (8,), workers: tuple = (1,), reference: str | None = None,
                   reference_k: tuple = (1, 2, 4), reference_extra: str = "",
                   cpu_only: bool = False, gpus=(), instant: bool = False, say=print,
                   peak: bool = True, **engine_options) -> dict:
    """Ours at each (parallel, workers), then the reference at each K; prints a line each and
    the ratio of the best moves/s. Returns the figures."""
    rows = {"ours": [], "reference": []}
    for w in workers:
        for p in parallel:
            row = ours(weights, seconds=seconds, visits=visits, parallel=p, workers=w,
                       cpu_only=cpu_only, gpus=gpus, **engine_options)
            rows["ours"].append(row)
            say(row.line())
            if instant:
                row = ours(weights, seconds=seconds, visits=visits, parallel=p, workers=w,
                           cpu_only=True, instant=True, **engine_options)
                rows["ours"].append(row)
                say(row.line())
    binary = reference if reference is not None else \
        (DEFAULT_REFERENCE if os.path.exists(DEFAULT_REFERENCE) else None)
    if binary:
        for k in reference_k:
            row = reference_selfplay(binary, weights, processes=k, seconds=seconds,
                                     visits=visits, cpu_only=cpu_only, extra=reference_extra)
            rows["reference"].append(row)
            say(row.line())
    real = [r for r in rows["ours"] if "instant" not in r.label]
    if real and peak:
        best = max(real, key=lambda r: r.moves_per_second)
        batch = max(1, round(best.mean_batch))
        rate = backend_peak(weights, batch, seconds=min(seconds, 15.0), cpu_only=cpu_only,
                            gpus=gpus, precision=engine_options.get("precision", "auto"),
                            backend=engine_options.get("network_backend") or "auto")
        reached = best.evaluations / best.seconds if best.seconds else 0.0
        say(f"backend alone at batch {batch} (one process): {rate:,.0f} evals/s; "
            f"{best.label} reached {reached:,.0f} evals/s ({100 * reached / rate:.0f}%)")
        rows["peak"] = rate
    if real and rows["reference"]:
        best = max(real, key=lambda r: r.moves_per_second)
        ref = max(rows["reference"], key=lambda r: r.moves_per_second)
        ratio = best.moves_per_second / ref.moves_per_second if ref.moves_per_second else 0
        say(f"best: {best.label} {best.moves_per_second:.2f} moves/s against {ref.label} "
            f"{ref.moves_per_second:.2f} moves/s: {ratio:.2f}x")
        rows["ratio"] = ratio
    return rows
