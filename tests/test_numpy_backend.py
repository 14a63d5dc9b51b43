"""The NumPy Winograd backend against the naive direct-convolution oracle (tests/oracle.py).

Tolerance: relative error 1e-4 of the largest magnitude of each output (float32 Winograd
against float64 direct convolution), for batch sizes 1, 2, 7 and 32, split over worker threads
or not.
"""

from __future__ import annotations

import numpy as np
import pytest

import oracle
from leelaz.backends import create_backend
from leelaz.backends.numpy_backend import CHUNK, NumpyBackend
from leelaz.backends.weights import load_weights

RTOL = 1e-4


def random_planes(batch: int, seed: int) -> np.ndarray:
    """Plausible inputs: disjoint stone planes for both sides, and one side-to-move plane."""
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, 3, size=(batch, 8, 19, 19))
    planes = np.zeros((batch, 18, 19, 19), np.float32)
    planes[:, 0:8] = cells == 1
    planes[:, 8:16] = cells == 2
    black = rng.integers(0, 2, size=batch).astype(bool)
    planes[black, 16] = 1.0
    planes[~black, 17] = 1.0
    return planes


def assert_close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL * np.abs(want).max())


@pytest.fixture(scope="module")
def net(random_weights):
    return load_weights(random_weights(2, 16, seed=7))


@pytest.mark.parametrize("batch", [1, 2, 7, 32])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_direct_convolution(net, batch, threads):
    planes = random_planes(batch, seed=batch)
    logits, value = NumpyBackend(net, threads=threads).forward(planes)
    want_logits, want_value = oracle.forward(net, planes)
    assert logits.dtype == np.float32 and value.dtype == np.float32
    assert logits.shape == (batch, 362) and value.shape == (batch,)
    assert_close(logits, want_logits)
    assert_close(value, want_value)
    assert np.all((value >= 0) & (value <= 1))


def test_wider_net_and_buffer_reuse(random_weights):
    """A net wider than the 18 input channels, evaluated twice: stale buffers would show."""
    w = load_weights(random_weights(1, 32, seed=3))
    backend = create_backend("numpy", w)
    a, b = random_planes(3, 1), random_planes(3, 2)
    backend.forward(a)
    logits, value = backend.forward(b)
    want_logits, want_value = oracle.forward(w, b)
    assert_close(logits, want_logits)
    assert_close(value, want_value)


def test_positions_are_independent_of_batch_neighbours(net):
    backend = NumpyBackend(net, threads=1)
    planes = random_planes(5, 11)
    batch_logits, batch_value = backend.forward(planes)
    alone_logits, alone_value = backend.forward(planes[3:4])
    np.testing.assert_allclose(batch_logits[3], alone_logits[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batch_value[3], alone_value[0], rtol=1e-5, atol=1e-6)


def test_rejects_wrong_shape(net):
    with pytest.raises(ValueError):
        NumpyBackend(net).forward(np.zeros((1, 17, 19, 19), np.float32))


def plain_tower(backend: NumpyBackend, planes: np.ndarray) -> np.ndarray:
    """The tower as the straightforward composition of winograd.py's functions, fresh arrays
    every layer: what the backend's buffers and precomputed views must reproduce bit for bit."""
    from leelaz.backends import winograd as W

    batch = planes.shape[0]

    def conv(x, plan, residual):
        m = np.matmul(W.input_transform(x), plan.u)
        out = np.zeros((W.PADDED, W.PADDED, batch, plan.outputs), np.float32)
        W.output_view(out)[...] = W.output_transform(m, batch) + np.tile(plan.shift, batch)
        inner = out[1:20, 1:20]
        if residual is not None:
            inner += residual[1:20, 1:20]
        np.maximum(inner, np.float32(0), out=inner)
        out[20], out[:, 20] = 0, 0
        return out

    x = W.pad_board(planes.transpose(2, 3, 0, 1))
    x = conv(x, backend.input_plan, None)
    for first, second in backend.tower:
        x = conv(conv(x, first, None), second, x)
    return x


@pytest.mark.parametrize("blocks,filters", [(2, 16), (1, 8)])
def test_forward_is_the_plain_composition_bit_for_bit(random_weights, blocks, filters):
    """The hot loop (reused buffers, views made once, whole-buffer ReLU) computes exactly the
    float32 operations of the plain composition: the same bits, batch after batch. (One
    worker, batches of one chunk: BLAS may round differently for another number of rows.)"""
    w = load_weights(random_weights(blocks, filters, seed=5))
    backend = NumpyBackend(w, threads=1)
    for batch, seed in [(1, 1), (3, 2), (1, 3), (CHUNK, 4), (3, 5)]:
        planes = random_planes(batch, seed)
        logits, value = backend.forward(planes)
        want_logits, want_value = backend._forward_heads(plain_tower(backend, planes), batch)
        assert np.array_equal(logits, want_logits) and np.array_equal(value, want_value)
