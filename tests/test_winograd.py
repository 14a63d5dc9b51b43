"""Winograd F(4x4, 3x3): the matrices, the filter layout U, and the tile transforms, each
checked against a direct cross-correlation computed with plain loops here."""

from __future__ import annotations

import numpy as np
import pytest

from leelaz.backends import winograd as W


def direct(x, w):
    """'same' 3x3 cross-correlation, x [C, 19, 19, B], w [K, C, 3, 3], float64 loops."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((w.shape[0], 19, 19, x.shape[3]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("kc,cyxb->kyxb", w[:, :, i, j], xp[:, i:i + 19, j:j + 19, :])
    return out


def test_single_tile_identity():
    """At [(G g Gt) * (Bt d B)] A is the 4x4 valid cross-correlation of d with g."""
    rng = np.random.default_rng(1)
    d, g = rng.normal(size=(6, 6)), rng.normal(size=(3, 3))
    y = W.AT @ ((W.G @ g @ W.G.T) * (W.BT @ d @ W.BT.T)) @ W.AT.T
    want = np.array([[np.sum(d[r:r + 3, c:c + 3] * g) for c in range(4)] for r in range(4)])
    np.testing.assert_allclose(y, want, atol=1e-12)


def test_transform_filter_layout():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(5, 3, 3, 3)).astype(np.float32)
    u = W.transform_filter(w)
    assert u.shape == (36, 3, 5) and u.dtype == np.float32 and u.flags.c_contiguous
    for k in range(5):
        for c in range(3):
            want = W.G @ w[k, c].astype(np.float64) @ W.G.T
            np.testing.assert_allclose(u[:, c, k].reshape(6, 6), want, rtol=1e-6, atol=1e-7)


def test_tile_view_reads_the_documented_window():
    padded = np.arange(2 * 3 * 22 * 22, dtype=np.float32).reshape(2, 22, 22, 3)
    v = W.tile_view(padded)
    assert v[4, 5, 1, 3, 2, 2] == padded[1, 4 * 3 + 4, 4 * 2 + 5, 2]
    out = np.zeros((2, 22, 22, 3), np.float32)
    W.output_view(out)[1, 2, 3, 4, 1, 2] = 7.0
    assert out[1, 1 + 4 * 2 + 3, 1 + 4 * 4 + 1, 2] == 7.0 and out.sum() == 7.0


@pytest.mark.parametrize("batch", [1, 3])
def test_float32_pipeline_equals_direct(batch):
    rng = np.random.default_rng(3)
    c, k = 16, 12
    x = rng.normal(size=(c, 19, 19, batch)).astype(np.float32)
    w = rng.normal(size=(k, c, 3, 3)).astype(np.float32)
    v = W.input_transform(W.pad_board(x))
    m = np.matmul(W.transform_filter(w).transpose(0, 2, 1), v)
    y = W.output_transform(m)
    want = direct(x, w)
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, atol=1e-4 * np.abs(want).max())


def test_float64_reference_exact():
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(4, 19, 19, 2)), rng.normal(size=(6, 4, 3, 3))
    np.testing.assert_allclose(W.convolve_reference(x, w), direct(x, w), atol=1e-11)
