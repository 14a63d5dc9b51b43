"""OpenCL devices: their enumeration and numbering (`list_devices`, the ids --gpu takes) and
the choice of one by id or speed (`pick_device`), as Leela Zero's src/OpenCL.cpp lists
and picks them.

Owns: `list_devices`, `device_score`, `pick_device`. Imports: backends.base; pyopencl only
inside the functions, so a machine without it still imports this module. The OpenCL backend
picks its device here, and device_choice.py (the policy, above the backend registry) numbers
the --gpu ids here.
"""

from __future__ import annotations

from leelaz.backends.base import BackendUnavailable


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
