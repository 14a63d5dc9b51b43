#!/usr/bin/env python3
"""Network evaluations per second: our backend against the C++ Leela Zero 0.17 in one run.

For each random network (made with make_random_weights.py, seed 1) this times
`backend.forward` at each batch size on realistic input planes, and runs the reference's own
`netbench` over GTP on the same file (--cpu-only, 2 threads by default), then prints a table.

    python scripts/bench_net.py                          # numpy, 6x128 and 10x128, batch 1 8 32
    python scripts/bench_net.py --backend opencl --nets 6x128 --batches 1 8 32 64
    python scripts/bench_net.py --no-reference --seconds 2

Evaluations per second = positions evaluated / wall time, after one warm-up call per batch.
The machine these run on is often shared, so each row also gives evaluations per CPU-second
(our process's CPU time; for the reference, the child's CPU time minus that of a start-up-only
run on the same file): wall-clock figures move with the load, CPU-time figures much less.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_random_weights  # noqa: E402

from leelaz.backends import create_backend  # noqa: E402
from leelaz.backends.weights import load_weights  # noqa: E402

NETBENCH = re.compile(r"(\d+) evaluations in\s+([\d.]+) seconds -> (\d+) n/s")


def sample_planes(batch: int, seed: int = 0) -> np.ndarray:
    """Mid-game-like inputs: about 40% of points occupied, 8 history planes per side."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(3, size=(batch, 19, 19), p=[0.6, 0.2, 0.2])
    planes = np.zeros((batch, 18, 19, 19), np.float32)
    planes[:, 0:8] = (cells == 1)[:, None]
    planes[:, 8:16] = (cells == 2)[:, None]
    planes[:, 16] = 1.0
    return planes


def bench_backend(backend, batch: int, seconds: float) -> tuple[float, float]:
    """(evals per wall second, evals per CPU second) of backend.forward at this batch size."""
    planes = sample_planes(batch)
    backend.forward(planes)  # warm-up: buffers, kernels
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        backend.forward(planes)
        done += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and done >= 2 * batch:
            return done / elapsed, done / max(time.process_time() - cpu, 1e-9)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_reference(binary: str, weights: str, threads: int, script: str):
    before = _children_cpu()
    r = subprocess.run([binary, "--cpu-only", "-g", "-t", str(threads), "--noponder", "-w",
                        weights], input=script, capture_output=True, text=True, timeout=600)
    return r, _children_cpu() - before


def bench_reference(binary: str, weights: str, threads: int,
                    evals: int) -> tuple[float, float] | None:
    """The reference's own netbench figure (n/s) and its evals per CPU second, or None."""
    try:
        _, startup_cpu = _run_reference(binary, weights, threads, "quit\n")
        r, cpu = _run_reference(binary, weights, threads, f"netbench {evals}\nquit\n")
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"reference failed: {e}", file=sys.stderr)
        return None
    m = NETBENCH.search(r.stderr)
    if not m:
        print(f"reference printed no netbench line:\n{r.stderr[-1000:]}", file=sys.stderr)
        return None
    count = int(m.group(1))
    return count / float(m.group(2)), count / max(cpu - startup_cpu, 1e-9)


def parse_net(text: str) -> tuple[int, int]:
    blocks, filters = text.lower().split("x")
    return int(blocks), int(filters)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="numpy", help="numpy or opencl")
    p.add_argument("--nets", nargs="+", default=["6x128", "10x128"], help="BLOCKSxFILTERS")
    p.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--seconds", type=float, default=5.0, help="timing per batch size")
    p.add_argument("--threads", type=int, default=None,
                   help="backend worker threads (numpy; default: its own choice)")
    p.add_argument("--reference", default=shutil.which("leelaz", path="/usr/games:" +
                                                       os.environ.get("PATH", "")))
    p.add_argument("--ref-threads", type=int, default=2)
    p.add_argument("--ref-evals", type=int, default=400)
    p.add_argument("--no-reference", action="store_true")
    a = p.parse_args(argv)

    options = {"threads": a.threads} if a.threads else {}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for net in a.nets:
            blocks, filters = parse_net(net)
            path = os.path.join(folder, f"bench-{blocks}x{filters}.txt")
            make_random_weights.write_weights(
                path, make_random_weights.random_tensors(blocks, filters, 1))
            backend = create_backend(a.backend, load_weights(path), **options)
            for batch in a.batches:
                rate, per_cpu = bench_backend(backend, batch, a.seconds)
                rows.append((net, f"{a.backend}", batch, rate, per_cpu))
                print(f"{net:>8} {a.backend:>8} batch {batch:3d}: {rate:8.1f} evals/s, "
                      f"{per_cpu:8.1f} per CPU-s", file=sys.stderr, flush=True)
            if not a.no_reference and a.reference:
                result = bench_reference(a.reference, path, a.ref_threads, a.ref_evals)
                if result is not None:
                    rows.append((net, f"lz-0.17 -t {a.ref_threads}", 1) + result)
                    print(f"{net:>8} reference -t {a.ref_threads}: {result[0]:8.1f} evals/s, "
                          f"{result[1]:8.1f} per CPU-s", file=sys.stderr, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"\n{'net':>8}  {'engine':<14} {'batch':>5}  {'evals/s':>9}  {'per CPU-s':>9}")
    for net, engine, batch, rate, per_cpu in rows:
        print(f"{net:>8}  {engine:<14} {batch:>5}  {rate:9.1f}  {per_cpu:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
