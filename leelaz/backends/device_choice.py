"""Which devices run the network, once the loader has chosen the kind of backend.

Owns: `build_backend` (a backend of a kind the loader chose, nn/loading.py's `choose`, on
the devices it names) and `preferred_backend` (OpenCL or NumPy, on a timed batch), and
`cuda_for_torch`; the policy that puts them together is nn/loading.py's. OpenCL device
enumeration and the choice of one device by id or speed (`list_devices`, `pick_device`) are
backends/cl_devices.py's.
OpenCL runs on the --gpu ID given, else on the fastest GPU. Several --gpu ids (as Leela Zero
0.17 takes them): one OpenCL backend per id, in the order given, wrapped in a
MultiDeviceBackend that splits each batch across them; a repeated id reuses the first one's
precision and tuning. Any failure (no platform, no device or a bad id, a build error) falls
back to NumPy with a one-line reason on stderr; Leela Zero's own start-up lines (platform,
device, precision; once per id) come from the OpenCL backend.
With no GPU, a CPU OpenCL device is used only if it beats NumPy on a timed batch
(`preferred_backend`; its answer is cached per machine, drivers and width: choice_cache).
PyTorch runs on CUDA device N for --gpu N (one backend per id, split as above), cuda:0
without --gpu, the CPU with --cpu-only or without CUDA. It is never swapped for another
backend here: when it cannot run, BackendUnavailable says why (torch not installed, no CUDA
for a --gpu id), and the loader decides what follows.
Imports: backends (registry), backends.base, backends.cl_devices, backends.demux,
backends.choice_cache, numpy, stdlib; pyopencl only inside the functions that need it, so a
machine without it still starts (and a start the cache answers never pays for importing it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import replace

import numpy as np

from leelaz.backends import create_backend
from leelaz.backends.base import INPUT_CHANNELS, Backend, BackendUnavailable, NetWeights
from leelaz.backends.cl_devices import list_devices, pick_device
from leelaz.backends.demux import MultiDeviceBackend


def _seconds_per_batch(backend: Backend, planes: np.ndarray, runs: int = 2) -> float:
    backend.forward(planes)  # warm-up: lazy compiles, first-touch allocations
    start = time.perf_counter()
    for _ in range(runs):
        backend.forward(planes)
    return (time.perf_counter() - start) / runs


def build_backend(weights: NetWeights, kind: str, *, gpus=(), cpu_only: bool = False,
                  precision: str = "auto", batch_size: int = 8, tune: str = "fast",
                  quiet: bool = False, log=None) -> Backend:
    """A backend of `kind` ("numpy", "opencl" or "torch"), per the module docstring: OpenCL
    never raises (NumPy with a line instead); PyTorch raises BackendUnavailable when it
    cannot run as asked. `cpu_only` is PyTorch's CPU device. `batch_size`: the search's,
    which OpenCL is tuned for and PyTorch captures its CUDA graphs for. `log` takes the
    lines (default: stderr unless `quiet`)."""
    def say(line: str) -> None:
        if log is not None:
            log(line)
        elif not quiet:
            print(line, file=sys.stderr, flush=True)

    gpus = list(gpus) or None
    if kind == "torch":
        return _torch(weights, cpu_only, gpus, precision, quiet, say, batch_size)
    if kind == "numpy":
        return create_backend("numpy", weights)
    if kind != "opencl":
        raise ValueError(f"unknown backend kind {kind!r}")
    try:
        if gpus and len(gpus) > 1:
            return _one_per_id(weights, gpus, precision=precision, batch_size=batch_size,
                               tune=tune, quiet=quiet)
        return create_backend("opencl", weights, gpus=gpus, precision=precision,
                              batch_size=batch_size, tune=tune, quiet=quiet)
    except (BackendUnavailable, ImportError) as e:
        say(f"OpenCL unavailable ({_one_line(e)}); using the NumPy backend.")
        return create_backend("numpy", weights)


def preferred_backend(weights: NetWeights, batch_size: int, say,
                      use_cache: bool = True) -> str:
    """"opencl" or "numpy" for a start without --cpu-only and --gpu (nn/loading.choose):
    OpenCL when the best device is a GPU, or a CPU device that beats NumPy on a timed batch;
    NumPy when it does not or OpenCL is unavailable. The answer (and the timings) are cached
    per machine, OpenCL drivers and network width (backends.choice_cache); `say` gets one
    line either way.
    """
    from leelaz.backends import choice_cache

    width = weights.filters
    choice = choice_cache.lookup(width, batch_size, say) if use_cache else None
    if choice is not None:
        say(_describe(choice, batch_size) + f" (measured before; {choice_cache.cache_path()})")
        return choice["backend"]
    choice = _measure(weights, batch_size)
    say(_describe(choice, batch_size) + ".")
    if use_cache:
        choice_cache.store(width, batch_size, choice, say)
    return choice["backend"]


def _measure(weights: NetWeights, batch_size: int) -> dict:
    """The choice and why: {"backend", "device", "why", "opencl_ms", "numpy_ms"}."""
    try:
        device = pick_device()
        name = device.name.strip()
        if _is_gpu(device):
            return {"backend": "opencl", "device": name, "why": "gpu"}
        # A CPU device: race it against NumPy on a one-block copy of the network (same
        # width, same heads), so that the check costs about one block's time whatever the
        # depth.
        probe = replace(weights, tower=weights.tower[:1])
        probe_cl = create_backend("opencl", probe, device=device, precision="single",
                                  batch_size=batch_size, tune="none", quiet=True)
    except (BackendUnavailable, ImportError) as e:
        return {"backend": "numpy", "why": "unavailable", "reason": _one_line(e)}
    planes = np.random.default_rng(1).integers(0, 2, (batch_size, INPUT_CHANNELS, 19, 19))
    planes = planes.astype(np.float32)
    t_cl = _seconds_per_batch(probe_cl, planes)
    t_np = _seconds_per_batch(create_backend("numpy", probe), planes)
    return {"backend": "opencl" if t_cl < t_np else "numpy", "device": name, "why": "race",
            "opencl_ms": round(t_cl * 1e3, 1), "numpy_ms": round(t_np * 1e3, 1)}


def _describe(choice: dict, batch_size: int) -> str:
    """One line for the start-up messages."""
    if choice.get("why") == "unavailable":
        return f"OpenCL unavailable ({choice.get('reason', '?')}); using the NumPy backend"
    if choice.get("why") == "gpu":
        return f"OpenCL GPU {choice.get('device', '?')}; using OpenCL"
    timing = (f"{choice.get('opencl_ms', '?')} ms against {choice.get('numpy_ms', '?')} ms "
              f"per batch of {batch_size}, one block")
    if choice["backend"] == "opencl":
        return f"OpenCL CPU device {choice.get('device', '?')} beats NumPy ({timing}); using OpenCL"
    return f"OpenCL CPU device is slower than NumPy ({timing}); using the NumPy backend"


def _torch(weights: NetWeights, cpu_only: bool, gpus: list[int] | None, precision: str,
           quiet: bool, say, batch_size: int) -> Backend:
    """The PyTorch backend as the module docstring says; several --gpu ids: one per id.
    `batch_size`: the search's, whose CUDA graphs are captured now (torch_backend.py)."""
    log = None if quiet else say
    options = dict(precision=precision, quiet=quiet, log=log, batch_size=batch_size)
    if cpu_only or not gpus or len(gpus) == 1:
        return create_backend("torch", weights, gpus=gpus, cpu=cpu_only, **options)
    from leelaz.backends.torch_backend import torch_device

    for gpu in gpus:  # every id checked before any device is set up: one line, no half start
        torch_device([gpu])
    return MultiDeviceBackend([create_backend("torch", weights, gpus=[gpu], **options)
                               for gpu in gpus])


