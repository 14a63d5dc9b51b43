"""A deliberately naive Leela Zero network: direct convolutions with np.pad and loops, float64;
and the board symmetries written out again.

The independent reference for the NumPy backend. It reads NetWeights as loaded
(bias already folded into the mean) and follows src/CPUPipe.cpp step by step, with none of the
backend's tricks: no Winograd, no folding of the scale into the weights, no fused heads.
`symmetry_table` is the tests' one oracle for the 8 symmetries, written from
Network::get_symmetry (src/Network.cpp) with plain loops and no code of leelaz's; the product's
one table is nn/symmetry.py's SYMMETRY_TABLE.
"""

from __future__ import annotations

import numpy as np


def conv_bn(x: np.ndarray, conv) -> np.ndarray:
    """scale * (conv(x) - mean) for one position: x [C, 19, 19] -> [K, 19, 19]."""
    w = conv.weights.astype(np.float64)
    k_out, c_in, kh, kw = w.shape
    r = kh // 2
    xp = np.pad(x, ((0, 0), (r, r), (r, r)))
    out = np.zeros((k_out, 19, 19))
    for k in range(k_out):
        for dy in range(kh):
            for dx in range(kw):
                window = xp[:, dy:dy + 19, dx:dx + 19]  # [C, 19, 19]
                out[k] += np.tensordot(w[k, :, dy, dx], window, axes=1)
    mean = conv.mean.astype(np.float64)[:, None, None]
    scale = conv.scale.astype(np.float64)[:, None, None]
    return scale * (out - mean)


def relu(x):
    return np.maximum(x, 0.0)


def forward_one(weights, planes: np.ndarray) -> tuple[np.ndarray, float]:
    """planes [18, 19, 19] -> (policy logits [362], value in [0, 1]), float64."""
    x = relu(conv_bn(planes.astype(np.float64), weights.input_conv))
    for first, second in weights.tower:
        mid = relu(conv_bn(x, first))
        x = relu(conv_bn(mid, second) + x)
    pol = relu(conv_bn(x, weights.policy_conv)).reshape(2 * 361)
    logits = weights.policy_fc_w.astype(np.float64) @ pol + weights.policy_fc_b
    val = relu(conv_bn(x, weights.value_conv)).reshape(361)
    hidden = relu(weights.value_fc1_w.astype(np.float64) @ val + weights.value_fc1_b)
    v = float(weights.value_fc2_w.astype(np.float64)[0] @ hidden + weights.value_fc2_b[0])
    return logits, (1.0 + np.tanh(v)) / 2.0


def forward(weights, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batch version: planes [B, 18, 19, 19] -> (logits [B, 362], value [B])."""
    outs = [forward_one(weights, p) for p in planes]
    return np.array([o[0] for o in outs]), np.array([o[1] for o in outs])


def symmetry_table() -> np.ndarray:
    """int [8, 361]: for symmetry s and input point y * 19 + x, the index y' * 19 + x' of the
    board point the network sees there. Network::get_symmetry: if s & 4 swap x and y; if s & 2
    x <- 18 - x; if s & 1 y <- 18 - y."""
    table = np.empty((8, 361), np.int64)
    for s in range(8):
        for y in range(19):
            for x in range(19):
                sx, sy = (y, x) if s & 4 else (x, y)
                if s & 2:
                    sx = 18 - sx
                if s & 1:
                    sy = 18 - sy
                table[s, y * 19 + x] = sy * 19 + sx
    return table


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
