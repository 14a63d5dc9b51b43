#!/usr/bin/env python3
"""Evaluations per second of the OpenCL backend by network, precision and batch size.

For each weights file and precision: build the backend (tuning the sgemm at the largest batch),
check it against the NumPy backend on a few positions (max relative policy error, max value
error), then time `forward` at each batch size for about `--seconds` each. FLOP rates count the
Winograd products actually executed (2*36*25*K*C per 3x3 layer and position) and also the direct
convolution they stand for (2*361*9*K*C). Peak: CUs x 128 lanes x 2 x clock, the fp32 peak of an
NVIDIA SM, or, when the tuner chose the tensor-core sgemm, CUs x 4096 x clock, the dense fp16
tensor peak of a Hopper SM; the fractions only mean something on such devices.

    python scripts/bench_opencl.py -w net.txt --precision single half --batches 1 8 64 256
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), ".."))

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402
from leelaz.backends.opencl_backend import OpenCLBackend  # noqa: E402
from leelaz.backends.weights import load_weights  # noqa: E402


def conv_flops(w) -> tuple[float, float]:
    """(Winograd GEMM FLOPs, direct-convolution FLOPs) of the 3x3 layers, per position."""
    shapes = [w.input_conv.weights.shape] + [c.weights.shape for b in w.tower for c in b]
    wino = sum(2.0 * 36 * 25 * k * c for k, c, _, _ in shapes)
    direct = sum(2.0 * 361 * 9 * k * c for k, c, _, _ in shapes)
    return wino, direct


def planes_for(batch: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    planes = (rng.random((batch, 18, 19, 19)) < 0.3).astype(np.float32)
    planes[:, 16] = 1.0
    planes[:, 17] = 0.0
    return planes


def check(backend, weights, batch: int = 8) -> dict:
    planes = planes_for(batch, seed=9)
    policy, value = backend.forward(planes)
    want_p, want_v = NumpyBackend(weights).forward(planes)
    return {"policy_rel_err": float(np.abs(policy - want_p).max() / np.abs(want_p).max()),
            "value_abs_err": float(np.abs(value - want_v).max())}


def time_batch(backend, batch: int, seconds: float) -> float:
    planes = planes_for(batch)
    backend.forward(planes)
    backend.forward(planes)
    runs, start = 0, time.perf_counter()
    while True:
        backend.forward(planes)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and runs >= 3:
            return batch * runs / elapsed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-w", "--weights", nargs="+", required=True)
    p.add_argument("--precision", nargs="+", default=["single", "half"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    p.add_argument("--tune", default="fast", choices=("none", "fast", "full"))
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--gpu", type=int, nargs="*", default=None)
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args(argv)
    results = []
    for path in a.weights:
        t0 = time.perf_counter()
        weights = load_weights(path)
        name = f"{weights.blocks}x{weights.filters}"
        print(f"# {name}: loaded {path} in {time.perf_counter() - t0:.1f} s", flush=True)
        wino, direct = conv_flops(weights)
        for precision in a.precision:
            t0 = time.perf_counter()
            be = OpenCLBackend(weights, gpus=a.gpu, precision=precision,
                               batch_size=max(a.batches), tune=a.tune)
            dev = be.device
            per_clock = 4096 if be.params.tc else 256
            peak = dev.max_compute_units * per_clock * dev.max_clock_frequency * 1e6
            row = {"net": name, "precision": precision, "device": dev.name.strip(),
                   "params": be.params.key(), "setup_s": time.perf_counter() - t0,
                   "peak_flops": peak, "tensor_cores": bool(be.params.tc), "evals_per_s": {}}
            if not a.no_check:
                row.update(check(be, weights))
                print(f"# {name} {precision}: vs NumPy policy rel err "
                      f"{row['policy_rel_err']:.2e}, value abs err {row['value_abs_err']:.2e}",
                      flush=True)
            for batch in a.batches:
                eps = time_batch(be, batch, a.seconds)
                row["evals_per_s"][batch] = eps
                print(f"{name:8s} {precision:6s} batch {batch:4d}: {eps:9.1f} evals/s  "
                      f"winograd {eps * wino / 1e12:6.2f} TFLOP/s "
                      f"({100 * eps * wino / peak:5.1f}% of {'fp16 tensor' if be.params.tc else 'fp32'}"
                      f" peak), direct-equivalent "
                      f"{eps * direct / 1e12:6.2f} TFLOP/s", flush=True)
            batch = max(a.batches)
            totals = be.profile(planes_for(batch))
            row["profile_s"] = totals
            print(f"# {name} {precision} batch {batch} device time per kernel: " + ", ".join(
                f"{k} {v * 1e3:.2f} ms" for k, v in sorted(totals.items(), key=lambda t: -t[1]))
                + f"; total {sum(totals.values()) * 1e3:.2f} ms", flush=True)
            results.append(row)
            del be
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
