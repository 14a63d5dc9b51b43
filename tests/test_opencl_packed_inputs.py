"""Positions sent to the OpenCL backend packed (8 mailboxes and a side/symmetry pair a row),
its input planes built on the device, against the host's planes on the NumPy backend.

The two encodings are written independently: nn/features.py gathers each symmetry's points
through the symmetry table, kernels/winograd.cl's in_transform_boxes mirrors coordinates.
Positions come from random games (captures, kos, fewer than 8 positions of history early on),
every symmetry and the 8-way average, both colours to move, batches that leave padding rows.

Runs on PoCL in CI; skipped only when no OpenCL device exists and LEELAZ_STRICT_TESTS is not set.
"""

from __future__ import annotations

import pytest
from backend_helpers import (TOLERANCE, opencl_backend, random_game_positions,
                             record_packed_calls, rel_error)
from conftest import requires

from leelaz.backends.weights import load_weights

cl = requires("pyopencl")

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402
from leelaz.nn.network import Network  # noqa: E402


@pytest.fixture(scope="module")
def weights(random_weights):
    return load_weights(random_weights(2, 32, seed=9))


@pytest.mark.parametrize("precision", ["single", "half"])
def test_packed_positions_evaluate_as_the_host_planes_do(weights, precision, monkeypatch):
    backend = opencl_backend(weights, precision, batch_size=8)
    assert backend.accepts_packed_inputs
    calls = record_packed_calls(backend, monkeypatch)
    device = Network(weights, backend, seed=7)  # the same random symmetries for both
    host = Network(weights, NumpyBackend(weights), seed=7)
    states = random_game_positions(120, seed=3)
    start = 0
    for size, symmetry in ((5, 0), (13, 1), (3, 2), (9, 3), (7, 4), (17, 5), (1, 6), (11, 7),
                           (30, None), (2, "average")):
        batch = states[start:start + size]
        start = (start + size) % 100
        got = device.evaluate(batch, symmetry=symmetry, read_cache=False)
        want = host.evaluate(batch, symmetry=symmetry, read_cache=False)
        for g, w in zip(got, want):
            assert rel_error(g.policy, w.policy) < TOLERANCE[precision], (size, symmetry)
            assert abs(g.winrate - w.winrate) < TOLERANCE[precision], (size, symmetry)
    assert len(calls) == 10
