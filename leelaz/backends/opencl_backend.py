"""The OpenCL backend: the whole residual tower on one device, one enqueue sequence per batch.

Owns: the OpenCLBackend (context and queue, buffers allocated once and grown for larger
batches, weights uploaded once as Winograd U from the shared `transform_filter`, the enqueue
plans, read-back) and precision choice (single | half | auto); the `check` backend
(check_backend.py) compares it with NumPy. Imports: numpy, pyopencl,
backends.base/cl_devices/winograd/cl_program/tuner. The measurements behind these choices are
in docs/performance.md.

Per 3x3 convolution: sgemm_tn (36 batched products) -> out_in_transform (batch norm, residual
add and ReLU, then the next layer's input transform, in one kernel: both transforms work channel
by channel, so a work group keeps one channel's plane in local memory between them). Only the
first layer has an in_transform launch of its own and only the last a plain out_transform_bn.
The heads run on the device too: the 1x1 convolutions (with batch norm and ReLU) and the fully
connected layers, so one batch is one upload, one enqueue sequence and one read-back of
[B, 363] floats (362 logits, the value before tanh). The upload is float32 planes (`submit`) or,
from the search, the positions themselves (`submit_packed`: 8 mailboxes and a side/symmetry
byte pair each, 3.5 kB instead of 26 kB), whose planes in_transform_boxes builds on the device:
on small networks the host's planes were a noticeable part of the search's time per playout,
and reading back anything but the final outputs costs throughput on a GPU.

Padding is fixed (K to 128, C to 32) so that one upload of U serves every sgemm tile shape:
the backend keeps one tuned shape for small batches and one for large ones.

Half precision here means half *storage* (activations, U, V, M) with float arithmetic, which
every OpenCL device supports through vload_half/vstore_half; it halves memory traffic.

Enqueue plans: on a fast GPU the search waits on Python, not on the device. A batch is 2
launches per 3x3 layer, 1 more for the first, plus 4 for the heads (31 for 6 blocks, 87 for 20,
167 for 40), and pyopencl's `kernel(queue, sizes, *args)` packs and sets every argument on every launch. So each
batch size gets an `_EnqueuePlan`: its own `cl.Kernel` objects (a kernel object holds its
arguments, so no two launches share one) with every argument set once, and the launch sizes
precomputed; `submit` is then one upload, one `enqueue_nd_range_kernel` per launch and one
read-back. The search's batch sizes change from call to call (cache hits, ramp-up), and a
plan costs milliseconds to build, so a batch runs as one
of a few padded row counts (`plan_rows`, zero rows padded on): a few plans serve every size.
They are kept least recently used first, dropped beyond PLAN_CACHE (their kernel objects are
re-used for the next plan); growing the buffers drops them all. After a submit the queue is
flushed, so the device starts at once while the search collects the next batch. What is left
per launch is the driver's own cost of clEnqueueNDRangeKernel, hence the fused transform.

Hot path: `submit` -> `_enqueue`.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict

import numpy as np
import pyopencl as cl

from leelaz.backends.base import (BOARD_SQUARES, INPUT_CHANNELS, PACKED_KOMI_BYTES, PACKED_ROW,
                                  POLICY_OUTPUTS, VALUE_HIDDEN, Backend, BackendUnavailable,
                                  ConvBN, NetWeights)
from leelaz.backends.cl_program import SIGNATURES, build_program, round_up
from leelaz.backends.cl_devices import pick_device
from leelaz.backends.tuner import GemmParams, tune
from leelaz.backends.winograd import transform_filter

TILES = 25
HEAD_OUTPUTS = 3
RESULT_WIDTH = POLICY_OUTPUTS + 1  # per position: 362 logits, then the value before tanh
K_MULTIPLE, C_MULTIPLE, P_MULTIPLE = 128, 32, 128  # padding that suits every sgemm shape
#: Batches up to this size use the sgemm shape tuned for small batches.
SMALL_BATCH = 16
#: Local sizes of the transform kernels (their global sizes are rounded up to these).
TRANSFORM_LOCAL = (32, 4)
#: Local size of out_in_transform: one work group per (board, channel), a work item per tile.
FUSED_LOCAL = (32, 1)
#: Enqueue plans kept, one per batch size (the search's sizes vary from batch to batch; a plan
#: holds ~2 kernel objects per layer, so the count is bounded).
PLAN_CACHE = 64


def plan_rows(batch: int) -> int:
    """The rows a batch runs as (zero rows padded on): the next power of two up to 8 and
    beyond 64, a multiple of 8 between. The search's batch sizes vary from call to call, and
    each size needs its own enqueue plan, whose kernel objects take milliseconds to make on a
    40-block net; so a few sizes serve all. Between 8 and 64, where the search's batches
    are, the finer steps pad at most 7 rows (device time spent on zeros), not up to 31."""
    if batch <= 8 or batch > 64:
        return 1 << max(0, batch - 1).bit_length()
    return -(-batch // 8) * 8


def _plan_sizes(batch: int) -> list[int]:
    """Every row count `plan_rows` gives for batches 1..batch, smallest first."""
    sizes = {plan_rows(b) for b in range(1, plan_rows(batch) + 1)}
    return sorted(sizes)


class _Conv3:
    """One 3x3 convolution's device-side weights (U padded, batch norm)."""

    def __init__(self, ctx, conv: ConvBN, dtype):
        k, c = conv.weights.shape[:2]
        self.k, self.c = k, c
        self.kpad, self.cpad = round_up(k, K_MULTIPLE), round_up(c, C_MULTIPLE)
        u = np.zeros((36, self.cpad, self.kpad), dtype)
        u[:, :c, :k] = transform_filter(conv.weights)
        self.u = _upload(ctx, u)
        self.mean = _upload(ctx, conv.mean)
        self.scale = _upload(ctx, conv.scale)


