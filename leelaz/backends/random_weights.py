"""Seeded random networks in Leela Zero's format: test fixtures, benchmarks, a Zero run's start.

Owns: `random_tensors(blocks, filters, seed, tame, uniform)` and `make_random_weights(path, ...)`.
Imports: numpy, backends.weights_writer.

The same seed always gives the same tensors, so the same file byte for byte. The numbers are
mild on purpose (He-like convolution weights, small biases, a gentle policy FC) so the policy
is spread out rather than one-hot. With `tame`, the second convolution of every residual block
is scaled by 0.2: plain random weights make the residual stream grow about 1.6x per block, which
overflows fp16 past about 20 blocks (Leela Zero's OpenCL self-check then aborts); tamed, the
stream stays finite in both precisions at any depth. The random draws are the same either way;
only that convolution's spread differs.

With `uniform`, the last layer of each head (the policy's fully connected layer, the value's
final one) is all zeros: the policy is exactly uniform over the 362 moves and the value exactly
0.5 in every position, the tower still random. This is the classic Zero bootstrap (Leela
Zero's run began from an all-zero network): the first self-play games are random play, so the
first trained network learns the value of positions from random games and its search beats
the start. A peaked random policy, by contrast, is a fixed arbitrary preference that a network
trained on a few hundred weak games may not beat. The random draws are the same either way.
"""

from __future__ import annotations

import os

import numpy as np

from leelaz.backends.weights_writer import write_weights

#: Spread of the second convolution of each residual block relative to a plain one, with tame.
TAME_GAIN = 0.2


def random_tensors(blocks: int, filters: int, seed: int, tame: bool = False,
                   uniform: bool = False) -> list[np.ndarray]:
    """The parameter tensors of a random network, one per weights-file line, in file order."""
    if blocks < 0 or filters < 1:
        raise ValueError(f"a network needs blocks >= 0 and filters >= 1, not {blocks}x{filters}")
    rng = np.random.default_rng(seed)

    def conv(out_c: int, in_c: int, k: int, gain: float = 1.0) -> list[np.ndarray]:
        std = gain / np.sqrt(in_c * k * k)
        return [rng.normal(0.0, std, out_c * in_c * k * k),  # weights
                rng.normal(0.0, 0.05, out_c),  # bias
                rng.normal(0.0, 0.1, out_c),  # batch-norm mean
                rng.uniform(0.5, 1.5, out_c)]  # batch-norm variance

    second_gain = TAME_GAIN if tame else 1.0
    tensors = conv(filters, 18, 3, gain=1.5)
    for _ in range(blocks):
        tensors += conv(filters, filters, 3)
        tensors += conv(filters, filters, 3, gain=second_gain)
    tensors += conv(2, filters, 1, gain=2.0)
    head_gain = 0.0 if uniform else 1.0
    tensors += [head_gain * rng.normal(0.0, 3.0 / np.sqrt(722), 362 * 722),
                head_gain * rng.normal(0.0, 0.1, 362)]
    tensors += conv(1, filters, 1)
    tensors += [rng.normal(0.0, 1.0 / np.sqrt(361), 256 * 361), rng.normal(0.0, 0.1, 256),
                head_gain * rng.normal(0.0, 1.0 / np.sqrt(256), 256),
                head_gain * rng.normal(0.0, 0.1, 1)]
    return [(t + 0.0).astype(np.float32) for t in tensors]  # + 0.0: no -0.0 in the file


def make_random_weights(path: str | os.PathLike, blocks: int, filters: int, seed: int,
                        tame: bool = False, version: int = 1, uniform: bool = False) -> str:
    """Write a seeded random network to `path` (gzip for *.gz), atomically; returns the path."""
    write_weights(path, random_tensors(blocks, filters, seed, tame, uniform), version)
    return os.fspath(path)
