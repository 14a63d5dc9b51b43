"""The `random` backend: no network, seeded random outputs at no cost.

Owns: `RandomBackend`. Imports: numpy, backends.base.

What it is for: measuring the search's own cost per playout (on a fast GPU the engine waits on
the search, not on the device, so that is the figure small networks' visits/s follow) and
driving tests that need a network-shaped answer without a network. The logits are standard
normals scaled by `sharpness` (3 gives a peaked policy like a trained net's, so the tree has a
trained network's shape rather than a random net's degenerate chains) and the values are
uniform in 0.2..0.8. `asynchronous` is True by default so the search pipelines as it does on a
GPU; the answer is computed at submit time, so the draws follow the order of the submits.
"""

from __future__ import annotations

import numpy as np

from leelaz.backends.base import POLICY_OUTPUTS, Backend, NetWeights


class RandomBackend(Backend):
    """Backend.forward with seeded random outputs; see the module docstring."""

    name = "random"

    def __init__(self, weights: NetWeights | None = None, seed: int = 1,
                 sharpness: float = 3.0, asynchronous: bool = True, **_options):
        self.weights = weights
        self.asynchronous = asynchronous
        self.sharpness = sharpness
        self.rng = np.random.default_rng(seed)

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(planes)
        return ((self.sharpness * self.rng.standard_normal((n, POLICY_OUTPUTS))).astype(
                    np.float32),
                self.rng.uniform(0.2, 0.8, n).astype(np.float32))
