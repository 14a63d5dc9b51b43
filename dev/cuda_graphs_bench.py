"""On a CUDA machine: the torch backend's CUDA graphs against its eager pass.

Packed batches of random-game positions (the GPU backend tests' own), two in flight (as the
network server keeps them), 1.5 s a batch size, fp16, for each weights file given:

    PYTHONPATH=. python3 dev/cuda_graphs_bench.py WEIGHTS...

docs/log.md has the figures.
"""

from __future__ import annotations

import sys
import time

from leelaz.backends.torch_backend import TorchBackend
from leelaz.backends.weights import load_weights
from leelaz.nn.features import packed_inputs
from tests.backend_helpers import random_game_positions

BATCHES = (8, 16, 32, 64, 128, 256)
SECONDS = 1.5


def calls_per_second(backend: TorchBackend, packed: bytes, batch: int) -> float:
    """Calls a second with two in flight: submit one, then wait for the one before."""
    for _ in range(3):  # cuDNN's algorithm choice and the graph's capture
        backend.submit_packed(packed, batch).result()
    calls, began, before = 0, time.perf_counter(), None
    while time.perf_counter() - began < SECONDS:
        pending = backend.submit_packed(packed, batch)
        if before is not None:
            before.result()
        before, calls = pending, calls + 1
    before.result()
    return calls / (time.perf_counter() - began)


def main(paths: list[str]) -> None:
    pool = random_game_positions(64, 1)
    for path in paths:
        weights = load_weights(path)
        for graphs in (False, True):
            backend = TorchBackend(weights, device="cuda:0", precision="half", quiet=True,
                                   cuda_graphs=graphs)
            for batch in BATCHES:
                states = [pool[i % len(pool)] for i in range(batch)]
                packed = packed_inputs(states, [i % 8 for i in range(batch)])
                rate = calls_per_second(backend, packed, batch)
                print(f"{path.rsplit('/', 1)[-1]:22s} graphs={graphs!s:5s} batch {batch:4d}: "
                      f"{rate * batch:9.0f} evals/s, {1e3 / rate:6.3f} ms a call", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
