"""`leelaz bench net`: network evaluations per second, ours against Leela Zero 0.17 in one run.

Owns: the network benchmark. Imports: backends/, tools.bench.common.

For each network (a file, or BxF for a seeded random net) and precision: build the backend,
check it against NumPy (OpenCL), time `forward` at each batch size on mid-game-like planes,
and, where the C++ Leela Zero is installed, its own `netbench` over GTP on the same file (CPU,
`--ref-threads` threads) in the same run, alternating with ours over `--rounds` rounds (best
counts: the machine may be shared). Each row also gives evaluations per CPU-second (for the
reference: the child's CPU time minus a start-up-only run's). With OpenCL: the FLOP rate of
the Winograd products actually executed and of the direct convolution they stand for, the
fraction of the device's peak (CUs x 128 lanes x 2 x clock for fp32 on an NVIDIA SM, CUs x
4096 x clock when the tuner chose the tensor-core sgemm), and with --profile the device time
per kernel of one forward pass at the largest batch. With torch (--backend torch, PyTorch on
CUDA --gpu ID or the CPU): the check against NumPy, and the FLOP rate of the direct
convolutions (what cuDNN is asked to compute).
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import time

import click
import numpy as np

from leelaz.tools import ToolError
from leelaz.tools.bench.common import (CONTEXT, IntList, load_line, network_file,
                                       reference_binary, say, table)

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


def time_forward(backend, batch: int, seconds: float) -> tuple[float, float]:
    """(evals per wall second, evals per CPU second) of backend.forward at this batch size."""
    planes = sample_planes(batch)
    backend.forward(planes)  # warm-up: buffers, kernels, the batch's enqueue plan
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        backend.forward(planes)
        done += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and done >= 3 * batch:
            return done / elapsed, done / max(time.process_time() - cpu, 1e-9)


def conv_flops(w) -> tuple[float, float]:
    """(Winograd GEMM FLOPs, direct-convolution FLOPs) of the 3x3 layers, per position."""
    shapes = [w.input_conv.weights.shape] + [c.weights.shape for b in w.tower for c in b]
    wino = sum(2.0 * 36 * 25 * k * c for k, c, _, _ in shapes)
    direct = sum(2.0 * 361 * 9 * k * c for k, c, _, _ in shapes)
    return wino, direct


def check_against_numpy(backend, weights, batch: int = 8) -> tuple[float, float]:
    """(max relative policy error, max absolute value error) against the NumPy backend."""
    from leelaz.backends.numpy_backend import NumpyBackend

    planes = sample_planes(batch, seed=9)
    policy, value = backend.forward(planes)
    want_p, want_v = NumpyBackend(weights).forward(planes)
    return (float(np.abs(policy - want_p).max() / np.abs(want_p).max()),
            float(np.abs(value - want_v).max()))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run_reference(binary: str, weights: str, threads: int, script: str):
    before = _children_cpu()
    r = subprocess.run([binary, "--cpu-only", "-g", "-t", str(threads), "--noponder", "-w",
                        weights], input=script, capture_output=True, text=True, timeout=600)
    return r, _children_cpu() - before


def reference_netbench(binary: str, weights: str, threads: int,
                       evals: int) -> tuple[float, float] | None:
    """The reference's own netbench figure (n/s) and its evals per CPU second, or None."""
    try:
        _, startup_cpu = _run_reference(binary, weights, threads, "quit\n")
        r, cpu = _run_reference(binary, weights, threads, f"netbench {evals}\nquit\n")
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"reference failed: {e}")
        return None
    m = NETBENCH.search(r.stderr)
    if not m:
        say(f"reference printed no netbench line: {r.stderr[-300:]!r}")
        return None
    count = int(m.group(1))
    return count / float(m.group(2)), count / max(cpu - startup_cpu, 1e-9)


