"""The seam between the network and its backends, and the weights every backend consumes.

Owns: the Backend protocol and the NetWeights record (weights as loaded, batch-norm folded).
Imports: numpy only. Backends see NumPy arrays and nothing of the game, the search or nn/.

Contract of `Backend.forward(planes)`:
    planes          float32 [B, 18, 19, 19]  input planes (Leela Zero's order, reference doc 4.3)
    returns         (policy_logits float32 [B, 362], value float32 [B])
    policy_logits   the policy FC output before softmax; slot 361 is pass
    value           (1 + tanh(v)) / 2 in [0, 1], from the value head's own point of view:
                    the side to move for a version-1 file, Black for version 2 (the caller
                    flips; backends never look at the version)

Optionally `Backend.submit(planes)` starts the same computation and returns at once with a
`Pending` whose `result()` gives forward's answer: a GPU computes one batch while the search
walks the tree for the next (search.py pipelines when the backend says `asynchronous`).
`submit(backend, planes)` below works for every backend, computing at once for those without.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

INPUT_CHANNELS = 18
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


class Backend(Protocol):
    """What the network needs of a backend. Implementations live one per file."""

    name: str  # "numpy", "opencl", ...

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate a batch; see the module docstring for shapes and meaning."""
        ...


class Pending(Protocol):
    """A forward pass under way; `result()` waits for it (once)."""

    def result(self) -> tuple[np.ndarray, np.ndarray]: ...


class Done:
    """A forward pass already computed (backends without their own `submit`)."""

    def __init__(self, answer: tuple[np.ndarray, np.ndarray]):
        self._answer = answer

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self._answer


def submit(backend: Backend, planes: np.ndarray) -> Pending:
    """Start `backend` on a batch: its own asynchronous submit, or forward() right away."""
    start = getattr(backend, "submit", None)
    return start(planes) if start is not None else Done(backend.forward(planes))
