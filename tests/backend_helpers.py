"""Inputs, error measure, tolerances, the OpenCL skip rule and the OpenCL backend as the tests
build it, shared by the backend tests (NumPy, OpenCL, several devices, PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import need

from leelaz.game.state import GameState


def random_planes(batch: int, seed: int) -> np.ndarray:
    """Plausible inputs: 0/1 stone planes, one all-ones side-to-move plane."""
    rng = np.random.default_rng(seed)
    planes = (rng.random((batch, 18, 19, 19)) < 0.3).astype(np.float32)
    planes[:, 16:] = 0.0
    planes[np.arange(batch), 16 + rng.integers(0, 2, batch)] = 1.0
    return planes


def random_game_positions(count: int, seed: int) -> list[GameState]:
    """States from seeded random games: captures, kos, and short histories again after each
    restart (every 40 positions), for the packed-input tests of the GPU backends."""
    rng = np.random.default_rng(seed)
    out = []
    state = GameState()
    while len(out) < count:
        out.append(state.copy())
        legal = state.legal_moves(state.to_move)
        if not legal or len(out) % 40 == 0:
            state = GameState()
            continue
        state.play(state.to_move, int(rng.choice(legal)))
    return out


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest absolute difference relative to the largest reference magnitude."""
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


#: Agreement of the OpenCL backend with NumPy (policy: rel_error; value: absolute), for fp32
#: storage and for fp16 storage (PoCL has no cl_khr_fp16; half storage with float arithmetic
#: works everywhere).
TOLERANCE = {"single": 1e-4, "half": 3e-2}


def record_packed_calls(backend, monkeypatch) -> list[int]:
    """The batch size of each `submit_packed` call on `backend` from now on; a batch sent as
    float planes (`submit`) fails the test."""
    calls: list[int] = []
    packed = backend.submit_packed
    monkeypatch.setattr(backend, "submit_packed", lambda *a: calls.append(a[1]) or packed(*a))
    monkeypatch.setattr(backend, "submit", lambda planes: pytest.fail("planes were sent"))
    return calls


def opencl_available() -> bool:
    """An OpenCL platform with at least one device is present (pyopencl imported lazily)."""
    from leelaz.backends.base import BackendUnavailable
    from leelaz.backends.device_choice import list_devices

    try:
        list_devices()
        return True
    except BackendUnavailable:
        return False


def need_opencl() -> None:
    """Skip without an OpenCL device (conftest.need: fails in strict mode, where
    scripts/install_test_deps.sh installed PoCL)."""
    need("an OpenCL device", opencl_available(),
         "sudo apt-get install pocl-opencl-icd, or pip install pocl-binary-distribution")


def opencl_backend(weights, precision: str = "single", batch_size: int = 2, **options):
    """An OpenCLBackend with the default tile sizes (no tuning: CI has 2 cores), quiet; skips
    the test without an OpenCL device (need_opencl). `options` go to OpenCLBackend."""
    need_opencl()
    from leelaz.backends.opencl_backend import OpenCLBackend

    return OpenCLBackend(weights, precision=precision, batch_size=batch_size, tune="none",
                         quiet=True, **options)
