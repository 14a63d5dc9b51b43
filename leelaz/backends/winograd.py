"""Winograd F(4x4, 3x3) for 19x19 boards (reference doc 4.6), shared by every backend.

Owns: the matrices G, Bt, At; `transform_filter` (filters -> U, done once when the weights
load, and the layout the OpenCL backend uploads); the NumPy tile input/output transforms.
Imports: numpy only.

Geometry: a 4x4 output tile comes from a 6x6 input tile (ALPHA = 6). A 19x19 board is covered
by 5x5 = 25 tiles (WTILES = 5, covering 20x20). Activations are kept zero-padded to 22x22 with
the board at offset (1, 1); tile (ty, tx) reads padded rows 4ty..4ty+5 and columns 4tx..4tx+5,
tile index ty*5 + tx. Outputs beyond row/column 18 are thrown away. The NumPy helpers here use
the layout [C, 22, 22, B] (batch innermost) and number the P = 25 B tile columns (ty, tx, b).

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
    """Strided view [6, 6, C, 5, 5, B] of padded activations [C, 22, 22, B] (no copy).

    view[xi, nu, c, ty, tx, b] = padded[c, 4ty + xi, 4tx + nu, b]. The batch is the innermost
    axis so that gathers and scatters move runs of B contiguous floats.
    """
    c, h, w, b = padded.shape
    assert h == PADDED and w == PADDED, padded.shape
    s = padded.strides
    return np.lib.stride_tricks.as_strided(
        padded, shape=(ALPHA, ALPHA, c, WTILES, WTILES, b),
        strides=(s[1], s[2], s[0], TILE * s[1], TILE * s[2], s[3]), writeable=False)


def output_view(dst: np.ndarray) -> np.ndarray:
    """Writable view [K, 5, 4, 5, 4, B] of dst[K, 1 + 4ty + a, 1 + 4tx + c, B] (20x20 cells).

    Cells of row or column 20 lie outside the board: whoever writes through this view must
    zero them again, since they are padding for the next layer.
    """
    k, h, w, b = dst.shape
    s = dst.strides
    return np.lib.stride_tricks.as_strided(
        dst[:, 1:, 1:, :], shape=(k, WTILES, TILE, WTILES, TILE, b),
        strides=(s[0], TILE * s[1], s[1], TILE * s[2], s[2], s[3]))


def output_tiles(y: np.ndarray, k: int, b: int) -> np.ndarray:
    """[16, K*P] output transform result -> view [K, ty, a, tx, c, B] matching output_view."""
    return y.reshape(TILE, TILE, k, WTILES, WTILES, b).transpose(2, 3, 0, 4, 1, 5)


def input_transform(padded: np.ndarray, tiles: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """V float32 [36, C, P] (P = 25 B, ordered ty, tx, b) from padded [C, 22, 22, B].

    `tiles` and `out` ([36, C*P] float32) may be passed to reuse buffers.
    """
    c, b = padded.shape[0], padded.shape[3]
    p = b * TILES
    if tiles is None:
        tiles = np.empty((ALPHA * ALPHA, c * p), dtype=np.float32)
    np.copyto(tiles.reshape(ALPHA, ALPHA, c, WTILES, WTILES, b), tile_view(padded))
    if out is None:
        out = np.empty((ALPHA * ALPHA, c * p), dtype=np.float32)
    np.matmul(BB, tiles, out=out)
    return out.reshape(ALPHA * ALPHA, c, p)


def output_transform(m: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Board outputs [K, 19, 19, B] (a copy) from M [36, K, P].

    `out` ([16, K*P] scratch) may be passed to reuse a buffer.
    """
    k, p = m.shape[1], m.shape[2]
    b = p // TILES
    if out is None:
        out = np.empty((TILE * TILE, k * p), dtype=np.float32)
    np.matmul(AA, m.reshape(ALPHA * ALPHA, k * p), out=out)
    board = np.zeros((k, PADDED, PADDED, b), dtype=np.float32)
    output_view(board)[...] = output_tiles(out, k, b)
    return board[:, 1:1 + BOARD, 1:1 + BOARD, :]


def pad_board(x: np.ndarray) -> np.ndarray:
    """[C, 19, 19, B] -> zero-padded [C, 22, 22, B] with the board at offset (1, 1)."""
    padded = np.zeros((x.shape[0], PADDED, PADDED, x.shape[3]), dtype=x.dtype)
    padded[:, 1:1 + BOARD, 1:1 + BOARD, :] = x
    return padded


def convolve_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 'same' cross-correlation via Winograd in float64, for tests: [C, 19, 19, B] -> [K, ...]."""
    c, b = x.shape[0], x.shape[3]
    tiles = np.ascontiguousarray(tile_view(pad_board(np.asarray(x, np.float64))))
    v = np.einsum("ij,jcp->icp", np.kron(BT, BT), tiles.reshape(36, c, b * TILES))
    u = np.einsum("xi,kcij,yj->xyck", G, np.asarray(w, np.float64), G).reshape(36, c, -1)
    m = np.einsum("ick,icp->ikp", u, v)
    y = np.einsum("ij,jkp->ikp", np.kron(AT, AT), m).reshape(16, -1)
    board = np.zeros((m.shape[1], PADDED, PADDED, b))
    output_view(board)[...] = output_tiles(y, m.shape[1], b)
    return board[:, 1:1 + BOARD, 1:1 + BOARD, :]
