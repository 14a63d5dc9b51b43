"""SGEMM tile-size tuner for the OpenCL backend, with results cached per device and shape.

Owns: `GemmParams` (the tuned #defines of kernels/sgemm.cl), the candidate sets ("fast": a
dozen shapes known to suit GPUs and CPUs, a few seconds; "full": the whole valid grid, for
--full-tuner), `tune(...)`, and the cache file `~/.local/share/leelaz/opencl_tuning.json`
(honours XDG_DATA_HOME). Each candidate is built, checked against NumPy on random data (a
miscompiled or wrong variant is dropped, not just a slow one) and timed; the fastest wins.
Imports: pyopencl, numpy, backends.cl_program, stdlib.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyopencl as cl

from leelaz.backends.cl_program import build_program, kernels, round_up
from leelaz.files import user_data_dir, write_text_atomic

TUNER_VERSION = 2


@dataclass(frozen=True)
class GemmParams:
    """Tile sizes of sgemm_tn; see kernels/sgemm.cl for their meaning and preconditions.

    With tc=1 the shape is kernels/sgemm_tc.cl's instead (NVIDIA, half storage): MWG x NWG per
    work-group of MDIMC x NDIMC warps, each warp MWG/MDIMC x NWG/NDIMC; kwg must be 16.
    """

    mwg: int = 32
    nwg: int = 32
    kwg: int = 16
    mdimc: int = 8
    ndimc: int = 8
    vwm: int = 2
    vwn: int = 2
    pf: int = 0  # PREFETCH: next tile's global loads staged in registers
    tc: int = 0  # tensor cores (sgemm_tc): 1 .global addresses, 2 generic, 3 .global + prefetch

    def defines(self) -> dict[str, int]:
        if self.tc:
            return {"TENSOR_CORES": 1, "M_FLOAT": 1, "STORAGE_HALF": 1,
                    "TC_WM": self.mwg // self.mdimc, "TC_WN": self.nwg // self.ndimc,
                    "TC_WARPS_M": self.mdimc, "TC_WARPS_N": self.ndimc,
                    "TC_SS": '""' if self.tc == 2 else '".global"',
                    "TC_PREFETCH": int(self.tc == 3),
                    **GemmParams().defines()}  # sgemm_tn is built too: keep it small
        return {"MWG": self.mwg, "NWG": self.nwg, "KWG": self.kwg, "MDIMC": self.mdimc,
                "NDIMC": self.ndimc, "VWM": self.vwm, "VWN": self.vwn, "PREFETCH": self.pf}

    def valid(self, device: cl.Device) -> bool:
        if self.tc:
            return ("NVIDIA" in device.platform.name and self.kwg == 16
                    and self.mwg % (16 * self.mdimc) == 0 and self.nwg % (16 * self.ndimc) == 0
                    and 32 * self.mdimc * self.ndimc <= device.max_work_group_size
                    and (self.mwg // self.mdimc // 16) * (self.nwg // self.ndimc // 16) <= 8)
        threads = self.mdimc * self.ndimc
        local_bytes = 4 * self.kwg * (self.mwg + self.nwg)
        return (self.mwg % (self.mdimc * self.vwm) == 0 and self.nwg % (self.ndimc * self.vwn) == 0
                and self.mwg % 4 == 0 and self.nwg % 4 == 0
                and threads <= device.max_work_group_size
                and local_bytes <= device.local_mem_size
                and (self.mwg // self.mdimc) * (self.nwg // self.ndimc) <= 128
                and (not self.pf or (self.kwg * self.mwg // 4 % threads == 0
                                     and self.kwg * self.nwg // 4 % threads == 0)))

    def kernel_name(self) -> str:
        return "sgemm_tc" if self.tc else "sgemm_tn"

    def local_size(self) -> tuple[int, int, int]:
        if self.tc:
            return (32, self.mdimc * self.ndimc, 1)
        return (self.ndimc, self.mdimc, 1)

    def global_size(self, kpad: int, ppad: int) -> tuple[int, int, int]:
        lx, ly, _ = self.local_size()
        return (ppad // self.nwg * lx, kpad // self.mwg * ly, 36)

    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in asdict(self).items())


DEFAULT = GemmParams()

#: The fast set: shapes that cover small and large register tiles and both vector widths.
FAST = [
    GemmParams(32, 32, 16, 8, 8, 2, 2), GemmParams(32, 32, 16, 8, 8, 1, 1),
    GemmParams(64, 64, 16, 16, 16, 1, 1), GemmParams(64, 64, 16, 8, 8, 2, 2),
    GemmParams(64, 64, 16, 8, 8, 4, 4), GemmParams(64, 64, 16, 8, 8, 4, 4, 1),
    GemmParams(64, 64, 32, 8, 8, 4, 4, 1), GemmParams(128, 64, 16, 16, 8, 4, 4),
    GemmParams(64, 128, 16, 8, 16, 4, 4, 1), GemmParams(128, 128, 16, 16, 16, 4, 4),
    GemmParams(128, 128, 16, 16, 16, 4, 4, 1), GemmParams(128, 128, 8, 16, 16, 4, 4, 1),
    GemmParams(128, 128, 16, 16, 16, 2, 2, 1), GemmParams(128, 128, 32, 16, 16, 4, 4, 1),
    GemmParams(32, 64, 16, 8, 16, 2, 2), GemmParams(64, 32, 16, 16, 8, 2, 2),
]
#: Tensor-core shapes (NVIDIA, half storage only): warps of 32x32 .. 64x64 outputs.
FAST_TC = [
    GemmParams(64, 64, 16, 2, 2, tc=1), GemmParams(64, 128, 16, 2, 2, tc=1),
    GemmParams(128, 64, 16, 2, 2, tc=1),
    GemmParams(128, 128, 16, 4, 4, tc=1), GemmParams(32, 128, 16, 1, 4, tc=1),
    GemmParams(64, 128, 16, 2, 4, tc=1), GemmParams(32, 64, 16, 1, 2, tc=1),
    GemmParams(64, 128, 16, 2, 2, tc=2), GemmParams(128, 128, 16, 4, 4, tc=2),
    GemmParams(64, 64, 16, 2, 2, tc=3), GemmParams(64, 128, 16, 2, 2, tc=3),
    GemmParams(128, 128, 16, 4, 4, tc=3), GemmParams(64, 128, 16, 2, 4, tc=3),
]


def full_candidates() -> list[GemmParams]:
    """The grid of --full-tuner: 64..256 threads, 4..64 outputs a thread, both load schemes."""
    grid = itertools.product((32, 64, 128), (32, 64, 128), (8, 16, 32), (8, 16), (8, 16),
                             (1, 2, 4), (1, 2, 4), (0, 1))
    found = []
    for g in grid:
        p = GemmParams(*g)
        threads, outputs = p.mdimc * p.ndimc, (p.mwg // p.mdimc) * (p.nwg // p.ndimc)
        if 64 <= threads <= 256 and 4 <= outputs <= 64:
            found.append(p)
    return found


def cache_path() -> Path:
    return user_data_dir() / "opencl_tuning.json"


def cache_key(device: cl.Device, half: bool, k: int, c: int, batch: int) -> str:
    return (f"v{TUNER_VERSION}|{device.platform.name.strip()}|{device.name.strip()}|"
            f"{device.driver_version.strip()}|{'half' if half else 'single'}|{k};{c};{batch}")


def _read_cache() -> dict:
    try:
        return json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(entries: dict) -> None:
    """Written completely or not at all (temporary name, then rename)."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(entries, indent=1, sort_keys=True))
    except OSError:
        pass  # a read-only home only costs a re-tune next time