def _build(backend: str, weights, precision: str, options: dict):
    from leelaz.backends import BackendUnavailable, create_backend

    if backend in ("opencl", "torch"):
        options = dict(options, precision=precision)
    try:
        return create_backend(backend, weights, **options)
    except BackendUnavailable as exc:
        raise ToolError(f"the {backend} backend cannot run here: {exc}") from None


def _opencl_notes(be, weights, name: str, precision: str, check: bool, profile: bool,
                  batches: list[int]) -> dict:
    """The check against NumPy, the device's peak and (--profile) the per-kernel times."""
    notes: dict = {"device": be.device.name.strip(), "sgemm": be.params.key(),
                   "tensor_cores": bool(be.params.tc)}
    dev = be.device
    per_clock = 4096 if be.params.tc else 256
    notes["peak_flops"] = dev.max_compute_units * per_clock * dev.max_clock_frequency * 1e6
    if check:
        notes["policy_rel_err"], notes["value_abs_err"] = check_against_numpy(be, weights)
        say(f"# {name} {precision} on {notes['device']}: vs NumPy policy rel err "
            f"{notes['policy_rel_err']:.2e}, value abs err {notes['value_abs_err']:.2e}")
    if profile:
        batch = max(batches)
        totals = be.profile(sample_planes(batch))
        notes["profile_s"] = totals
        say(f"# {name} {precision} batch {batch} device time per kernel: " + ", ".join(
            f"{k} {v * 1e3:.2f} ms" for k, v in sorted(totals.items(), key=lambda t: -t[1]))
            + f"; total {sum(totals.values()) * 1e3:.2f} ms")
    return notes


def _torch_notes(be, weights, name: str, check: bool) -> dict:
    """The device and the check against NumPy."""
    notes: dict = {"device": str(be.device), "precision": be.precision}
    if check:
        notes["policy_rel_err"], notes["value_abs_err"] = check_against_numpy(be, weights)
        say(f"# {name} torch {be.precision} on {be.device}: vs NumPy policy rel err "
            f"{notes['policy_rel_err']:.2e}, value abs err {notes['value_abs_err']:.2e}")
    return notes


@click.command("net", context_settings=CONTEXT)
@click.option("-w", "--weights", "nets", multiple=True, metavar="FILE|BxF",
              help="Networks (repeat): files, or BLOCKSxFILTERS for a seeded random net. "
                   "Default: 6x128 and 10x128.")
@click.option("--backend", type=click.Choice(["numpy", "opencl", "torch"]), default="numpy",
              show_default=True, help="torch: PyTorch on CUDA (--gpu ID) or else the CPU.")
@click.option("--precision", multiple=True, type=click.Choice(["single", "half", "auto"]),
              help="OpenCL and torch precisions (repeat; default: OpenCL single and half, "
                   "torch auto = half on CUDA, single on the CPU).")
@click.option("--batches", type=IntList(), default="1,8,32", show_default=True,
              help="Batch sizes.")
@click.option("--seconds", type=click.FloatRange(0, None, min_open=True), default=5.0,
              show_default=True, help="Timing per batch size.")
@click.option("--threads", type=click.IntRange(1, None), default=None,
              help="NumPy backend worker threads, torch's CPU threads (default: their own "
                   "choice).")
@click.option("--tune", type=click.Choice(["none", "fast", "full"]), default="fast",
              show_default=True, help="OpenCL sgemm tuning.")
@click.option("--gpu", multiple=True, type=int,
              help="OpenCL device ids (repeat); torch: the CUDA device (the first id).")
@click.option("--check/--no-check", default=True, show_default=True,
              help="OpenCL and torch: compare with the NumPy backend first.")
@click.option("--profile", is_flag=True, help="OpenCL: device time per kernel.")
@click.option("--reference", default=None, metavar="PATH",
              help="The C++ Leela Zero 0.17 (default: the installed one, if any).")
@click.option("--no-reference", is_flag=True, help="Measure ours only.")
@click.option("--ref-threads", type=click.IntRange(1, None), default=2, show_default=True,
              help="The reference's -t (it runs --cpu-only).")
