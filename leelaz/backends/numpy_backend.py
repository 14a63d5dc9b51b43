"""The NumPy backend: Leela Zero's forward pass (src/CPUPipe.cpp) on the CPU, batched.

Owns: `NumpyBackend`, `set_blas_threads`. Imports: numpy, batching (the default number of
workers), backends.base, backends.winograd.

Hot path. Activations live in three zero-bordered buffers [22, 22, B, C] (rows, columns, batch,
channels innermost) that rotate through the tower. Every 3x3 convolution is Winograd
F(4x4, 3x3) as a handful of BLAS calls on the whole batch, with no Python loop over tiles,
channels or positions (see winograd.py for the layout):

    V  [36, 25 B, C]  = separable input transform of the padded buffer (strided, no gather)
    M  [36, 25 B, K]  = V @ U'            36 GEMMs; U' = U with the BN scale folded in per k
    Y  [5, 4, 5, 4, B K] = separable output transform of M
    out interior      = ReLU(Y + shift [+ residual]), shift = -scale * mean, in place

The batch-norm scale is folded into U' when the backend is built, so BN costs one add on Y.
All work buffers, and every view of them the hot loop uses, are made once per batch size and
reused. float32 throughout.

Threads: a batch is cut into chunks of at most CHUNK positions, dealt out to `threads` workers
(NumPy releases the GIL inside BLAS, copies and ufuncs), each with its own buffers: the calling
thread is the first, so a batch split in two wakes one pool thread, not two, and the caller
does not sit idle; OpenBLAS itself is set to one thread (see NumpyBackend.__init__ for why).

The two 1x1 head convolutions run as one [C, 3] product over the padded buffer (the border is
cropped after), then the policy FC (input channel-major, c*361 + idx) and the value FCs.
"""

from __future__ import annotations

import ctypes
import glob
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from leelaz.backends.base import (BOARD_SQUARES, INPUT_CHANNELS, POLICY_OUTPUTS, Backend,
                                  ConvBN, NetWeights)
from leelaz.backends.winograd import (ALPHA, AT32, BT32, PADDED, TILE, TILES, WTILES,
                                      input_views, output_view, transform_filter)
from leelaz.batching import numpy_workers

_B = 19  # board side
#: Positions per forward pass of one worker: larger batches are cut into chunks of at most
#: this size, which keeps the work arrays in cache (the measurement by chunk size is in
#: docs/performance.md).
CHUNK = 6


class _ConvPlan:
    """One 3x3 conv+BN layer in the form the hot loop uses."""

    def __init__(self, conv: ConvBN):
        u = transform_filter(conv.weights).astype(np.float64)  # [36, C, K]
        scale = conv.scale.astype(np.float64)
        self.u = np.ascontiguousarray((u * scale[None, None, :]).astype(np.float32))
        self.shift = (-scale * conv.mean.astype(np.float64)).astype(np.float32)  # [K]
        self.inputs = conv.weights.shape[1]
        self.outputs = conv.weights.shape[0]
        self._tiled: dict[int, np.ndarray] = {}

    def shift_rows(self, batch: int) -> np.ndarray:
        """The shift repeated per tile and position, [25 B K], matching a row of the output
        transform's result (ty, tx, b, k): added to whole contiguous rows, not broadcast."""
        tiled = self._tiled.get(batch)
        if tiled is None:
            tiled = self._tiled[batch] = np.tile(self.shift, TILES * batch)
        return tiled


class _Buffers:
    """Work arrays for one batch size and worker; allocated once, reused on every call, with
    every view the hot loop reads or writes through made here too (`_Layer`): building a
    strided view costs microseconds of Python per call, a sizeable part of a batch-1 layer."""

    def __init__(self, batch: int, filters: int):
        width = max(filters, INPUT_CHANNELS)
        n = batch * width
        self.act = [np.zeros((PADDED, PADDED, batch, filters), np.float32) for _ in range(3)]
        self.inp = np.zeros((PADDED, PADDED, batch, INPUT_CHANNELS), np.float32)
        self.t1 = np.empty(WTILES * ALPHA * PADDED * n, np.float32)
        self.v = np.empty(ALPHA * ALPHA * TILES * n, np.float32)
        self.m = np.empty(ALPHA * ALPHA * TILES * batch * filters, np.float32)
        self.y1 = np.empty(TILE * ALPHA * TILES * batch * filters, np.float32)
        self.y = np.empty(TILE * TILE * TILES * batch * filters, np.float32)
        #: ReLU's other operand: np.maximum against an array is several times faster than
        #: against the scalar 0.
        self.zeros = np.zeros(PADDED * PADDED * batch * filters, np.float32)
        self.layers: dict[tuple[int, int, int], _Layer] = {}

    def layer(self, src: int, dst: int, residual: int) -> _Layer:
        """The views of a conv from activation buffer `src` to `dst` (+ `residual`, or -1);
        index 3 is the input planes' buffer."""
        key = (src, dst, residual)
        got = self.layers.get(key)
        if got is None:
            got = self.layers[key] = _Layer(self, src, dst, residual)
        return got


