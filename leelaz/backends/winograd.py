"""Winograd F(4x4, 3x3) for 19x19 boards (reference doc 4.6), shared by every backend.

Owns: the matrices G, Bt, At; `transform_filter` (filters -> U, done once when the weights
load, and the layout the OpenCL backend uploads); the NumPy tile input/output transforms.
Imports: numpy only.

Geometry: a 4x4 output tile comes from a 6x6 input tile (ALPHA = 6). A 19x19 board is covered
by 5x5 = 25 tiles (WTILES = 5, covering 20x20). Activations are kept zero-padded to 22x22 with
the board at offset (1, 1); tile (ty, tx) reads padded rows 4ty..4ty+5 and columns 4tx..4tx+5,
tile index ty*5 + tx. Outputs beyond row/column 18 are thrown away.

With U[xi*6+nu][c][k] = (G g_kc Gt)[xi][nu] and V[xi*6+nu][c][p] = (Bt d_cp B)[xi][nu], the
convolution is M[xn] = U[xn]^T V[xn] (36 matrix products) and each output tile is At M A.
The NumPy path applies the two-sided tile transforms as single products with the Kronecker
matrices BB = kron(Bt, Bt) [36, 36] and AA = kron(At, At) [16, 36]: one BLAS call each,
which on a CPU beats the separable form done with NumPy's small-array operations.
"""

from __future__ import annotations

import numpy as np

BOARD = 19
ALPHA = 6  # input tile side
TILE = 4  # output tile side
WTILES = 5  # tiles per side
TILES = WTILES * WTILES  # 25 tiles per board
PADDED = 22  # padded board side (board at offset 1; 5 tiles read rows 0..21)

_S = np.sqrt(2.0)

G = np.array([
    [1.0, 0.0, 0.0],
    [-2.0 / 3, -_S / 3, -1.0 / 3],
    [-2.0 / 3, _S / 3, -1.0 / 3],
    [1.0 / 6, _S / 6, 1.0 / 3],
    [1.0 / 6, -_S / 6, 1.0 / 3],
    [0.0, 0.0, 1.0],
])

BT = np.array([
    [1.0, 0.0, -5.0 / 2, 0.0, 1.0, 0.0],
    [0.0, -_S, -2.0, _S / 2, 1.0, 0.0],
    [0.0, _S, -2.0, -_S / 2, 1.0, 0.0],
    [0.0, -_S / 2, -1.0 / 2, _S, 1.0, 0.0],
    [0.0, _S / 2, -1.0 / 2, -_S, 1.0, 0.0],
    [0.0, 1.0, 0.0, -5.0 / 2, 0.0, 1.0],
])

AT = np.array([
    [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
    [0.0, _S / 2, -_S / 2, _S, -_S, 0.0],
    [0.0, 1.0 / 2, 1.0 / 2, 2.0, 2.0, 0.0],
    [0.0, _S / 4, -_S / 4, 2 * _S, -2 * _S, 1.0],
])

#: Two-sided transforms as single matrices over flattened tiles (row-major xi*6 + nu).
BB = np.kron(BT, BT).astype(np.float32)  # [36, 36]: vec(Bt d B) = BB @ vec(d)
AA = np.kron(AT, AT).astype(np.float32)  # [16, 36]: vec(At m A) = AA @ vec(m)


def transform_filter(w: np.ndarray) -> np.ndarray:
    """3x3 filters w[K, C, 3, 3] -> U float32 [36, C, K], U[xi*6+nu, c, k] = (G w[k,c] Gt)[xi, nu].

    Computed in float64 and rounded once. Done once when the weights load; both the NumPy and
    the OpenCL backends use this layout.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 4 or w.shape[2:] != (3, 3):
        raise ValueError(f"expected filters [K, C, 3, 3], got {w.shape}")
    u = np.einsum("xi,kcij,yj->xyck", G, w, G)  # [6, 6, C, K]
    return np.ascontiguousarray(u.reshape(ALPHA * ALPHA, w.shape[1], w.shape[0]),
                                dtype=np.float32)


def tile_view(padded: np.ndarray) -> np.ndarray:
    """Strided view [6, 6, C, B, 5, 5] of padded activations [C, B, 22, 22] (no copy).

    view[xi, nu, c, b, ty, tx] = padded[c, b, 4ty + xi, 4tx + nu].
    """
    c, b, h, w = padded.shape
    assert h == PADDED and w == PADDED, padded.shape
    s = padded.strides
    return np.lib.stride_tricks.as_strided(
        padded, shape=(ALPHA, ALPHA, c, b, WTILES, WTILES),
        strides=(s[2], s[3], s[0], s[1], TILE * s[2], TILE * s[3]), writeable=False)


def input_transform(padded: np.ndarray, tiles: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """V float32 [36, C, B*25] from padded activations [C, B, 22, 22].

    `tiles` ([36, C*B*25] scratch) and `out` ([36, C*B*25]) may be passed to reuse buffers.
    """
    c, b = padded.shape[:2]
    p = b * TILES
    if tiles is None:
        tiles = np.empty((ALPHA * ALPHA, c * p), dtype=np.float32)
    np.copyto(tiles.reshape(ALPHA, ALPHA, c, b, WTILES, WTILES), tile_view(padded))
    if out is None:
        out = np.empty((ALPHA * ALPHA, c * p), dtype=np.float32)
    np.matmul(BB, tiles, out=out)
    return out.reshape(ALPHA * ALPHA, c, p)


def output_transform(m: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Board outputs [K, B, 19, 19] from M [36, K, B*25].

    `out` ([16, K*B*25] scratch) may be passed to reuse a buffer.
    """
    k, p = m.shape[1], m.shape[2]
    b = p // TILES
    if out is None:
        out = np.empty((TILE * TILE, k * p), dtype=np.float32)
    np.matmul(AA, m.reshape(ALPHA * ALPHA, k * p), out=out)
    y = out.reshape(TILE, TILE, k, b, WTILES, WTILES)  # [a, c, k, b, ty, tx]
    return untile(y)


def untile(y: np.ndarray) -> np.ndarray:
    """[4, 4, K, B, 5, 5] output tiles -> [K, B, 19, 19] (row 4ty+a, column 4tx+c); copies."""
    k, b = y.shape[2:4]
    z = y.transpose(2, 3, 4, 0, 5, 1)  # [K, B, ty, a, tx, c]
    return z.reshape(k, b, WTILES * TILE, WTILES * TILE)[:, :, :BOARD, :BOARD]


def convolve_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 'same' cross-correlation via Winograd, float64, for tests: x [C, B, 19, 19] -> [K, ...]."""
    c, b = x.shape[:2]
    padded = np.zeros((c, b, PADDED, PADDED))
    padded[:, :, 1:1 + BOARD, 1:1 + BOARD] = x
    tiles = np.ascontiguousarray(tile_view(padded)).reshape(36, c, b * TILES)
    v = np.einsum("ij,jcp->icp", np.kron(BT, BT), tiles)
    u = np.einsum("xi,kcij,yj->xyck", G, np.asarray(w, np.float64), G).reshape(36, c, -1)
    m = np.einsum("ick,icp->ikp", u, v)
    y = np.einsum("ij,jkp->ikp", np.kron(AT, AT), m).reshape(4, 4, -1, b, 5, 5)
    return np.ascontiguousarray(untile(y))
