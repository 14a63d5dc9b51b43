"""The batch policy, all of it: how many leaves the search sends the network at once.

Owns: Leela Zero's thread and batch-size resolution (`resolve_threads`), the search's batch
size from the command line (`search_batch_size`), the ramp that keeps a big batch from blinding
a small search (`VISITS_PER_PENDING_LEAF`, `MIN_PENDING_LEAVES`, `leaves_to_collect`), and the
ponder batch's time bound. Imports: stdlib only; anyone may import it (like config.py): the
command line resolves the flags with it, the search sizes each batch with it, and the OpenCL
backend is tuned for the size it gives.

Why batches: under Python's GIL the search collects leaves under virtual loss instead of
running Leela Zero's threads, and sends them to the network in one call; `-t N` collects N.
Without -t or --batchsize, and when OpenCL may run, the search collects 32 leaves in analysis
and 16 for a move on the clock (`play_batch_size`), each times the number of --gpu ids (the
batch is split over them): Leela Zero's own default (10 threads) left a fast GPU idle most of
the time. With --cpu-only and neither
flag, it collects at least two leaves per NumPy worker (`numpy_workers`): one pass over two
positions costs a worker markedly less per position than two passes over one (the 36 Winograd
products of each layer run on twice the rows for one read of the layer's weights), so analysis
and play on the clock get more visits per second, for two more leaves in flight than Leela
Zero's threads have. However big the batch, at most
one leaf per VISITS_PER_PENDING_LEAF root visits waits for the network (but MIN_PENDING_LEAVES
always may, Leela Zero's own 10 on a GPU), so a small search is not made blind, breadth-first,
by a big batch, which costs strength at a fixed number of visits. The measurements are in
docs/performance.md, section "Strength".
"""

from __future__ import annotations

import math
import os

#: Leela Zero's cap on search threads.
MAX_THREADS = 256
#: Leaves per network call when neither -t nor --batchsize is given and OpenCL may run.
DEFAULT_OPENCL_SEARCH_BATCH = 32
#: The same for a move on the clock (genmove): with one batch in flight while the next is
#: collected, 32 leaves made 64 wait at once, and at 0.5 s a move that lost to Leela Zero's
#: 10 in flight despite 30% more playouts; 16 played better (docs/performance.md).
DEFAULT_OPENCL_PLAY_BATCH = 16
#: With --cpu-only and neither -t nor --batchsize: at least this many leaves per NumPy worker.
CPU_LEAVES_PER_WORKER = 2
#: The NumPy backend's workers by default: more than two Python threads gain nothing against
#: the GIL's hand-offs (docs/performance.md).
MAX_NUMPY_WORKERS = 2
#: Leaves waiting for the network at once are capped at root visits / this (0 = no cap) ...
VISITS_PER_PENDING_LEAF = 16
#: ... but never below this many: Leela Zero's default on a GPU (batch 5, 10 threads) has 10
#: playouts in flight from the first visit on.
MIN_PENDING_LEAVES = 10
#: While pondering a batch should not take longer than this, so that a new input line is
#: answered promptly (GUIs stop analysis by sending any command; input is only noticed
#: between batches).
PONDER_BATCH_SECONDS = 0.03


#: The most search processes the engine starts by itself (on a GPU, --search-processes
#: not given).
MAX_DEFAULT_SEARCH_PROCESSES = 8


