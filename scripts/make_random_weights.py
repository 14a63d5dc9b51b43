#!/usr/bin/env python3
"""Write a seeded random network in Leela Zero's weights format (text, or gzip for *.gz).

Used for test fixtures and benchmarks: the same seed always gives the same file, byte for byte.
The numbers are mild on purpose (small conv weights, the second conv of each residual block
scaled by 0.2, a gentle policy FC) so that the policy is spread out rather than one-hot and
the residual stream stays inside fp16 range even for 40 blocks.

    python scripts/make_random_weights.py --blocks 6 --filters 128 --seed 1 -o net.txt.gz
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys

import numpy as np


def random_tensors(blocks: int, filters: int, seed: int) -> list[np.ndarray]:
    """The parameter tensors of a random network, one per weights-file line, in file order."""
    rng = np.random.default_rng(seed)

    def conv(out_c: int, in_c: int, k: int, gain: float = 1.0) -> list[np.ndarray]:
        std = gain / np.sqrt(in_c * k * k)
        return [rng.normal(0.0, std, out_c * in_c * k * k),  # weights
                rng.normal(0.0, 0.05, out_c),  # bias
                rng.normal(0.0, 0.1, out_c),  # batch-norm mean
                rng.uniform(0.5, 1.5, out_c)]  # batch-norm variance

    tensors = conv(filters, 18, 3, gain=1.5)
    for _ in range(blocks):
        tensors += conv(filters, filters, 3)
        tensors += conv(filters, filters, 3, gain=0.2)
    tensors += conv(2, filters, 1, gain=2.0)
    tensors += [rng.normal(0.0, 3.0 / np.sqrt(722), 362 * 722), rng.normal(0.0, 0.1, 362)]
    tensors += conv(1, filters, 1)
    tensors += [rng.normal(0.0, 1.0 / np.sqrt(361), 256 * 361), rng.normal(0.0, 0.1, 256),
                rng.normal(0.0, 1.0 / np.sqrt(256), 256), rng.normal(0.0, 0.1, 1)]
    return [t.astype(np.float32) for t in tensors]


def weights_text(tensors: list[np.ndarray], version: int = 1) -> str:
    """The file's text: the version line, then one line of numbers per tensor."""
    lines = [str(version)]
    for t in tensors:
        lines.append(" ".join(np.char.mod("%.6g", t.astype(np.float64))))
    return "\n".join(lines) + "\n"


def write_weights(path: str, tensors: list[np.ndarray], version: int = 1) -> None:
    """Write atomically: a temporary file renamed over `path` once complete."""
    data = weights_text(tensors, version).encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=1)
    p.add_argument("--filters", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--version", type=int, choices=(1, 2), default=1)
    p.add_argument("-o", "--output", required=True, help="file name; *.gz is gzipped")
    a = p.parse_args(argv)
    write_weights(a.output, random_tensors(a.blocks, a.filters, a.seed), a.version)
    print(f"wrote {a.output}: {a.blocks} blocks x {a.filters} filters, seed {a.seed}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