def lookup(device: cl.Device, half: bool, k: int, c: int, batch: int) -> GemmParams | None:
    entry = _read_cache().get(cache_key(device, half, k, c, batch))
    return GemmParams(**entry["params"]) if entry else None


class _Problem:
    """Random U, V on the device for one shape, and the NumPy answer for two positions."""

    def __init__(self, ctx: cl.Context, queue: cl.CommandQueue, half: bool, k: int, c: int,
                 batch: int, pad: int):
        self.k, self.c, self.p = k, c, batch * 25
        self.kmax, self.cmax, self.pmax = round_up(k, pad), round_up(c, pad), round_up(self.p, pad)
        rng = np.random.default_rng(7)
        self.dtype = np.float16 if half else np.float32
        self.u = rng.uniform(-1, 1, (36, self.cmax, self.kmax)).astype(self.dtype)
        self.v = rng.uniform(-1, 1, (36, self.cmax, self.pmax)).astype(self.dtype)
        mf = cl.mem_flags
        self.u_buf = cl.Buffer(ctx, mf.READ_WRITE, self.u.nbytes)
        self.v_buf = cl.Buffer(ctx, mf.READ_WRITE, self.v.nbytes)
        self.m_buf = cl.Buffer(ctx, mf.READ_WRITE, 36 * self.kmax * self.pmax * 4)
        self.queue = queue

    def shapes(self, params: GemmParams) -> tuple[int, int, int]:
        return (round_up(self.k, params.mwg), round_up(self.c, params.kwg),
                round_up(self.p, params.nwg))

    def run(self, ctx, params: GemmParams, repeats: int) -> float:
        """Seconds per product for `params`, or inf if it fails or gives wrong numbers."""
        kpad, cpad, ppad = self.shapes(params)
        if kpad > self.kmax or cpad > self.cmax or ppad > self.pmax:
            return float("inf")
        u = np.ascontiguousarray(self.u[:, :cpad, :kpad])
        v = np.ascontiguousarray(self.v[:, :cpad, :ppad])
        try:
            cl.enqueue_copy(self.queue, self.u_buf, u)
            cl.enqueue_copy(self.queue, self.v_buf, v)
            prog = build_program(ctx, {"STORAGE_HALF": int(self.dtype == np.float16),
                                       **params.defines()})
            gemm = kernels(prog)[params.kernel_name()]
            gsize = params.global_size(kpad, ppad)
            args = (np.int32(kpad), np.int32(ppad), np.int32(cpad), self.u_buf, self.v_buf,
                    self.m_buf)
            gemm(self.queue, gsize, params.local_size(), *args)
            got = np.empty((36, kpad, ppad), np.float32 if params.tc else self.dtype)
            cl.enqueue_copy(self.queue, got, self.m_buf)
            if not self._correct(u, v, got):
                return float("inf")
            self.queue.finish()
            start = time.perf_counter()
            gemm(self.queue, gsize, params.local_size(), *args)
            self.queue.finish()
            once = time.perf_counter() - start
            repeats = int(min(max(repeats, 0.02 / max(once, 1e-6)), 200))  # ~20 ms of work
            start = time.perf_counter()
            for _ in range(repeats):
                gemm(self.queue, gsize, params.local_size(), *args)
            self.queue.finish()
            return (time.perf_counter() - start) / repeats
        except (cl.Error, RuntimeError, KeyError):
            return float("inf")

    def _correct(self, u, v, got) -> bool:
        for q in (0, 35):
            want = u[q].astype(np.float32).T @ v[q].astype(np.float32)
            err = np.abs(got[q].astype(np.float32) - want).max()
            if not np.isfinite(err) or err > 2e-4 * self.c + (0.05 * np.sqrt(self.c)
                                                              if self.dtype == np.float16 else 0):
                return False
        return True


