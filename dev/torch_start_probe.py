"""A measurement, not part of leelaz: where the seconds of a start on PyTorch go (issue 18:
the engine's default on an NVIDIA GPU with the torch extra). Importing torch with CUDA's
start, reading the weights, making the backend, then capturing the CUDA graphs of the
batches up to 16 rows (a move on the clock) and of 18-32 rows (analysis's batch), as
`TorchBackend(batch_size=32)` does at start-up.

    PYTHONPATH=$PWD python3 dev/torch_start_probe.py [WEIGHTS]
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "weights/leelaz-6x128.txt.gz"
    began = time.perf_counter()
    import torch
    torch.cuda.init()
    imported = time.perf_counter()
    from leelaz.backends.torch_backend import TorchBackend
    from leelaz.backends.weights import load_weights
    weights = load_weights(path, cache=True)
    read = time.perf_counter()
    backend = TorchBackend(weights, device="cuda:0", precision="half", quiet=True)
    made = time.perf_counter()
    backend.capture_graphs(16)
    play = time.perf_counter()
    backend.capture_graphs(32)
    analysis = time.perf_counter()
    print(f"import torch and start CUDA {imported - began:.2f} s; weights {read - imported:.2f}"
          f" s; backend {made - read:.2f} s; graphs up to 16 rows {play - made:.2f} s, "
          f"18-32 rows {analysis - play:.2f} s")


if __name__ == "__main__":
    main()
