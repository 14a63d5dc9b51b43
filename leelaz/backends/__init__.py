"""Network backends behind one small seam (backends/base.py), looked up by name.

Owns: the registry. Imports: backends.base, and the backends themselves lazily, so pyopencl is
only imported when asked for. Backends never import game/, search/ or nn/.

    numpy    the CPU forward pass (numpy_backend.py)
    opencl   the Winograd kernels on an OpenCL device (opencl_backend.py)
    torch    PyTorch (cuDNN on a GPU; the `torch` extra): torch_backend.py
    random   no network: seeded random outputs at no cost, for tests and the search's
             own benchmark (random_backend.py)
    check    another backend checked against a reference on every batch (check_backend.py)
"""

from __future__ import annotations

from leelaz.backends.base import Backend, BackendUnavailable, NetWeights

__all__ = ["REGISTRY", "Backend", "BackendUnavailable", "create_backend"]


def _numpy(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.numpy_backend import NumpyBackend

    return NumpyBackend(weights, **options)


def _opencl(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.opencl_backend import OpenCLBackend

    return OpenCLBackend(weights, **options)


def _torch(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.torch_backend import TorchBackend

    return TorchBackend(weights, **options)


def _random(weights: NetWeights | None, **options) -> Backend:
    from leelaz.backends.random_backend import RandomBackend

    return RandomBackend(weights, **options)


def _check(weights: NetWeights, **options) -> Backend:
    from leelaz.backends.check_backend import CheckBackend

    return CheckBackend(weights, create=create_backend, **options)


REGISTRY = {"numpy": _numpy, "opencl": _opencl, "torch": _torch, "random": _random, "check": _check}


def create_backend(name: str, weights: NetWeights | None, **options) -> Backend:
    """Build the backend called `name` for `weights`.

    Raises KeyError for an unknown name and BackendUnavailable when it cannot run here.
    Choosing between backends ("auto", --cpu-only, --gpu) is the caller's business
    (device_choice.py).
    """
    return REGISTRY[name](weights, **options)