def _upload(ctx, array: np.ndarray) -> cl.Buffer:
    array = np.ascontiguousarray(array, np.float16 if array.dtype == np.float16 else np.float32)
    return cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=array)


#: One kernel launch with its arguments already set: (kernel, global size, local size).
Launch = tuple[cl.Kernel, tuple[int, ...], tuple[int, ...]]


class _EnqueuePlan:
    """Every launch of one forward pass at one batch size, arguments set (see module docstring).

    Built through `launch`, which takes the next kernel object from `recycled` (the launches of
    a dropped plan built from the same program, in the same order) or creates one: on PoCL a
    new pyopencl Kernel costs more than setting all its arguments again.
    """

    def __init__(self, batch: int, program: cl.Program, recycled: list[cl.Kernel] | None):
        self.batch = batch
        self.program = program
        self._recycled = iter(recycled) if recycled is not None else None
        #: Per 3x3 layer: (its launches, output buffer, output channels), for tower_outputs.
        self.layers: list[tuple[list[Launch], cl.Buffer, int]] = []
        self.heads: list[Launch] = []
        #: The whole pass in order: what submit enqueues.
        self.launches: list[Launch] = []
        #: The same pass reading packed positions (submit_packed): another first launch.
        self.packed_launches: list[Launch] = []

    def launch(self, name: str, global_size, local_size, *args) -> Launch:
        """A kernel object for `name` with `args` set once, checked against its signature."""
        kernel = next(self._recycled, None) if self._recycled is not None else None
        if kernel is None:
            kernel = cl.Kernel(self.program, name)
        signature = SIGNATURES[name]
        assert kernel.function_name == name and len(args) == len(signature), (name, len(args))
        assert len(local_size) == len(global_size) and all(
            g % l == 0 for g, l in zip(global_size, local_size)), (name, global_size, local_size)
        for i, (arg, kind) in enumerate(zip(args, signature)):
            kernel.set_arg(i, arg if kind is None else kind(arg))
        return kernel, tuple(global_size), tuple(local_size)

    def finish(self) -> _EnqueuePlan:
        self.launches = [launch for launches, _, _ in self.layers for launch in launches]
        self.launches += self.heads
        self._recycled = None
        return self

    def kernels(self) -> list[cl.Kernel]:
        """The kernel objects in the order they were made, for the next plan built from the
        same program: the pass, then the packed input's transform."""
        return [kernel for kernel, _, _ in self.launches + self.packed_launches[:1]]


