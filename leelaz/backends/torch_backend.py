"""The PyTorch backend: the forward pass through cuDNN (tensor cores in half precision).

Owns: `TorchBackend` (weights as torch tensors with batch norm folded, the forward pass, the
device and precision choice, submit on a CUDA stream, and the input planes built on the device
from packed positions), `torch_device` (the device a --gpu id names). Imports: numpy,
backends.base, and torch (an extra: `pip install 'leelaz[torch]'`; the engine runs without it,
so nothing else imports this module except through the registry).

Why: NVIDIA's OpenCL has no tensor cores; cuDNN's fp16 convolutions do, and self-play on a
big GPU is bound by the network. The computation is the NumPy backend's (src/CPUPipe.cpp):
batch norm folded into each convolution (weights x scale, bias -scale x mean), so every 3x3
layer is one conv2d (+ residual) + ReLU; the two 1x1 head convolutions are one conv2d with 3
outputs; the fully connected layers run in float32 whatever the precision, as the value's tanh
is sensitive near +-1. The answer of a batch is one [B, 363] float32 array (362 logits and the
value after (1 + tanh) / 2), one copy back to the host.

Precision: "half" is fp16 weights and activations (channels_last, the layout cuDNN's tensor
core kernels want); "single" is float32 throughout (cuDNN's TF32 switched off); "auto" is
half on CUDA and single on the CPU, where fp16 convolutions are slow and only the tests use
it.

On CUDA, `submit` enqueues the upload, the pass and the read-back (into pinned memory) on the
backend's own stream and returns: `result()` waits for an event. The search walks its trees
meanwhile (`asynchronous`). PyTorch's pinned-memory allocator does not hand a buffer out again
before the copies that use it have finished, so a fresh staging buffer per call is safe.
Batches are padded with zero rows to a few sizes (`bucket_rows`), so cuDNN picks (and
benchmarks) its algorithms for a handful of shapes, not for every batch size the search sends.

Packed inputs (`submit_packed`, nn/features.packed_inputs' layout: 8 mailboxes of 21 x 21
bytes a position, newest first, then a (side to move, symmetry) byte pair per position, then
optionally the dynamic-komi colour-plane values): the planes are built on the device by one
gather through a symmetry table of mailbox indices and two comparisons, the decoding that
kernels/winograd.cl's in_transform_boxes does for OpenCL. It saves the host building 26 kB of
float planes a position.

CUDA graphs (`cuda_graphs`, on by default on CUDA): a packed batch without dynamic komi
replays the pass captured once per bucket size (one graph launch instead of a few dozen
kernel launches from Python, each costing the host more than a small batch of a small
network costs the device), all graphs in one memory pool. Replays, uploads and read-backs
stay in the order of the backend's one stream, so a graph's output is read back before any
other graph can reuse that memory. A capture that fails switches graphs off for good; the
eager pass is the reference they are tested against.

Hot path: `submit`, `submit_packed`, `_launch`, `_replay`.
"""

from __future__ import annotations

import sys

import numpy as np

from leelaz.backends.base import (BOARD_SQUARES, HISTORY_LENGTH, INPUT_CHANNELS,
                                  MAILBOX_STRIDE, PACKED_KOMI_BYTES, PACKED_KOMI_FLAG,
                                  PACKED_ROW, POLICY_OUTPUTS, Backend, BackendUnavailable,
                                  ConvBN, Done, NetWeights)
from leelaz.install_hints import torch_install_hint

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the registry reports it when the backend is asked for
    torch = None

_B = 19
#: What to install when torch is missing (the extra in pyproject.toml).
INSTALL_HINT = f"PyTorch is not installed: {torch_install_hint()}"
PRECISIONS = ("auto", "single", "half")
#: The most rows whose graphs a backend captures when it is made: an engine's batches (16 on
#: the clock, 32 in analysis). Self-play's and the network server's batches of hundreds of
#: rows come in fewer sizes than their buckets, so those are captured at first use.
EAGER_GRAPH_ROWS = 32


