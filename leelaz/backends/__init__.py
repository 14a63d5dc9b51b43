"""Network backends behind one small seam (backends/base.py), looked up by name.

Owns: the registry. Imports: backends.* lazily, so pyopencl is only imported when asked for.
Backends never import game/, search/ or nn/.
"""

from __future__ import annotations

from leelaz.backends.base import Backend, NetWeights


class BackendUnavailable(RuntimeError):
    """A backend cannot run here (no OpenCL platform, no device, build failure, ...)."""


def _numpy(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.numpy_backend import NumpyBackend

    return NumpyBackend(weights, **options)


def _opencl(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.opencl_backend import OpenCLBackend

    return OpenCLBackend(weights, **options)


REGISTRY = {"numpy": _numpy, "opencl": _opencl}


def create_backend(name: str, weights: NetWeights, **options) -> Backend:
    """Build the backend called `name` for `weights`.

    Raises KeyError for an unknown name and BackendUnavailable when it cannot run here.
    Choosing between backends ("auto", --cpu-only, --gpu) is the caller's business.
    """
    return REGISTRY[name](weights, **options)