class OpenCLBackend(Backend):
    """Backend.forward on an OpenCL device. See the module docstring for the plan."""

    name = "opencl"
    #: The search may walk the tree while a batch runs (submit returns before the GPU is done).
    asynchronous = True

    def __init__(self, weights: NetWeights, gpus: list[int] | None = None,
                 precision: str = "auto", batch_size: int = 8, tune: str = "fast",
                 quiet: bool = False, device: cl.Device | None = None,
                 params: GemmParams | None = None):
        if precision not in ("auto", "single", "half"):
            raise ValueError(f"precision must be auto, single or half, not {precision!r}")
        self.weights = weights
        self.quiet = quiet
        try:
            self.device = device or pick_device(gpus, self._log)
            self._log(f"Selected device: {self.device.name.strip()} on "
                      f"{self.device.platform.name.strip()}")
            self.ctx = cl.Context([self.device])
            self.queue = cl.CommandQueue(self.ctx)
            if precision == "auto":
                precision = self._auto_precision(batch_size, tune, params)
            self._setup(precision == "half", batch_size, tune, params)
            self._prepare_plans(batch_size)
        except cl.Error as e:
            raise BackendUnavailable(f"OpenCL failed on this device: {e}") from None
        small = self.gemms[0][1]
        self._log(f"OpenCL: using {'fp16 storage' if self.half else 'fp32'} "
                  f"({self.precision} precision), sgemm {self.params.key()}"
                  + (f"; batches <= {SMALL_BATCH}: {small.key()}." if small != self.params
                     else "."))

    # ---- set-up ------------------------------------------------------------------------------

    def _log(self, line: str) -> None:
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def _setup(self, half: bool, batch_size: int, tune_mode: str,
               params: GemmParams | None) -> None:
        """Tune, build, upload the weights, allocate buffers for `batch_size`."""
        self.half = half
        self.precision = "half" if half else "single"
        self.dtype = np.float16 if half else np.float32
        f = self.weights.filters
        batch_size = max(batch_size, 1)
        log = None if self.quiet else self._log
        large = params or tune(self.ctx, self.queue, half, f, f, batch_size, tune_mode, log)
        small = large
        if params is None and batch_size > SMALL_BATCH:
            small = tune(self.ctx, self.queue, half, f, f, SMALL_BATCH // 2, tune_mode, log)
        self.params = large
        #: (largest batch, params, program) for each sgemm shape, smallest batches first.
        self.gemms = [(SMALL_BATCH, small, self._program(small)),
                      (None, large, self._program(large))]
        w = self.weights
        self.input_conv = _Conv3(self.ctx, w.input_conv, self.dtype)
        self.tower = [(_Conv3(self.ctx, a, self.dtype), _Conv3(self.ctx, b, self.dtype))
                      for a, b in w.tower]
        heads = [w.policy_conv, w.value_conv]
        self.head_w = _upload(self.ctx, np.concatenate([h.weights.reshape(h.outputs, f)
                                                        for h in heads]))
        self.head_mean = _upload(self.ctx, np.concatenate([h.mean for h in heads]))
        self.head_scale = _upload(self.ctx, np.concatenate([h.scale for h in heads]))
        self.fc = {name: (_upload(self.ctx, fc_w), _upload(self.ctx, fc_b))
                   for name, fc_w, fc_b in (("policy_fc", w.policy_fc_w, w.policy_fc_b),
                                            ("value_fc1", w.value_fc1_w, w.value_fc1_b),
                                            ("value_fc2", w.value_fc2_w, w.value_fc2_b))}
        self.capacity = 0
        #: row count (plan_rows) -> _EnqueuePlan, least recently used first.
        self._plans: OrderedDict[int, _EnqueuePlan] = OrderedDict()
        #: (kernel name, event) per launch while `profile` runs, else None.
        self._profile_events: list | None = None
        self._grow(batch_size)

    def _prepare_plans(self, batch_size: int) -> None:
        """Build the enqueue plans of every row count up to `batch_size`'s now, at start-up:
        a search ramps its batches up through all of them, and building one mid-search costs
        tens of milliseconds on a deep net, a large part of a short search."""
        rows = plan_rows(batch_size)
        if rows > self.capacity:
            self._grow(rows)
        for size in _plan_sizes(rows):
            self._plan_for(size)

    def _program(self, params: GemmParams) -> cl.Program:
        assert K_MULTIPLE % params.mwg == 0 and C_MULTIPLE % params.kwg == 0, params
        assert P_MULTIPLE % params.nwg == 0, params
        assert self.half or not params.tc, params
        return build_program(self.ctx, {"STORAGE_HALF": int(self.half), **params.defines()})

    def _grow(self, batch: int) -> None:
        """(Re)allocate the activation and Winograd buffers for `batch` positions."""
        f = self.weights.filters
        item = np.dtype(self.dtype).itemsize
        ppad = round_up(batch * TILES, P_MULTIPLE)
        cpad = max(round_up(f, C_MULTIPLE), round_up(INPUT_CHANNELS, C_MULTIPLE))
        kpad = round_up(f, K_MULTIPLE)
        mf = cl.mem_flags

        def buffer(nbytes):
            return cl.Buffer(self.ctx, mf.READ_WRITE, nbytes)

        self.planes_buf = buffer(batch * INPUT_CHANNELS * BOARD_SQUARES * 4)
        self.packed_buf = buffer(batch * (PACKED_ROW + 2 + PACKED_KOMI_BYTES))
        self.x_buf = buffer(batch * f * BOARD_SQUARES * item)
        self.t_buf = buffer(batch * f * BOARD_SQUARES * item)
        self.v_buf = buffer(36 * cpad * ppad * item)
        self.m_buf = buffer(36 * kpad * ppad * 4)  # float when the tensor-core sgemm runs
        self.head_buf = buffer(batch * HEAD_OUTPUTS * BOARD_SQUARES * 4)
        self.hidden_buf = buffer(batch * VALUE_HIDDEN * 4)
        self.result_buf = buffer(batch * RESULT_WIDTH * 4)
        self.capacity = batch
        self._plans.clear()  # their kernels point at the old buffers

    def _auto_precision(self, batch_size: int, tune_mode: str,
                        params: GemmParams | None) -> str:
        """CPU devices: single. GPUs: half storage only if it is >= 5% faster (as LZ does)."""
        if not self.device.type & cl.device_type.GPU:
            return "single"
        timings = {}
        planes = np.random.default_rng(3).integers(0, 2, (batch_size, INPUT_CHANNELS, 19, 19))
        planes = planes.astype(np.float32)
        for precision in ("single", "half"):
            self._setup(precision == "half", batch_size, tune_mode, params)
            self.forward(planes)
            start, runs = time.perf_counter(), 0
            while time.perf_counter() - start < 0.5 or runs < 2:
                self.forward(planes)
                runs += 1
            timings[precision] = (time.perf_counter() - start) / runs
        choice = "half" if timings["half"] * 1.05 <= timings["single"] else "single"
        self._log(f"Precision auto: single {timings['single'] * 1e3:.2f} ms, half "
                  f"{timings['half'] * 1e3:.2f} ms per batch of {batch_size}: {choice}.")
        return choice

    # ---- forward -----------------------------------------------------------------------------

    def _gemm_for(self, batch: int) -> tuple[GemmParams, cl.Program]:
        """The sgemm shape (and the program built for it) that serves batches of `batch`."""
        for limit, params, program in self.gemms:
            if limit is None or batch <= limit:
                return params, program
        raise AssertionError("unreachable")

    def _plan_for(self, batch: int) -> _EnqueuePlan:
        """The plan for `batch` positions: cached, else built (re-using the oldest's kernels).

        Hot path: a dict hit on almost every call."""
        plans = self._plans
        plan = plans.get(batch)
        if plan is not None:
            plans.move_to_end(batch)
            return plan
        _, program = self._gemm_for(batch)
        recycled = None
        if len(plans) >= PLAN_CACHE:
            _, oldest = plans.popitem(last=False)
            if oldest.program is program:
                recycled = oldest.kernels()
        plan = plans[batch] = self._build_plan(batch, recycled)
        return plan

    def _build_plan(self, batch: int, recycled: list[cl.Kernel] | None) -> _EnqueuePlan:
        """Every launch for `batch` positions, in order: the 3x3 layers, then the heads.

        The block input stays in x_buf; the first conv writes t_buf, the second adds x_buf
        back in place (each element is read and written by one work item). Each layer but
        the last ends in out_in_transform, which also writes the next layer's V, so only the
        first layer has an in_transform of its own.
        """
        params, program = self._gemm_for(batch)
        plan = _EnqueuePlan(batch, program, recycled)
        layers = [(self.input_conv, self.planes_buf, self.x_buf, False)]
        for first, second in self.tower:
            layers.append((first, self.x_buf, self.t_buf, False))
            layers.append((second, self.t_buf, self.x_buf, True))
        for i, (conv, src, dst, residual) in enumerate(layers):
            following = layers[i + 1][0] if i + 1 < len(layers) else None
            launches = self._conv3_launches(plan, params, conv, src, dst, residual, i == 0,
                                            following)
            plan.layers.append((launches, dst, conv.k))
        plan.heads = self._head_launches(plan)
        first = plan.layers[0][0][0]  # in_transform_input: the packed one has its sizes
        packed = plan.launch("in_transform_boxes", first[1], first[2], self.packed_buf,
                             batch * PACKED_ROW, batch * (PACKED_ROW + 2), self.v_buf,
                             self.input_conv.cpad,
                             batch * TILES, round_up(batch * TILES, params.nwg))
        plan.finish()
        plan.packed_launches = [packed] + plan.launches[1:]
        return plan

    def _conv3_launches(self, plan: _EnqueuePlan, p: GemmParams, conv: _Conv3, src, dst,
                        residual: bool, first: bool, following: _Conv3 | None) -> list[Launch]:
        """One 3x3 convolution + batch norm (+ residual from dst) + ReLU: the input transform
        (first layer only), the sgemm, and the output transform, fused with the `following`
        layer's input transform when there is one."""
        tiles = plan.batch * TILES
        ppad = round_up(tiles, p.nwg)
        lx, ly = TRANSFORM_LOCAL
        launches = []
        if first:
            launches.append(plan.launch("in_transform_input",
                                        (round_up(ppad, lx), round_up(conv.cpad, ly)),
                                        TRANSFORM_LOCAL, src, self.v_buf, conv.c, conv.cpad,
                                        tiles, ppad))
        launches.append(plan.launch(p.kernel_name(), p.global_size(conv.kpad, ppad),
                                    p.local_size(), conv.kpad, ppad, conv.cpad, conv.u,
                                    self.v_buf, self.m_buf))
        if following is None:
            launches.append(plan.launch("out_transform_bn",
                                        (round_up(tiles, lx), round_up(conv.k, ly)),
                                        TRANSFORM_LOCAL, self.m_buf, dst, dst, conv.mean,
                                        conv.scale, conv.k, conv.kpad, tiles, ppad,
                                        int(residual), 1))
            return launches
        assert following.c == conv.k, (following.c, conv.k)
        launches.append(plan.launch("out_in_transform",
                                    (plan.batch * FUSED_LOCAL[0], following.cpad),
                                    FUSED_LOCAL, self.m_buf, dst, dst, conv.mean, conv.scale,
                                    self.v_buf, conv.k, conv.kpad, tiles, ppad,
                                    following.cpad, int(residual)))
        return launches

    def _head_launches(self, plan: _EnqueuePlan) -> list[Launch]:
        """The heads' 1x1 convolutions (into head_buf), then the three FC layers."""
        batch = plan.batch
        launches = [plan.launch("head_conv1x1", (round_up(BOARD_SQUARES, 32), batch), (32, 1),
                                self.x_buf, self.head_w, self.head_mean, self.head_scale,
                                self.head_buf, self.weights.filters, batch)]
        layers = [  # (name, input, offset, stride, output, offset, stride, n_in, n_out, relu)
            ("policy_fc", self.head_buf, 0, HEAD_OUTPUTS * BOARD_SQUARES, self.result_buf, 0,
             RESULT_WIDTH, 2 * BOARD_SQUARES, POLICY_OUTPUTS, 0),
            ("value_fc1", self.head_buf, 2 * BOARD_SQUARES, HEAD_OUTPUTS * BOARD_SQUARES,
             self.hidden_buf, 0, VALUE_HIDDEN, BOARD_SQUARES, VALUE_HIDDEN, 1),
            ("value_fc2", self.hidden_buf, 0, VALUE_HIDDEN, self.result_buf, POLICY_OUTPUTS,
             RESULT_WIDTH, VALUE_HIDDEN, 1, 0)]
        for name, src, src_off, src_stride, dst, dst_off, dst_stride, n_in, n_out, relu in layers:
            w, b = self.fc[name]
            launches.append(plan.launch("fc_layer", (round_up(n_out, 32), batch), (32, 1), src,
                                        src_off, src_stride, w, b, dst, dst_off, dst_stride,
                                        n_in, n_out, batch, relu))
        return launches

    def _enqueue(self, launches: list[Launch]) -> None:
        """Hot path: one enqueue per launch, nothing else (arguments were set by the plan)."""
        queue, enqueue = self.queue, cl.enqueue_nd_range_kernel
        events = self._profile_events
        if events is None:
            for kernel, global_size, local_size in launches:
                enqueue(queue, kernel, global_size, local_size)
        else:
            for kernel, global_size, local_size in launches:
                events.append((kernel.function_name,
                               enqueue(queue, kernel, global_size, local_size)))

    def _start(self, planes: np.ndarray, blocking: bool = False) -> tuple[_EnqueuePlan,
                                                                          np.ndarray]:
        """Grow the buffers if needed, upload the planes; the plan and the uploaded host array.

        The upload is non-blocking unless `blocking`: the caller keeps the host array alive
        until the batch has been read back."""
        planes = np.asarray(planes)
        batch = planes.shape[0]
        assert planes.shape[1:] in ((INPUT_CHANNELS, 19, 19), (INPUT_CHANNELS, BOARD_SQUARES)), \
            planes.shape
        rows = plan_rows(batch)
        if rows > self.capacity:
            self._grow(rows)
        plan = self._plan_for(rows)
        host_in = np.zeros((rows, INPUT_CHANNELS, BOARD_SQUARES), np.float32)
        host_in[:batch] = planes.reshape(batch, INPUT_CHANNELS, BOARD_SQUARES)
        cl.enqueue_copy(self.queue, self.planes_buf, host_in, is_blocking=blocking)
        return plan, host_in

    def tower_outputs(self, planes: np.ndarray) -> list[np.ndarray]:
        """Every 3x3 layer's output float32 [B, F, 361], read back one by one (for tests)."""
        plan, _ = self._start(planes, blocking=True)
        outputs = []
        for launches, dst, channels in plan.layers:
            self._enqueue(launches)
            out = np.empty((plan.batch, channels, BOARD_SQUARES), self.dtype)
            cl.enqueue_copy(self.queue, out, dst)
            outputs.append(out[:len(planes)].astype(np.float32))
        return outputs

    def forward_heads(self, planes: np.ndarray) -> np.ndarray:
        """The heads' 1x1 conv outputs float32 [B, 3, 361] (policy 0-1, value 2), after BN+ReLU."""
        plan, host_in = self._start(planes)
        self._enqueue(plan.launches)
        heads = np.empty((plan.batch, HEAD_OUTPUTS, BOARD_SQUARES), np.float32)
        cl.enqueue_copy(self.queue, heads, self.head_buf, is_blocking=True)
        return heads[:len(planes)]

    def profile(self, planes: np.ndarray) -> dict[str, float]:
        """Device seconds per kernel name for one forward pass (on a profiling queue)."""
        profiled = cl.CommandQueue(self.ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        queue, self.queue = self.queue, profiled
        events: list = []
        self._profile_events = events
        try:
            self.forward(planes)
        finally:
            self._profile_events = None
            self.queue = queue
        totals: dict[str, float] = {}
        for name, event in events:
            seconds = (event.profile.end - event.profile.start) * 1e-9
            totals[name] = totals.get(name, 0.0) + seconds
        return totals

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch: planes [B, 18, 19, 19] -> (policy_logits [B, 362], value [B])."""
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Pending:
        """Enqueue a whole batch and its read-back without waiting for the device.

        The queue is in order, so a later batch reuses the same device buffers safely: its
        upload runs only after this batch's result has been copied out."""
        batch = len(planes)
        if batch == 0:
            return _Pending(self, planes, np.empty((0, RESULT_WIDTH), np.float32), None)
        plan, host_in = self._start(planes)
        return self._run(plan, plan.launches, planes, host_in)

    def _run(self, plan: _EnqueuePlan, launches: list[Launch], planes, host_in) -> _Pending:
        """Enqueue the pass and its read-back, start the device, return the pending batch."""
        self._enqueue(launches)
        result = np.empty((plan.batch, RESULT_WIDTH), np.float32)  # padded rows included
        event = cl.enqueue_copy(self.queue, result, self.result_buf, is_blocking=False)
        self.queue.flush()  # start the device now: the search collects the next batch meanwhile
        pending = _Pending(self, planes, result, event)
        pending.host_in = host_in  # the upload reads it until the batch is done
        return pending

    @property
    def accepts_packed_inputs(self) -> bool:
        """submit_packed may be used: the device builds the planes."""
        return True

    def submit_packed(self, packed: bytes, batch: int) -> _Pending:
        """As submit, for `batch` positions packed by nn/features.packed_inputs: the input
        planes are built on the device (in_transform_boxes). Hot path: one upload of 3.5 kB
        a position instead of 26 kB of float planes built by the host."""
        if batch == 0:
            return _Pending(self, range(0), np.empty((0, RESULT_WIDTH), np.float32), None)
        rows = plan_rows(batch)
        if rows > self.capacity:
            self._grow(rows)
        plan = self._plan_for(rows)
        host_in = np.zeros(rows * (PACKED_ROW + 2 + PACKED_KOMI_BYTES), np.uint8)
        host_in[:batch * PACKED_ROW] = np.frombuffer(packed, np.uint8, batch * PACKED_ROW)
        host_in[rows * PACKED_ROW:rows * PACKED_ROW + 2 * batch] = np.frombuffer(
            packed, np.uint8, 2 * batch, batch * PACKED_ROW)
        if len(packed) > batch * (PACKED_ROW + 2):  # dynamic komi: colour-plane values
            at = rows * (PACKED_ROW + 2)
            host_in[at:at + PACKED_KOMI_BYTES * batch] = np.frombuffer(
                packed, np.uint8, PACKED_KOMI_BYTES * batch, batch * (PACKED_ROW + 2))
        cl.enqueue_copy(self.queue, self.packed_buf, host_in, is_blocking=False)
        return self._run(plan, plan.packed_launches, range(batch), host_in)

    def _finish(self, planes, result) -> tuple[np.ndarray, np.ndarray]:
        result = result[:len(planes)]  # the padding rows of plan_rows go
        policy = np.ascontiguousarray(result[:, :POLICY_OUTPUTS])
        value = ((1.0 + np.tanh(result[:, POLICY_OUTPUTS])) / 2.0).astype(np.float32)
        return policy, value


class _Pending:
    """One submitted batch: `result()` waits for its read-back, then decodes it."""

    def __init__(self, backend: OpenCLBackend, planes, result: np.ndarray, event):
        self.backend = backend
        self.planes = planes
        self.host = result
        self.event = event
        self.host_in = None

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self.event is not None:
            self.event.wait()
            self.event = self.host_in = None
        return self.backend._finish(self.planes, self.host)
