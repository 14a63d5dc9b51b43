"""Which backend runs the network: the composition root calls `choose_backend` once.

Owns: OpenCL device enumeration and numbering (`list_devices`, the ids --gpu takes), the
choice of one device by id or speed (`pick_device`), and the policy. --cpu-only gives NumPy.
Otherwise OpenCL on the --gpu ID given, else on the fastest GPU; with no GPU, a CPU OpenCL device is used only if it beats NumPy on a timed batch.
Several --gpu ids (as Leela Zero 0.17 takes them): one OpenCL backend per id, in the order
given, wrapped in a MultiDeviceBackend that splits each batch across them; a repeated id reuses
the first one's precision and tuning. Any failure (no platform, no device or a bad id, a build
error) falls back to NumPy with a one-line reason on stderr; Leela Zero's own start-up lines
(platform, device, precision; once per id) come from the OpenCL backend.
Imports: backends (registry), backends.base, backends.multi_device, numpy, stdlib; pyopencl
only inside the functions that need it, so a machine without it still starts.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from leelaz.backends import create_backend
from leelaz.backends.base import INPUT_CHANNELS, Backend, BackendUnavailable, NetWeights
from leelaz.backends.multi_device import MultiDeviceBackend


def list_devices() -> list[tuple]:
    """Every OpenCL device, numbered across platforms in order (the numbering --gpu uses).

    (id, pyopencl Platform, pyopencl Device) each. Raises BackendUnavailable when there is no
    OpenCL platform at all (ImportError without pyopencl).
    """
    import pyopencl as cl

    try:
        platforms = cl.get_platforms()
    except (cl.Error, cl.LogicError, RuntimeError) as e:
        raise BackendUnavailable(f"no OpenCL platform ({e})") from None
    found = []
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for device in devices:
            found.append((len(found), platform, device))
    if not found:
        raise BackendUnavailable("no OpenCL device")
    return found


def device_score(device) -> float:
    """Rough speed: compute units x clock, GPUs first (as Leela Zero ranks them)."""
    import pyopencl as cl

    gpu = bool(device.type & cl.device_type.GPU)
    return (1e9 if gpu else 0.0) + device.max_compute_units * max(device.max_clock_frequency, 1)


def pick_device(gpus: list[int] | None = None, log=None):
    """The device with id gpus[0], or else the best-scoring device (GPUs before CPUs).

    One backend runs on one device: for several ids, device_choice builds a backend per id
    (passing each its own `gpus=[id]`) and wraps them in a MultiDeviceBackend."""
    import pyopencl as cl

    devices = list_devices()
    if log:
        log(f"Detected {len({id(p) for _, p, _ in devices})} OpenCL platforms.")
        for i, platform, device in devices:
            log(f"Device ID: {i}  {device.name.strip()} "
                f"({cl.device_type.to_string(device.type)}, {device.max_compute_units} CU, "
                f"{device.max_clock_frequency} MHz) on {platform.name.strip()}")
    if gpus:
        by_id = {i: d for i, _, d in devices}
        if gpus[0] not in by_id:
            raise BackendUnavailable(f"no OpenCL device with id {gpus[0]}")
        if len(gpus) > 1 and log:
            log(f"One OpenCLBackend uses one device; ignoring ids {gpus[1:]}.")
        return by_id[gpus[0]]
    return max((d for _, _, d in devices), key=device_score)


def _seconds_per_batch(backend: Backend, planes: np.ndarray, runs: int = 2) -> float:
    backend.forward(planes)  # warm-up: lazy compiles, first-touch allocations
    start = time.perf_counter()
    for _ in range(runs):
        backend.forward(planes)
    return (time.perf_counter() - start) / runs


def choose_backend(weights: NetWeights, cpu_only: bool = False, gpus: list[int] | None = None,
                   precision: str = "auto", batch_size: int = 8, tune: str = "fast",
                   quiet: bool = False, selfcheck: float = 0.0, log=None) -> Backend:
    """The backend to use, per the policy in the module docstring. Never raises for OpenCL."""
    def say(line: str) -> None:
        if log is not None:
            log(line)
        elif not quiet:
            print(line, file=sys.stderr, flush=True)

    if cpu_only:
        return create_backend("numpy", weights)
    try:
        if gpus and len(gpus) > 1:
            return _one_per_id(weights, gpus, precision=precision, batch_size=batch_size,
                               tune=tune, quiet=quiet, selfcheck=selfcheck)
        backend = create_backend("opencl", weights, gpus=gpus, precision=precision,
                                 batch_size=batch_size, tune=tune, quiet=quiet,
                                 selfcheck=selfcheck)
    except (BackendUnavailable, ImportError) as e:
        say(f"OpenCL unavailable ({_one_line(e)}); using the NumPy backend.")
        return create_backend("numpy", weights)
    if gpus or _is_gpu(backend):
        return backend
    # A CPU device: race it against NumPy on a one-block copy of the network (same width,
    # same heads), so that the check costs about one block's time whatever the depth.
    probe = replace(weights, tower=weights.tower[:1])
    probe_cl = create_backend("opencl", probe, device=backend.device, precision="single",
                              batch_size=batch_size, tune="none", quiet=True)
    planes = np.random.default_rng(1).integers(0, 2, (batch_size, INPUT_CHANNELS, 19, 19))
    planes = planes.astype(np.float32)
    t_cl = _seconds_per_batch(probe_cl, planes)
    t_np = _seconds_per_batch(create_backend("numpy", probe), planes)
    if t_cl < t_np:
        say(f"OpenCL CPU device {backend.device.name.strip()}: {t_cl * 1e3:.1f} ms per batch "
            f"of {batch_size} (one block), NumPy {t_np * 1e3:.1f} ms; using OpenCL.")
        return backend
    say(f"OpenCL CPU device is slower than NumPy ({t_cl * 1e3:.1f} ms against "
        f"{t_np * 1e3:.1f} ms per batch of {batch_size}, one block); using the NumPy backend.")
    return create_backend("numpy", weights)


def _one_per_id(weights: NetWeights, gpus: list[int], precision: str, tune: str,
                **options) -> MultiDeviceBackend:
    """One OpenCL backend per --gpu id, in order. A repeated id takes the precision its first
    backend chose and reads the tuning it cached instead of timing and searching again.
    Every id is checked before any device is set up, so a bad one costs nothing."""
    known = {i for i, _, _ in list_devices()}
    missing = [gpu for gpu in gpus if gpu not in known]
    if missing:
        raise BackendUnavailable(f"no OpenCL device with id {missing[0]}")
    first: dict[int, Backend] = {}
    parts = []
    for gpu in gpus:
        again = first.get(gpu)
        backend = create_backend(
            "opencl", weights, gpus=[gpu],
            precision=again.precision if again is not None else precision,
            tune="fast" if again is not None and tune == "full" else tune, **options)
        first.setdefault(gpu, backend)
        parts.append(backend)
    return MultiDeviceBackend(parts)


def _is_gpu(backend) -> bool:
    import pyopencl as cl

    return bool(backend.device.type & cl.device_type.GPU)


def _one_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text[:200] or type(e).__name__
