"""The seam between the network and its backends, and the weights every backend consumes.

Owns: the `Backend` base class (the seam and every capability a caller may ask about, with
its default), `BackendUnavailable`, the NetWeights record (weights as loaded, batch-norm
folded). Imports: numpy only. Backends see NumPy arrays and nothing of the game, the
search or nn/.

Contract of `Backend.forward(planes)`:
    planes          float32 [B, 18, 19, 19]  input planes (Leela Zero's order, gather_features)
    returns         (policy_logits float32 [B, 362], value float32 [B])
    policy_logits   the policy FC output before softmax; slot 361 is pass
    value           (1 + tanh(v)) / 2 in [0, 1], from the value head's own point of view:
                    the side to move for a version-1 file, Black for version 2 (the caller
                    flips; backends never look at the version)

`Backend.submit(planes)` starts the same computation and returns a `Pending` whose `result()`
gives forward's answer. The base class computes at once; a GPU backend returns before the
device is done and says so with `asynchronous = True`, so that the search walks the tree for the
next batch meanwhile. Capabilities are declared on the class, never probed: a caller reads
`backend.asynchronous`, `backend.max_batch`, `backend.accepts_packed_inputs`, `precision` and
`device` on any backend and gets the base class's default where a backend has nothing to say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

#: The input layout, the contract between nn/features.py, which encodes positions in it, and
#: the backends, which read it (the OpenCL kernels get it as build #defines, `input_defines`).
#: It lives here, at the seam, because both sides need the numbers and backends/ may not
#: import nn/: HISTORY_LENGTH positions, newest first, each as a plane of the side to move's
#: stones, then as many of the other side's, then two side-to-move planes.
HISTORY_LENGTH = 8
INPUT_CHANNELS = 2 * HISTORY_LENGTH + 2
#: A packed position (submit_packed) is HISTORY_LENGTH mailboxes of this side (the 19x19
#: board with a one-point border), one byte a point, newest first.
MAILBOX_STRIDE = 21
PACKED_ROW = HISTORY_LENGTH * MAILBOX_STRIDE * MAILBOX_STRIDE
#: Dynamic komi: a packed row whose symmetry byte has PACKED_KOMI_FLAG set takes its two
#: colour planes' values (float32 little-endian: the side to move's plane, the other's) from a
#: section of PACKED_KOMI_BYTES per position after the (side, symmetry) pairs.
PACKED_KOMI_FLAG = 8
PACKED_KOMI_BYTES = 8
BOARD_SQUARES = 361
POLICY_OUTPUTS = 362
VALUE_HIDDEN = 256
#: Leela Zero's batch-norm epsilon: variance v becomes scale 1 / sqrt(v + BN_EPSILON).
BN_EPSILON = 1e-5


@dataclass
class ConvBN:
    """One convolution followed by batch norm, in the form the forward pass uses.

    The conv bias has already been folded into `mean` (mean - bias), so the layer computes
    scale * (conv(x) - mean), then the caller adds a residual and/or applies ReLU.
    """

    weights: np.ndarray  # float32 [out, in, k, k], k = 3 (tower) or 1 (heads); cross-correlation
    mean: np.ndarray  # float32 [out], batch-norm mean minus conv bias
    scale: np.ndarray  # float32 [out], 1 / sqrt(variance + BN_EPSILON)

    @property
    def outputs(self) -> int:
        return self.weights.shape[0]


@dataclass
class NetWeights:
    """A whole Leela Zero network: input conv, residual tower, policy and value heads."""

    version: int  # 1: value is the side to move's; 2: value is Black's (ELF OpenGo)
    input_conv: ConvBN  # 18 -> F, 3x3
    tower: list[tuple[ConvBN, ConvBN]]  # per residual block: the two F -> F 3x3 convs
    policy_conv: ConvBN  # F -> 2, 1x1
    policy_fc_w: np.ndarray  # float32 [362, 722], input ordered channel-major (c * 361 + idx)
    policy_fc_b: np.ndarray  # float32 [362]
    value_conv: ConvBN  # F -> 1, 1x1
    value_fc1_w: np.ndarray  # float32 [256, 361]
    value_fc1_b: np.ndarray  # float32 [256]
    value_fc2_w: np.ndarray  # float32 [1, 256]
    value_fc2_b: np.ndarray  # float32 [1]
    source: str = field(default="")  # file it was read from, for messages

    @property
    def filters(self) -> int:
        return self.input_conv.outputs

    @property
    def blocks(self) -> int:
        return len(self.tower)

    def parameter_bytes(self) -> int:
        """Bytes of float32 parameters, for lz-memory_report."""
        arrays = [self.policy_fc_w, self.policy_fc_b, self.value_fc1_w, self.value_fc1_b,
                  self.value_fc2_w, self.value_fc2_b]
        convs = [self.input_conv, self.policy_conv, self.value_conv]
        convs += [c for block in self.tower for c in block]
        arrays += [a for c in convs for a in (c.weights, c.mean, c.scale)]
        return sum(a.size for a in arrays) * 4


def input_defines() -> dict[str, int]:
    """The input layout as the kernels' build #defines."""
    return {"HISTORY": HISTORY_LENGTH, "MAILBOX_STRIDE": MAILBOX_STRIDE,
            "KOMI_FLAG": PACKED_KOMI_FLAG, "KOMI_BYTES": PACKED_KOMI_BYTES}


class BackendUnavailable(RuntimeError):
    """A backend cannot run here (no OpenCL platform, no device, build failure, ...)."""


class Pending(Protocol):
    """A forward pass under way; `result()` waits for it (once)."""

    def result(self) -> tuple[np.ndarray, np.ndarray]: ...


class Done:
    """A forward pass already computed (backends without their own `submit`)."""

    def __init__(self, answer: tuple[np.ndarray, np.ndarray]):
        self._answer = answer

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self._answer


class Backend:
    """The seam: what the network needs of a backend, with every capability's default.

    Implementations live one per file and subclass this; `forward` is the one method each
    must write. The class attributes below are the capabilities callers may read; a backend
    overrides the ones where it differs.
    """

    #: The registry's name for it ("numpy", "opencl", ...).
    name: str = "backend"
    #: submit() returns before the answer is computed (a device works while Python goes on):
    #: the search then keeps one batch in flight while it collects the next.
    asynchronous: bool = False
    #: The largest batch one call takes; None for any size (larger batches are the caller's
    #: to split).
    max_batch: int | None = None
    #: "single" or "half" storage; None where the question does not arise (the host).
    precision: str | None = None
    #: The device it runs on (a pyopencl Device), None on the host.
    device = None
    #: The weights it evaluates (None for backends without any, such as `random`).
    weights: NetWeights | None = None

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch; see the module docstring for shapes and meaning."""
        raise NotImplementedError

    def submit(self, planes: np.ndarray) -> Pending:
        """Start a batch; the default computes it at once."""
        return Done(self.forward(planes))

    @property
    def accepts_packed_inputs(self) -> bool:
        """The input format: True when `submit_packed` may be used now (the device builds
        the planes from packed positions), False for float planes only."""
        return False

    def submit_packed(self, packed: bytes, batch: int) -> Pending:
        """As submit, for `batch` positions in nn/features.packed_inputs' layout."""
        raise NotImplementedError(f"the {self.name} backend takes input planes only")