class _Layer:
    """Every array view one 3x3 conv of the hot loop uses, for one _Buffers (see _conv)."""

    def __init__(self, buf: _Buffers, src: int, dst: int, residual: int):
        arrays = buf.act + [buf.inp]
        source, target = arrays[src], arrays[dst]
        batch, c = source.shape[2], source.shape[3]
        k = target.shape[3]
        n = batch * c
        size = TILES * batch * k
        self.rows, self.t1, self.cols, self.v_out = input_views(
            source, buf.t1[:WTILES * ALPHA * PADDED * n].reshape(WTILES, ALPHA, -1),
            buf.v[:36 * TILES * n].reshape(36, -1))
        self.v = buf.v[:36 * TILES * n].reshape(36, TILES * batch, c)
        self.m = buf.m[:36 * size].reshape(36, TILES * batch, k)
        self.m_rows = self.m.reshape(ALPHA, ALPHA * size)
        self.y1 = buf.y1[:TILE * ALPHA * size].reshape(TILE, ALPHA * size)
        self.y1_rows = self.y1.reshape(TILE, ALPHA, size)
        self.y = buf.y[:TILE * TILE * size].reshape(TILE, TILE, size)
        self.y_rows = self.y.reshape(TILE * TILE, size)
        self.y_tiles = self.y.reshape(TILE, TILE, WTILES, WTILES, batch * k).transpose(
            2, 0, 3, 1, 4)
        self.out = output_view(target)
        self.whole = target.reshape(-1)
        self.residual = arrays[residual].reshape(-1) if residual >= 0 else None
        self.zeros = buf.zeros[:target.size]
        self.row20 = target[20]
        self.col20 = target[:, 20]
        self.batch = batch