def bucket_rows(batch: int) -> int:
    """The rows a batch runs as on CUDA (zero rows padded on): a power of two up to 16, then
    8 sizes per doubling (steps of 2 up to 32, of 4 up to 64, ...). cuDNN picks (and with
    benchmark mode times) its algorithms once per shape, so a few shapes serve every batch
    the search sends, and the padding costs less than an eighth of the rows."""
    if batch <= 16:
        return 1 << max(0, batch - 1).bit_length()
    step = 1 << ((batch - 1).bit_length() - 4)
    return -(-batch // step) * step


def torch_device(gpus: list[int] | None = None, cpu: bool = False) -> str:
    """The torch device string: "cpu" when asked, "cuda:N" for the first --gpu id, "cuda:0"
    without one when CUDA is present, else "cpu". Raises BackendUnavailable for a --gpu id
    without CUDA or beyond the devices present."""
    if torch is None:
        raise BackendUnavailable(INSTALL_HINT)
    if cpu:
        return "cpu"
    if not torch.cuda.is_available():
        if gpus:
            raise BackendUnavailable(f"--gpu {gpus[0]} asks for CUDA, which this PyTorch "
                                     f"({torch.__version__}) does not have here")
        return "cpu"
    count = torch.cuda.device_count()
    index = gpus[0] if gpus else 0
    if index >= count:
        raise BackendUnavailable(f"no CUDA device with id {index} ({count} present)")
    return f"cuda:{index}"


def _symmetry_table() -> np.ndarray:
    """int64 [8, 361]: for symmetry s and input point y * 19 + x, the mailbox index of the
    point it shows, as in_transform_boxes mirrors it (s & 4: transpose; s & 2: flip x;
    s & 1: flip y). The same mapping as nn/symmetry's table (which backends/ may not import),
    written from the kernel's rule (so the packed tests compare two independent encodings);
    tests/test_torch_backend.py checks it entry by entry against the tests' oracle."""
    y, x = np.divmod(np.arange(BOARD_SQUARES), _B)
    table = np.empty((8, BOARD_SQUARES), np.int64)
    for s in range(8):
        sx, sy = (y, x) if s & 4 else (x, y)
        sx = _B - 1 - sx if s & 2 else sx
        sy = _B - 1 - sy if s & 1 else sy
        table[s] = (sy + 1) * MAILBOX_STRIDE + sx + 1
    return table


def _folded(conv: ConvBN) -> tuple[np.ndarray, np.ndarray]:
    """(weights x scale, -scale x mean) in float64 then float32: conv + BN as one conv."""
    scale = conv.scale.astype(np.float64)
    w = conv.weights.astype(np.float64) * scale[:, None, None, None]
    return w.astype(np.float32), (-scale * conv.mean.astype(np.float64)).astype(np.float32)


class TorchBackend(Backend):
    """Backend.forward/submit through PyTorch; see the module docstring."""

    name = "torch"

    def __init__(self, weights: NetWeights, device: str | None = None,
                 gpus: list[int] | None = None, precision: str = "auto", quiet: bool = False,
                 cpu: bool = False, threads: int | None = None, log=None,
                 cuda_graphs: bool = True, batch_size: int = 0, **_options):
        """`device`: a torch device string ("cpu", "cuda:1"); without it, from `gpus`
        (--gpu ids: the first one) or `cpu` (see torch_device). `threads`: torch's CPU
        threads (default: torch's own). `log`: where the start-up line goes unless `quiet`
        (default stderr). `cuda_graphs`: packed batches replay captured passes on CUDA
        (module docstring). `batch_size`: the graphs of every bucket up to this many rows
        (at most EAGER_GRAPH_ROWS) are captured now, at start-up, so that no search spends
        its time capturing one (the first move of a fresh engine lost most of its half
        second so)."""
        if torch is None:
            raise BackendUnavailable(INSTALL_HINT)
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be auto, single or half, not {precision!r}")
        self.weights = weights
        self.quiet = quiet
        self._say = log
        name = device or torch_device(gpus, cpu)
        try:
            self.device = torch.device(name)
        except RuntimeError as e:
            raise BackendUnavailable(f"bad torch device {name!r}: {e}") from None
        self.cuda = self.device.type == "cuda"
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise BackendUnavailable(f"{self.device} asked for, but this PyTorch "
                                     f"({torch.__version__}) has no CUDA here")
        if precision == "auto":
            precision = "half" if self.cuda else "single"
        self.precision = precision
        self.dtype = torch.float16 if precision == "half" else torch.float32
        self.memory_format = torch.channels_last if self.cuda else torch.contiguous_format
        #: Asynchronous on CUDA only: on the CPU the pass runs inside submit anyway.
        self.asynchronous = self.cuda
        #: Batches padded to bucket_rows (for cuDNN's per-shape algorithm choice).
        self.bucketed = self.cuda
        #: Packed batches replay a captured pass (module docstring); off once a capture fails.
        self.cuda_graphs = bool(cuda_graphs) and self.cuda
        self._graphs: dict[int, tuple] = {}  # bucket rows -> (graph, input, output)
        self._graph_pool = None
        if threads and not self.cuda:
            torch.set_num_threads(threads)
        try:
            self._upload(weights)
            if self.cuda:
                # Process-wide cuDNN settings (this backend is the process's only user of
                # torch outside the trainer's own processes): an algorithm search per shape,
                # and for single precision no TF32 (it keeps only fp16's mantissa).
                torch.backends.cudnn.benchmark = True
                if precision == "single":
                    torch.backends.cudnn.allow_tf32 = False
                self.stream = torch.cuda.Stream(self.device)
                torch.cuda.synchronize(self.device)  # the weights are there for every stream
        except RuntimeError as e:  # CUDA out of memory, a broken driver, ...
            raise BackendUnavailable(f"PyTorch failed on {self.device}: "
                                     f"{' '.join(str(e).split())[:200]}") from None
        self._log(f"PyTorch {torch.__version__} on {self._device_name()}: "
                  f"{'fp16' if precision == 'half' else 'fp32'} ({precision} precision).")
        self.capture_graphs(min(batch_size, EAGER_GRAPH_ROWS))

    # ---- set-up ------------------------------------------------------------------------------

    def _log(self, line: str) -> None:
        if self.quiet:
            return
        if self._say is not None:
            self._say(line)
        else:
            print(line, file=sys.stderr, flush=True)

    def _device_name(self) -> str:
        if self.cuda:
            return f"{self.device} ({torch.cuda.get_device_name(self.device)})"
        return "cpu"

    def _tensor(self, array: np.ndarray, dtype=None):
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device, dtype or self.dtype)

    def _conv(self, conv: ConvBN):
        w, b = _folded(conv)
        return (self._tensor(w).contiguous(memory_format=self.memory_format),
                self._tensor(b))

    def _upload(self, w: NetWeights) -> None:
        """Every layer's tensors on the device: convolutions folded, in the pass's dtype;
        the fully connected layers in float32."""
        self.input_conv = self._conv(w.input_conv)
        self.tower = [(self._conv(a), self._conv(b)) for a, b in w.tower]
        heads = [_folded(w.policy_conv), _folded(w.value_conv)]
        head_w = np.concatenate([hw for hw, _ in heads])  # [3, F, 1, 1]
        self.head = (self._tensor(head_w).contiguous(memory_format=self.memory_format),
                     self._tensor(np.concatenate([hb for _, hb in heads])))
        f32 = torch.float32
        self.policy_fc = (self._tensor(w.policy_fc_w, f32), self._tensor(w.policy_fc_b, f32))
        self.value_fc1 = (self._tensor(w.value_fc1_w, f32), self._tensor(w.value_fc1_b, f32))
        self.value_fc2 = (self._tensor(w.value_fc2_w, f32), self._tensor(w.value_fc2_b, f32))
        self.symmetry_index = torch.from_numpy(_symmetry_table()).to(self.device)

    # ---- the pass ----------------------------------------------------------------------------

    def _network(self, x):
        """planes [N, 18, 19, 19] on the device (any float dtype) -> [N, 363] float32:
        the policy logits, then the value as (1 + tanh(v)) / 2."""
        x = x.to(self.dtype).contiguous(memory_format=self.memory_format)
        w, b = self.input_conv
        x = F.relu(F.conv2d(x, w, b, padding=1))
        for (w1, b1), (w2, b2) in self.tower:
            y = F.relu(F.conv2d(x, w1, b1, padding=1))
            x = F.relu(F.conv2d(y, w2, b2, padding=1) + x)
        w, b = self.head
        h = F.relu(F.conv2d(x, w, b)).float().reshape(-1, 3, BOARD_SQUARES)
        policy = F.linear(h[:, :2].reshape(-1, 2 * BOARD_SQUARES), *self.policy_fc)
        hidden = F.relu(F.linear(h[:, 2], *self.value_fc1))
        value = (1.0 + torch.tanh(F.linear(hidden, *self.value_fc2))) * 0.5
        return torch.cat([policy, value], dim=1)

    def planes_from_packed(self, packed, batch: int, komi=None):
        """The input planes float32 [batch, 18, 19, 19] on the device, from packed positions
        (a uint8 tensor on the device: nn/features.packed_inputs' mailboxes and byte pairs)
        and, with dynamic komi, `komi` float32 [batch, 2] (the side to move's colour-plane
        value, the other's) on the device. Hot path."""
        boxes = packed[:batch * PACKED_ROW].view(batch, HISTORY_LENGTH, -1).long()
        pairs = packed[batch * PACKED_ROW:batch * (PACKED_ROW + 2)].view(batch, 2).long()
        side, flags = pairs[:, 0], pairs[:, 1]
        index = self.symmetry_index[flags & 7]  # [batch, 361]
        colours = boxes.gather(2, index[:, None, :].expand(-1, HISTORY_LENGTH, -1))
        own = colours == side[:, None, None]
        other = colours == (1 - side)[:, None, None]
        black = (side == 0).float()
        to_move = torch.stack([black, 1.0 - black], dim=1)  # planes 16 (black), 17 (white)
        if komi is not None:
            by_colour = torch.where(side[:, None] == 0, komi, komi.flip(1))  # black, white
            to_move = torch.where((flags & PACKED_KOMI_FLAG).bool()[:, None], by_colour,
                                  to_move)
        colour = to_move[:, :, None].expand(-1, -1, BOARD_SQUARES)
        planes = torch.cat([own.float(), other.float(), colour], dim=1)
        return planes.view(batch, INPUT_CHANNELS, _B, _B)

    # ---- the seam ----------------------------------------------------------------------------

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch: planes [B, 18, 19, 19] -> (policy_logits [B, 362], value [B])."""
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray):
        """Start a batch; on CUDA returns before the device is done. Hot path."""
        planes = np.asarray(planes, np.float32)
        if planes.ndim != 4 or planes.shape[1:] != (INPUT_CHANNELS, _B, _B):
            if planes.ndim == 3 and planes.shape[1:] == (INPUT_CHANNELS, BOARD_SQUARES):
                planes = planes.reshape(-1, INPUT_CHANNELS, _B, _B)
            else:
                raise ValueError(f"expected planes [B, 18, 19, 19], got {planes.shape}")
        batch = len(planes)
        if batch == 0:
            return _empty()
        rows = bucket_rows(batch) if self.bucketed else batch
        host = self._staging((rows, INPUT_CHANNELS, _B, _B), torch.float32)
        host[:batch].numpy()[...] = planes
        if rows > batch:
            host[batch:].zero_()
        return self._launch(lambda: host.to(self.device, non_blocking=True), batch, host)

    @property
    def accepts_packed_inputs(self) -> bool:
        return True

    def submit_packed(self, packed: bytes, batch: int):
        """As submit, for `batch` positions in nn/features.packed_inputs' layout; the planes
        are built on the device. Hot path: 3.5 kB uploaded a position instead of 26 kB."""
        if batch == 0:
            return _empty()
        rows = bucket_rows(batch) if self.bucketed else batch
        size = batch * (PACKED_ROW + 2)
        if self.cuda_graphs and len(packed) == size:
            graph = self._graph(rows)
            if graph is not None:
                return self._replay(graph, packed, batch, rows)
        host = self._staging((size,), torch.uint8)
        host.numpy()[...] = np.frombuffer(packed, np.uint8, size)
        komi = None
        if len(packed) > size:  # dynamic komi: the colour-plane values follow
            komi = self._staging((batch, 2), torch.float32)
            komi.numpy()[...] = np.frombuffer(packed, "<f4", PACKED_KOMI_BYTES // 4 * batch,
                                             size).reshape(batch, 2)

        def planes():
            on_device = host.to(self.device, non_blocking=True)
            values = None if komi is None else komi.to(self.device, non_blocking=True)
            built = self.planes_from_packed(on_device, batch, values)
            if rows == batch:
                return built
            return torch.cat([built, built.new_zeros((rows - batch,) + built.shape[1:])])
        return self._launch(planes, batch, (host, komi))

    def _staging(self, shape, dtype):
        """A host tensor to upload from: pinned on CUDA (for an asynchronous copy)."""
        return torch.empty(shape, dtype=dtype, pin_memory=self.cuda)

    def _launch(self, make_planes, batch: int, staging):
        """Run the pass on the device planes `make_planes()` gives; the pending answer,
        which holds the `staging` host buffers until the batch is done (PyTorch's pinned
        allocator would wait for their copies anyway; this keeps the rule visible here)."""
        if not self.cuda:
            with torch.inference_mode():
                out = self._network(make_planes())[:batch].numpy()
            return Done(_split(out))
        with torch.inference_mode(), torch.cuda.stream(self.stream):
            out = self._network(make_planes())[:batch]
            host = torch.empty(out.shape, dtype=torch.float32, pin_memory=True)
            host.copy_(out, non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.stream)
        return _Pending(host, done, staging)

    def capture_graphs(self, batch_size: int) -> None:
        """Capture the graph of every bucket a batch of up to `batch_size` rows runs as
        (nothing without CUDA graphs)."""
        for rows in sorted({bucket_rows(b) for b in range(1, batch_size + 1)}):
            if not self.cuda_graphs:
                return
            self._graph(rows)

    def _graph(self, rows: int):
        """The captured pass for `rows` packed positions (captured on first use), or None
        when capturing failed (graphs are then off for good)."""
        graph = self._graphs.get(rows)
        if graph is not None:
            return graph
        try:
            static_in = torch.zeros(rows * (PACKED_ROW + 2), dtype=torch.uint8,
                                    device=self.device)
            with torch.no_grad(), torch.cuda.stream(self.stream):
                for _ in range(2):  # cuDNN chooses its algorithms outside the capture
                    self._network(self.planes_from_packed(static_in, rows))
            self.stream.synchronize()
            captured = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(captured, pool=self._graph_pool,
                                                   stream=self.stream):
                static_out = self._network(self.planes_from_packed(static_in, rows))
            self._graph_pool = captured.pool()
        except RuntimeError as e:
            self.cuda_graphs = False
            self._log(f"CUDA graphs off: {' '.join(str(e).split())[:200]}")
            torch.cuda.synchronize(self.device)
            return None
        graph = self._graphs[rows] = (captured, static_in, static_out)
        return graph

    def _replay(self, graph, packed: bytes, batch: int, rows: int):
        """A packed batch through its bucket's captured pass: the positions are laid out
        for `rows` (zero rows after `batch`), uploaded into the graph's input, the graph
        replayed and the `batch` rows read back, all on the backend's stream. Hot path."""
        captured, static_in, static_out = graph
        host = self._staging((rows * (PACKED_ROW + 2),), torch.uint8)
        staged = host.numpy()
        source = np.frombuffer(packed, np.uint8, batch * (PACKED_ROW + 2))
        boxes = batch * PACKED_ROW
        staged[:boxes] = source[:boxes]
        staged[boxes:rows * PACKED_ROW] = 0
        staged[rows * PACKED_ROW:rows * PACKED_ROW + 2 * batch] = source[boxes:]
        staged[rows * PACKED_ROW + 2 * batch:] = 0
        with torch.cuda.stream(self.stream):
            static_in.copy_(host, non_blocking=True)
            captured.replay()
            out = torch.empty((batch, POLICY_OUTPUTS + 1), dtype=torch.float32,
                              pin_memory=True)
            out.copy_(static_out[:batch], non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.stream)
        return _Pending(out, done, host)


def _split(out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (np.ascontiguousarray(out[:, :POLICY_OUTPUTS]),
            np.ascontiguousarray(out[:, POLICY_OUTPUTS]))


def _empty() -> Done:
    return Done((np.zeros((0, POLICY_OUTPUTS), np.float32), np.zeros(0, np.float32)))


class _Pending:
    """A batch under way on a CUDA stream: `result()` waits for its read-back."""

    def __init__(self, host, event, staging):
        self.host = host
        self.event = event
        self.staging = staging

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self.event is not None:
            self.event.synchronize()
            self.event = self.staging = None
        return _split(self.host.numpy())
