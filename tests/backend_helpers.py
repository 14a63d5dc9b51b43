"""Inputs, error measure and the OpenCL skip rule shared by the backend tests (NumPy, OpenCL,
several devices)."""

from __future__ import annotations

import numpy as np
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