def search_processes(cfg, on_device: bool = False, hw: int | None = None) -> int:
    """How many processes search each position in analysis (a move on the clock is one
    tree), each its own tree, their root statistics merged (root_parallel/pool.py):
    --search-processes when given (> 0). Otherwise, on a
    GPU (`on_device`: root_parallel.pool.runs_on_gpu) one per two cores up to 8, since
    one tree's Python cannot keep a GPU busy and their batches share one network server; one
    tree on the CPU, where the network is the limit, and with a visit or playout limit,
    --benchmark or the dynamic-komi modes, where the helpers would only stand idle.
    docs/performance.md has the measurements."""
    if cfg.search_processes > 0:
        return cfg.search_processes
    if (not on_device or cfg.visits or cfg.playouts or cfg.benchmark
            or cfg.dyn_komi.enabled):
        return 1
    return max(1, min(MAX_DEFAULT_SEARCH_PROCESSES, (hw or hardware_threads()) // 2))


def hardware_threads() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share,
    as Leela Zero's std::thread::hardware_concurrency does not see)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def numpy_workers(hw: int | None = None) -> int:
    """The NumPy backend's default number of workers (threads that each run part of a batch)."""
    return max(1, min(MAX_NUMPY_WORKERS, hw or hardware_threads()))


def resolve_threads(cfg, hw: int | None = None) -> tuple[int, int]:
    """(threads, batch size) as Leela.cpp picks them after parsing (src/Leela.cpp), from an
    EngineConfig's cpu_only, threads, batchsize and gpus.

    CPU (--cpu-only): threads = min(t or hw, hw, 256); the batch size is 1 (each thread
    evaluates alone). OpenCL: g = number of --gpu (at least 1); with -t, batch = --batchsize or
    ceil(t / 2g); without, batch = --batchsize or 5 and t = min(256, 2 g batch).
    Raises ValueError when threads < batch size, as Leela Zero refuses to start then.
    """
    hw = hw or hardware_threads()
    if cfg.cpu_only:
        wanted = cfg.threads if cfg.threads > 0 else hw
        return min(wanted, hw, MAX_THREADS), 1
    g = max(1, len(cfg.gpus))
    if cfg.threads > 0:
        batch = cfg.batchsize or max(1, math.ceil(cfg.threads / (2 * g)))
        threads = min(cfg.threads, MAX_THREADS)
    else:
        batch = cfg.batchsize or 5
        threads = min(MAX_THREADS, batch * 2 * g)
    if threads < batch:
        raise ValueError(f"{threads} threads are fewer than the batch size {batch}")
    return threads, batch


def search_batch_size(cfg, hw: int | None = None) -> int:
    """Leaves per network call: Leela Zero's thread count (each of its threads runs one
    playout at a time); when neither -t nor --batchsize was given, at least
    DEFAULT_OPENCL_SEARCH_BATCH when OpenCL may be used, and at least CPU_LEAVES_PER_WORKER
    per NumPy worker with --cpu-only. The OpenCL backend is tuned for this size too."""
    try:
        batch_size = resolve_threads(cfg, hw)[0]
    except ValueError:
        batch_size = 1
    if not cfg.threads and not cfg.batchsize:
        if cfg.cpu_only:
            batch_size = max(batch_size, CPU_LEAVES_PER_WORKER * numpy_workers(hw))
        else:
            batch_size = max(batch_size, DEFAULT_OPENCL_SEARCH_BATCH * gpu_count(cfg))
    return max(1, batch_size)


def play_batch_size(cfg, hw: int | None = None) -> int:
    """Leaves per network call for a move on the clock: DEFAULT_OPENCL_PLAY_BATCH when
    neither -t nor --batchsize was given and OpenCL may be used, else search_batch_size
    (analysis and pondering always use search_batch_size: long searches, where a bigger
    batch buys visits a second at little cost in quality)."""
    if not cfg.threads and not cfg.batchsize and not cfg.cpu_only:
        return DEFAULT_OPENCL_PLAY_BATCH * gpu_count(cfg)
    return search_batch_size(cfg, hw)


def gpu_count(cfg) -> int:
    """The devices one batch is split over (backends/demux.py): the --gpu ids given, at
    least 1. The default batches are per device, as Leela Zero's threads are (2 x batch per
    --gpu), so that each of several GPUs gets the rows one GPU alone would."""
    return max(1, len(cfg.gpus))


def leaves_to_collect(batch: int, left: int, in_flight: int, root_visits: int,
                      params, leaf_seconds: float = 0.0) -> int:
    """How many leaves the next batch may collect (0 or less: none now).

    `left` playouts remain under the caps, `in_flight` leaves already wait for the network;
    the ramp (params.visits_per_pending_leaf, params.min_pending_leaves) bounds the leaves in
    flight; while pondering, `leaf_seconds` (the measured network time per leaf, 0 when not
    pondering) bounds the batch to PONDER_BATCH_SECONDS. Hot path: once per batch."""
    size = min(batch, left - in_flight)
    if params.visits_per_pending_leaf > 0:  # ramp the batch up as the tree grows
        cap = max(1, params.min_pending_leaves, root_visits // params.visits_per_pending_leaf)
        size = min(size, cap - in_flight)
    if leaf_seconds > 0:
        size = min(size, int(PONDER_BATCH_SECONDS / leaf_seconds))
    return size