class NumpyBackend(Backend):
    """Batched forward pass in NumPy; see the module docstring for the layout."""

    name = "numpy"
    precision = "single"

    def __init__(self, weights: NetWeights, threads: int | None = None, **_options):
        """`threads`: workers that each run part of a batch (default: batching.numpy_workers).

        BLAS itself is set to one thread: OpenBLAS's own threads spin-wait for each other and
        collapse when the CPU is shared (docs/performance.md), whereas splitting the batch
        over Python threads degrades gracefully.
        """
        self.weights = weights
        self.filters = weights.filters
        self.input_plan = _ConvPlan(weights.input_conv)
        self.tower = [(_ConvPlan(a), _ConvPlan(b)) for a, b in weights.tower]
        self._heads(weights)
        self.threads = max(1, threads if threads else numpy_workers())
        # One dict per worker (batch size -> buffers): a worker only touches its own.
        self._buffers: list[dict[int, _Buffers]] = [{} for _ in range(self.threads)]
        # The calling thread is worker 0; the pool runs the others.
        self._pool = ThreadPoolExecutor(self.threads - 1) if self.threads > 1 else None
        self._jobs: dict[int, list] = {}  # batch size -> (spans, worker) per worker
        set_blas_threads(1)

    def _heads(self, w: NetWeights) -> None:
        """Both 1x1 head convs as one [F, 3] matrix with BN folded: ReLU(x @ H + h)."""
        convs = [w.policy_conv, w.value_conv]
        mat = np.concatenate([c.weights.reshape(c.outputs, -1) for c in convs]).astype(np.float64)
        scale = np.concatenate([c.scale for c in convs]).astype(np.float64)
        mean = np.concatenate([c.mean for c in convs]).astype(np.float64)
        self.head_w = np.ascontiguousarray((mat * scale[:, None]).T.astype(np.float32))  # [F, 3]
        self.head_b = (-scale * mean).astype(np.float32)  # [3]
        self.pol_w_t = np.ascontiguousarray(w.policy_fc_w.T)  # [722, 362]
        self.pol_b = w.policy_fc_b
        self.fc1_w_t = np.ascontiguousarray(w.value_fc1_w.T)  # [361, 256]
        self.fc1_b = w.value_fc1_b
        self.fc2_w = w.value_fc2_w[0]  # [256]
        self.fc2_b = float(w.value_fc2_b[0])

    def _get_buffers(self, batch: int, worker: int = 0) -> _Buffers:
        mine = self._buffers[worker]
        buf = mine.get(batch)
        if buf is None:
            if len(mine) >= 4:  # bounded when batch sizes vary a lot
                mine.pop(next(iter(mine)))
            buf = mine[batch] = _Buffers(batch, self.filters)
        return buf

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """planes [B, 18, 19, 19] -> (policy logits float32 [B, 362], value float32 [B])."""
        planes = np.asarray(planes, dtype=np.float32)
        if planes.ndim != 4 or planes.shape[1:] != (INPUT_CHANNELS, _B, _B):
            raise ValueError(f"expected planes [B, 18, 19, 19], got {planes.shape}")
        batch = planes.shape[0]
        if batch == 0:
            return np.zeros((0, POLICY_OUTPUTS), np.float32), np.zeros(0, np.float32)
        jobs = self._jobs.get(batch)
        if jobs is None:
            jobs = self._jobs[batch] = self._plan_jobs(batch)
        if len(jobs) == 1:
            results = self._run_spans(planes, *jobs[0])
        else:  # this thread runs worker 0's share while the pool runs the others
            futures = [self._pool.submit(self._run_spans, planes, *job) for job in jobs[1:]]
            done = [self._run_spans(planes, *jobs[0])] + [f.result() for f in futures]
            results = [None] * sum(len(part) for part in done)
            for i, part in enumerate(done):
                results[i::len(jobs)] = part
        if len(results) == 1:
            return results[0]
        return (np.concatenate([r[0] for r in results]),
                np.concatenate([r[1] for r in results]))

    def _plan_jobs(self, batch: int) -> list[tuple[list[tuple[int, int]], int]]:
        """How a batch of `batch` is cut: chunks of at most CHUNK positions (at least one per
        worker), dealt out round-robin; (spans, worker) per worker that gets some."""
        chunks = -(-batch // CHUNK)  # ceil
        if self.threads > 1:
            chunks = max(chunks, min(self.threads, batch))  # every worker gets some
        workers = min(self.threads, chunks)
        cuts = np.linspace(0, batch, chunks + 1).astype(int)
        spans = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]
        return [(spans[i::workers], i) for i in range(workers)]

    def _run_spans(self, planes, spans, worker: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Forward passes of the batch slices `spans`, one after another, on one worker."""
        return [self._forward_part(planes[a:b], worker) for a, b in spans]

    def _forward_part(self, planes: np.ndarray, worker: int) -> tuple[np.ndarray, np.ndarray]:
        """Forward pass of one slice of the batch with worker `worker`'s buffers."""
        batch = planes.shape[0]
        buf = self._get_buffers(batch, worker)
        buf.inp[1:1 + _B, 1:1 + _B] = planes.transpose(2, 3, 0, 1)
        self._conv(self.input_plan, buf.layer(3, 0, -1))
        x, mid, out = 0, 1, 2
        for first, second in self.tower:
            self._conv(first, buf.layer(x, mid, -1))
            self._conv(second, buf.layer(mid, out, x))
            x, mid, out = out, x, mid
        x = buf.act[x]
        return self._forward_heads(x, batch)

    def _conv(self, plan: _ConvPlan, views: _Layer) -> None:
        """dst interior = ReLU(BN(conv3x3(src)) [+ residual interior]), the buffers `views`
        names. Hot path: every step a NumPy call on views made once (no Python per tile)."""
        np.matmul(BT32, views.rows, out=views.t1)  # input transform: rows, then columns
        np.matmul(BT32, views.cols, out=views.v_out)
        np.matmul(views.v, plan.u, out=views.m)
        np.matmul(AT32, views.m_rows, out=views.y1)  # output transform: xi, then nu
        np.matmul(AT32, views.y1_rows, out=views.y)
        np.add(views.y_rows, plan.shift_rows(views.batch), out=views.y_rows)
        np.copyto(views.out, views.y_tiles)
        # The residual and the ReLU run over the whole padded buffer, whose border is zero in
        # both operands and stays zero: contiguous ufuncs run several times faster than on
        # the strided interior.
        whole = views.whole
        if views.residual is not None:
            np.add(whole, views.residual, out=whole)
        np.maximum(whole, views.zeros, out=whole)
        views.row20[...] = 0.0  # row and column 20 of the last tiles are padding again
        views.col20[...] = 0.0

    def _forward_heads(self, x: np.ndarray, batch: int) -> tuple[np.ndarray, np.ndarray]:
        f = self.filters
        h = (x.reshape(PADDED * PADDED * batch, f) @ self.head_w).reshape(PADDED, PADDED,
                                                                          batch, 3)
        h = h[1:1 + _B, 1:1 + _B] + self.head_b
        np.maximum(h, 0.0, out=h)
        h = h.transpose(2, 3, 0, 1).reshape(batch, 3, BOARD_SQUARES)  # [B, 3, 361]
        pol_in = h[:, :2].reshape(batch, 2 * BOARD_SQUARES)
        logits = pol_in @ self.pol_w_t + self.pol_b
        hidden = h[:, 2] @ self.fc1_w_t + self.fc1_b
        np.maximum(hidden, 0.0, out=hidden)
        v = hidden @ self.fc2_w + self.fc2_b
        value = (1.0 + np.tanh(v)) * 0.5
        return logits.astype(np.float32, copy=False), value.astype(np.float32, copy=False)


def set_blas_threads(n: int) -> bool:
    """Set the number of threads of NumPy's bundled OpenBLAS (process-wide); False if unknown."""
    global _blas_setter
    if _blas_setter is None:
        _blas_setter = _find_blas_setter() or False
    if not _blas_setter:
        return False
    _blas_setter(n)
    return True


_blas_setter = None


def _find_blas_setter():
    """openblas_set_num_threads of the OpenBLAS that NumPy wheels ship in numpy.libs/."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libs, "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                fn.restype = None
                return fn
    return None
