#!/usr/bin/env python3
"""Where the OpenCL backend's time goes: evaluations per second and device time per kernel.

For one network file, in half and single precision, at a few batch sizes: the backend's own
throughput (forward calls back to back for about a second) and one profiled forward pass
(OpenCLBackend.profile: device seconds per kernel name, the four largest shown). Compare the
evaluations per second with the engine's `--benchmark` visits/s to see how much the search
leaves the device idle.

    python scripts/profile_kernels.py net.txt [--batches 32 64 256]

On the lent H100 it needs the NVIDIA ICD file and pyopencl as scripts/bench_engine_gpu.sh sets
them up.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from leelaz.backends.opencl_backend import OpenCLBackend
from leelaz.backends.weights import load_weights


def measure(backend: OpenCLBackend, batch: int, seconds: float = 1.0) -> tuple[float, dict]:
    """(evaluations per second, device seconds per kernel name) at `batch` positions."""
    rng = np.random.default_rng(1)
    planes = (rng.random((batch, 18, 19, 19)) < 0.3).astype(np.float32)
    backend.forward(planes)  # builds the batch's enqueue plan
    began, calls = time.perf_counter(), 0
    while time.perf_counter() - began < seconds:
        backend.forward(planes)
        calls += 1
    per_call = (time.perf_counter() - began) / calls
    return batch / per_call, backend.profile(planes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights")
    p.add_argument("--batches", nargs="+", type=int, default=[32, 64, 256])
    args = p.parse_args(argv)
    weights = load_weights(args.weights)
    for precision in ("half", "single"):
        backend = OpenCLBackend(weights, precision=precision, batch_size=args.batches[0],
                                tune="fast", quiet=True)
        for batch in args.batches:
            rate, kernels = measure(backend, batch)
            top = sorted(kernels.items(), key=lambda kv: -kv[1])[:4]
            print(f"{precision} batch {batch}: {rate:7.0f} evals/s, device "
                  f"{sum(kernels.values()) * 1e3:.2f} ms per batch: "
                  + ", ".join(f"{name} {sec * 1e3:.2f}" for name, sec in top), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