def tune(ctx: cl.Context, queue: cl.CommandQueue, half: bool, k: int, c: int, batch: int,
         mode: str = "fast", log=None,
         candidates: list[GemmParams] | None = None) -> GemmParams:
    """The best GemmParams for an M[k x batch*25] = U^T V product with c terms.

    mode "none": the cached result or DEFAULT; "fast": cached result, else search FAST;
    "full": search the whole grid and overwrite the cache.
    """
    device = ctx.devices[0]
    cached = lookup(device, half, k, c, batch)
    if mode == "none" or (mode == "fast" and cached is not None):
        return cached or DEFAULT
    if mode == "fast" and not device.type & (cl.device_type.GPU | cl.device_type.ACCELERATOR):
        # A CPU OpenCL device is a fallback; minutes of kernel builds at start-up are not
        # worth it there (PoCL builds each variant in seconds). --full-tuner still searches.
        return DEFAULT
    if candidates is None:
        candidates = (FAST if mode == "fast" else full_candidates()) + (FAST_TC if half else [])
    candidates = [p for p in candidates if p.valid(device) and (half or not p.tc)]
    if log:
        log(f"Started OpenCL SGEMM tuner ({mode}, {len(candidates)} candidates, "
            f"k={k} c={c} batch={batch}).")
    problem = _Problem(ctx, queue, half, k, c, batch, pad=128)
    # Tensor-core variants run in a context of their own: a device fault there (a sticky
    # error on NVIDIA) must not poison the context the backend and the other variants use.
    tc_ctx = tc_problem = None
    repeats = 3  # at least; _Problem.run times about 20 ms of work
    timed = []
    verbose = log is not None and os.environ.get("LEELAZ_TUNER_VERBOSE")
    for params in candidates:
        if params.tc and tc_problem is None:
            tc_ctx = cl.Context([device])
            tc_problem = _Problem(tc_ctx, cl.CommandQueue(tc_ctx), half, k, c, batch, pad=128)
        if params.tc:
            seconds = tc_problem.run(tc_ctx, params, repeats)
        else:
            seconds = problem.run(ctx, params, repeats)
        if np.isfinite(seconds):
            timed.append((seconds, params))
        if verbose:
            log(f"  {params.key()}: {seconds * 1e6:.0f} us")
    if not timed:
        if log:
            log("SGEMM tuner: no candidate worked; using the defaults.")
        return DEFAULT
    seconds, best = min(timed, key=lambda t: t[0])
    flops = 2.0 * 36 * k * c * batch * 25
    if log:
        log(f"SGEMM tuner: best {best.key()} {seconds * 1e6:.0f} us "
            f"({flops / seconds / 1e9:.0f} GFLOP/s useful).")
    entries = _read_cache()
    entries[cache_key(device, half, k, c, batch)] = {"params": asdict(best),
                                                     "seconds": seconds}
    _write_cache(entries)
    return best