#: Where NVIDIA's driver shows itself (Linux; /dev/dxg: WSL's GPU, any vendor's).
NVIDIA_DRIVER_PATHS = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg")


def torch_may_see_cuda() -> bool:
    """NVIDIA's driver is here and PyTorch is installed: `cuda_for_torch` without importing
    torch, for a start that opens the network in the background (nn/loading.py), where
    that thread asks `cuda_for_torch` itself."""
    return (any(os.path.exists(path) for path in NVIDIA_DRIVER_PATHS)
            and importlib.util.find_spec("torch") is not None)


def cuda_for_torch() -> bool:
    """Whether PyTorch is installed and sees CUDA. The driver is looked for first, so that a
    machine without one never pays for importing torch (a second or more, at every start of
    a CPU machine that has the `torch` extra)."""
    if not torch_may_see_cuda():
        return False
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken torch is no torch
        return False


def visible_cuda_devices() -> list[str]:
    """The CUDA devices a child process may be given, as CUDA_VISIBLE_DEVICES names them:
    this process's CUDA_VISIBLE_DEVICES entries when it is set, else one per GPU NVIDIA's
    driver lists (/proc/driver/nvidia/gpus); [] without the driver. Torch is not imported:
    a parent that only hands devices to its workers never starts CUDA itself."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [d.strip() for d in given.split(",") if d.strip()]
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


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


def _is_gpu(device) -> bool:
    import pyopencl as cl

    return bool(device.type & cl.device_type.GPU)


def _one_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text[:200] or type(e).__name__
