"""Which backend runs the network: the composition root calls `choose_backend` once.

Owns: the policy. --cpu-only gives NumPy. Otherwise OpenCL on the --gpu ID given, else on the
fastest GPU; with no GPU, a CPU OpenCL device is used only if it beats NumPy on a timed batch.
Several --gpu ids (as Leela Zero 0.17 takes them): one OpenCL backend per id, in the order
given, wrapped in a MultiDeviceBackend that splits each batch across them; a repeated id reuses
the first one's precision and tuning. Any failure (no platform, no device or a bad id, a build
error) falls back to NumPy with a one-line reason on stderr; Leela Zero's own start-up lines
(platform, device, precision; once per id) come from the OpenCL backend.
Imports: backends (registry), backends.base, backends.multi_device, numpy, stdlib; pyopencl
only through backends.opencl_backend, imported lazily so a machine without it still starts.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from leelaz.backends import BackendUnavailable, create_backend
from leelaz.backends.base import INPUT_CHANNELS, Backend, NetWeights
from leelaz.backends.multi_device import MultiDeviceBackend


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
    from leelaz.backends.opencl_backend import list_devices

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