@click.option("--ref-evals", type=click.IntRange(1, None), default=400, show_default=True,
              help="Evaluations of the reference's own `netbench` command.")
@click.option("--rounds", type=click.IntRange(1, None), default=1, show_default=True,
              help="Ours and the reference alternate this many times; the best counts.")
@click.option("--json", "json_path", default=None, help="Also write the rows here.")
def command(nets, backend, precision, batches, seconds, threads, tune, gpu, check, profile,
            reference, no_reference, ref_threads, ref_evals, rounds, json_path) -> None:
    """Network evaluations per second by network, backend, precision and batch size."""
    from leelaz.backends.weights import WeightsError, load_weights

    nets = nets or ("6x128", "10x128")
    batches = sorted(batches)
    precisions = {"opencl": precision or ("single", "half"),
                  "torch": precision or ("auto",)}.get(backend, ("single",))
    reference = None if no_reference else (reference or reference_binary())
    options = {"threads": threads} if threads and backend == "numpy" else {}
    if backend == "opencl":
        options = {"tune": tune, "batch_size": max(batches), "gpus": list(gpu) or None,
                   "quiet": True}
    if backend == "torch":
        options = {"gpus": list(gpu) or None, "quiet": True, "threads": threads}
    rows, records = [], []
    for spec in nets:
        path = network_file(spec)
        try:
            weights = load_weights(path)
        except WeightsError as exc:
            raise ToolError(str(exc)) from None
        name = f"{weights.blocks}x{weights.filters}"
        wino, direct = conv_flops(weights)
        flops = {"opencl": wino, "torch": direct}.get(backend)
        for prec in precisions:
            be = _build(backend, weights, prec, options)
            notes = {}
            if backend == "opencl":
                notes = _opencl_notes(be, weights, name, prec, check, profile, batches)
            elif backend == "torch":
                notes = _torch_notes(be, weights, name, check)
            engine = backend if backend == "numpy" else f"{backend} {be.precision}"
            best: dict[int, tuple[float, float]] = {}
            ref_best = None
            for _ in range(rounds):
                for batch in batches:
                    rate, per_cpu = time_forward(be, batch, seconds)
                    old = best.get(batch, (0.0, 0.0))
                    best[batch] = (max(old[0], rate), max(old[1], per_cpu))
                    say(f"{name:>8} {engine:>13} batch {batch:4d}: {rate:9.1f} evals/s, "
                        f"{per_cpu:9.1f} per CPU-s")
                if reference and prec == precisions[0]:
                    got = reference_netbench(reference, path, ref_threads, ref_evals)
                    if got is not None:
                        say(f"{name:>8} reference -t {ref_threads}: {got[0]:9.1f} evals/s, "
                            f"{got[1]:9.1f} per CPU-s")
                        ref_best = got if ref_best is None else (max(ref_best[0], got[0]),
                                                                 max(ref_best[1], got[1]))
            for batch in batches:
                rate, per_cpu = best[batch]
                tflops = f"{rate * flops / 1e12:.2f}" if flops else ""
                rows.append([name, engine, batch, rate, per_cpu, tflops])
                records.append({"net": name, "engine": engine, "batch": batch,
                                "evals_per_s": rate, "per_cpu_s": per_cpu, **notes})
            if ref_best is not None:
                rows.append([name, f"LZ 0.17 -t {ref_threads}", 1, ref_best[0], ref_best[1], ""])
                records.append({"net": name, "engine": f"lz-0.17 -t {ref_threads}",
                                "evals_per_s": ref_best[0], "per_cpu_s": ref_best[1]})
            del be
    say(load_line())
    header = ["net", "engine", "batch", "evals/s", "per CPU-s",
              "direct conv TFLOP/s" if backend == "torch" else "Winograd TFLOP/s"]
    if backend == "numpy":
        header, rows = header[:-1], [row[:-1] for row in rows]
    say(table(header, rows))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(records, f, indent=1)
