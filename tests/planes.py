"""Inputs and error measure shared by the backend tests (NumPy, OpenCL, several devices)."""

from __future__ import annotations

import numpy as np


def random_planes(batch: int, seed: int) -> np.ndarray:
    """Plausible inputs: 0/1 stone planes, one all-ones side-to-move plane."""
    rng = np.random.default_rng(seed)
    planes = (rng.random((batch, 18, 19, 19)) < 0.3).astype(np.float32)
    planes[:, 16:] = 0.0
    planes[np.arange(batch), 16 + rng.integers(0, 2, batch)] = 1.0
    return planes


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest absolute difference relative to the largest reference magnitude."""
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
