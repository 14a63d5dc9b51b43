"""The backend seam: declared capabilities with defaults, and the registry's test backends.

References: NumPy's own forward pass (the `check` backend must return its inner backend's
answers unchanged and raise when the inner backend is wrong); the `random` backend's answers
are compared with the same NumPy generator drawn independently here.
"""

from __future__ import annotations

import numpy as np
import pytest

from leelaz.backends import REGISTRY, create_backend
from leelaz.backends.base import Backend, BackendUnavailable
from leelaz.backends.check_backend import SelfCheckError
from leelaz.backends.numpy_backend import NumpyBackend
from leelaz.backends.weights import load_weights


@pytest.fixture(scope="module")
def weights(random_weights):
    return load_weights(random_weights(1, 8, seed=3))


def planes(n: int) -> np.ndarray:
    return np.random.default_rng(4).integers(0, 2, (n, 18, 19, 19)).astype(np.float32)


def test_a_backend_with_only_forward_has_every_capability():
    class Minimal(Backend):
        def forward(self, x):
            return np.zeros((len(x), 362), np.float32), np.full(len(x), 0.5, np.float32)

    b = Minimal()
    assert (b.asynchronous, b.max_batch, b.accepts_packed_inputs, b.device) == \
        (False, None, False, None)
    policy, value = b.submit(planes(2)).result()
    assert policy.shape == (2, 362) and value.tolist() == [0.5, 0.5]
    with pytest.raises(NotImplementedError):
        b.submit_packed(b"", 0)


def test_backend_unavailable_has_one_home():
    import leelaz.backends as registry

    assert registry.BackendUnavailable is BackendUnavailable
    assert {"numpy", "opencl", "random", "check"} <= set(REGISTRY)


def test_random_backend_is_seeded_and_instant():
    b = create_backend("random", None, seed=7)
    assert b.asynchronous and b.weights is None
    policy, value = b.submit(planes(3)).result()
    rng = np.random.default_rng(7)
    assert np.array_equal(policy, (3 * rng.standard_normal((3, 362))).astype(np.float32))
    assert np.array_equal(value, rng.uniform(0.2, 0.8, 3).astype(np.float32))


def test_check_backend_passes_its_inner_answers_through(weights):
    b = create_backend("check", weights, inner="numpy")
    x = planes(3)
    got = b.forward(x)
    want = NumpyBackend(weights).forward(x)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert b.checked == 3


def test_check_backend_catches_a_wrong_backend(weights):
    b = create_backend("check", weights, inner=create_backend("random", None, seed=1))
    with pytest.raises(SelfCheckError, match="random check against numpy mismatch"):
        b.forward(planes(2))
