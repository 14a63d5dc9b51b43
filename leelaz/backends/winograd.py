"""Winograd F(4x4, 3x3) for 19x19 boards (Network::winograd_transform_f), shared by every backend.

Owns: the matrices G, Bt, At; `transform_filter` (filters -> U, done once when the weights
load, and the layout the OpenCL backend uploads); the NumPy tile input/output transforms.
Imports: numpy only.

Geometry: a 4x4 output tile comes from a 6x6 input tile (ALPHA = 6). A 19x19 board is covered
by 5x5 = 25 tiles (WTILES = 5, covering 20x20). Activations are kept zero-padded to 22x22 with
the board at offset (1, 1); tile (ty, tx) reads padded rows 4ty..4ty+5 and columns 4tx..4tx+5,
tile index ty*5 + tx. Outputs beyond row/column 18 are thrown away.

With U[xi*6+nu][c][k] = (G g_kc Gt)[xi][nu] and V[xi*6+nu][p][c] = (Bt d_pc B)[xi][nu], the
convolution is M[xn] = V[xn] U[xn] (36 matrix products) and each output tile is At M A.

The NumPy helpers keep activations as [22, 22, B, C] (rows, columns, batch, channel: channels
innermost) and tile columns p ordered (ty, tx, b). With that layout every step is a BLAS call
over contiguous or simply strided memory: the input transform runs separably (rows, then
columns) on overlapping strided windows of the padded board, so there is no gather copy, and
writes V directly as [36, 25 B, C]; the GEMMs are [25 B, C] x [C, K]; the output transform is
separable too, and its result is one strided copy away from the next layer's padded input.
(An earlier version used [C, B, 22, 22], a gathered tile copy and kron(Bt, Bt): about 1.5x
slower here.)
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

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

BT32 = BT.astype(np.float32)
AT32 = AT.astype(np.float32)


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


def input_transform(padded: np.ndarray, t1: np.ndarray | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """V float32 [36, 25 B, C] from padded activations [22, 22, B, C] (hot path).

    Separable, as two batched products with Bt over overlapping strided windows (no gather):
    rows first, T1[ty, xi, w, n] = sum_i Bt[xi, i] padded[4ty + i, w, n], then columns,
    V[xi, nu, ty, tx, n] = sum_j Bt[nu, j] T1[ty, xi, 4tx + j, n], written straight into the
    [36, (ty, tx, b), c] layout the GEMMs read. n runs over (b, c). `t1` ([5, 6, 22 N]) and
    `out` ([36, 25 N]) may be passed to reuse buffers.
    """
    h, w, b, c = padded.shape
    n = b * c
    if t1 is None:
        t1 = np.empty((WTILES, ALPHA, PADDED * n), dtype=np.float32)
    if out is None:
        out = np.empty((ALPHA * ALPHA, TILES * n), dtype=np.float32)
    rows, t1, cols, v_out = input_views(padded, t1, out)
    np.matmul(BT32, rows, out=t1)
    np.matmul(BT32, cols, out=v_out)
    return out.reshape(ALPHA * ALPHA, TILES * b, c)


def input_views(padded: np.ndarray, t1: np.ndarray, out: np.ndarray):
    """The views `input_transform`'s two products read and write: (rows, t1, cols, v_out),
    so that np.matmul(BT32, rows, out=t1) and then np.matmul(BT32, cols, out=v_out) leave V
    in `out`. Made once per buffer by the NumPy backend (as_strided costs microseconds)."""
    h, w, b, c = padded.shape
    assert h == PADDED and w == PADDED and padded.flags.c_contiguous, padded.shape
    n = b * c
    f = padded.itemsize
    rows = as_strided(padded, shape=(WTILES, ALPHA, PADDED * n),
                      strides=(TILE * PADDED * n * f, PADDED * n * f, f))
    cols = as_strided(t1, shape=(WTILES, ALPHA, WTILES, ALPHA, n),
                      strides=(ALPHA * PADDED * n * f, PADDED * n * f, TILE * n * f, n * f, f))
    v_out = out.reshape(ALPHA, ALPHA, WTILES, WTILES, n).transpose(2, 0, 3, 1, 4)
    return rows, t1, cols, v_out


def output_transform(m: np.ndarray, batch: int, y1: np.ndarray | None = None,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Output tiles [5, 4, 5, 4, B*K] (ty, a, tx, c, (b, k)) as a view, from M [36, 25 B, K].

    Separable: At over xi as one product, then At over nu as 4 batched ones. Row 4ty + a and
    column 4tx + c of the board; rows and columns 19 are beyond the board. `y1`
    ([4, 6 * 25 B K]) and `out` ([4, 4, 25 B K]) may be passed to reuse buffers.
    """
    k = m.shape[2]
    size = TILES * batch * k
    if y1 is None:
        y1 = np.empty((TILE, ALPHA * size), dtype=np.float32)
    np.matmul(AT32, m.reshape(ALPHA, ALPHA * size), out=y1)
    if out is None:
        out = np.empty((TILE, TILE, size), dtype=np.float32)
    np.matmul(AT32, y1.reshape(TILE, ALPHA, size), out=out)
    return out.reshape(TILE, TILE, WTILES, WTILES, batch * k).transpose(2, 0, 3, 1, 4)


def output_view(dst: np.ndarray) -> np.ndarray:
    """Writable view [5, 4, 5, 4, B*K] of padded dst [22, 22, B, K] at (1 + 4ty + a, 1 + 4tx + c).

    It covers 20x20 cells; whoever writes through it must zero row and column 20 again, since
    they are padding for the next layer.
    """
    h, w, b, k = dst.shape
    assert dst.flags.c_contiguous
    bk = b * k
    f = dst.itemsize
    return as_strided(dst[1:, 1:], shape=(WTILES, TILE, WTILES, TILE, bk),
                      strides=(TILE * PADDED * bk * f, PADDED * bk * f, TILE * bk * f, bk * f, f))


def pad_board(x: np.ndarray) -> np.ndarray:
    """[19, 19, B, C] -> zero-padded [22, 22, B, C] with the board at offset (1, 1)."""
    padded = np.zeros((PADDED, PADDED) + x.shape[2:], dtype=x.dtype)
    padded[1:1 + BOARD, 1:1 + BOARD] = x
    return padded


def convolve(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 'same' cross-correlation by the float32 path above: x [19, 19, B, C] -> [19, 19, B, K].

    For tests and tools; the backend calls the pieces itself with reused buffers.
    """
    b = x.shape[2]
    k = w.shape[0]
    v = input_transform(pad_board(np.asarray(x, np.float32)))
    m = np.matmul(v, transform_filter(w))
    board = np.zeros((PADDED, PADDED, b, k), dtype=np.float32)
    output_view(board)[...] = output_transform(m, b)
    return board[1:1 + BOARD, 1:1 + BOARD].copy()
