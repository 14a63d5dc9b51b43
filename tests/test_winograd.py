"""Winograd F(4x4, 3x3): the matrices, the filter layout U, and the tile transforms, each
checked against a direct cross-correlation computed with plain loops here."""

from __future__ import annotations

import numpy as np
import pytest

from leelaz.backends import winograd as W


def direct(x, w):
    """'same' 3x3 cross-correlation, x [19, 19, B, C], w [K, C, 3, 3] -> [19, 19, B, K], float64."""
    xp = np.pad(x.astype(np.float64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    out = np.zeros((19, 19, x.shape[2], w.shape[0]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("yxbc,kc->yxbk", xp[i:i + 19, j:j + 19], w[:, :, i, j])
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


def test_input_transform_tiles():
    """V[xi*6+nu, (ty, tx, b), c] = (Bt d B)[xi, nu] for the 6x6 window at (4ty, 4tx)."""
    rng = np.random.default_rng(5)
    padded = W.pad_board(rng.normal(size=(19, 19, 2, 3)).astype(np.float32))
    v = W.input_transform(padded)
    assert v.shape == (36, 50, 3)
    for ty, tx, b, c in [(0, 0, 0, 0), (2, 3, 1, 2), (4, 4, 1, 1)]:
        d = padded[4 * ty:4 * ty + 6, 4 * tx:4 * tx + 6, b, c].astype(np.float64)
        want = (W.BT @ d @ W.BT.T).ravel()
        np.testing.assert_allclose(v[:, (ty * 5 + tx) * 2 + b, c], want, rtol=1e-5, atol=1e-5)


def test_output_view_places_cells():
    out = np.zeros((22, 22, 2, 3), np.float32)
    W.output_view(out)[1, 2, 3, 3, 1 * 3 + 2] = 7.0  # ty=1 a=2 tx=3 c=3, b=1 k=2
    assert out[1 + 4 + 2, 1 + 12 + 3, 1, 2] == 7.0 and out.sum() == 7.0


@pytest.mark.parametrize("batch", [1, 3])
def test_float32_pipeline_equals_direct(batch):
    rng = np.random.default_rng(3)
    c, k = 16, 12
    x = rng.normal(size=(19, 19, batch, c)).astype(np.float32)
    w = rng.normal(size=(k, c, 3, 3)).astype(np.float32)
    y = W.convolve(x, w)
    want = direct(x, w)
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, atol=1e-4 * np.abs(want).max())
