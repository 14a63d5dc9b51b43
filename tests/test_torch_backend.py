"""The PyTorch backend against the NumPy backend (the oracle: a Winograd pass in NumPy, written
independently of PyTorch's convolutions), and its planes built from packed positions against
the host's planes (nn/features.py gathers through the symmetry table; the backend mirrors
coordinates as in_transform_boxes does).

Runs on PyTorch's CPU build (CI installs it); CUDA and half precision on a GPU are the
lead's run (`leelaz bench net --backend torch`). Without torch the torch tests skip, except
the ones that check the message a user gets then.
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from backend_helpers import random_game_positions, random_planes, record_packed_calls, rel_error
from conftest import requires

from leelaz.backends import BackendUnavailable, create_backend
from leelaz.backends.numpy_backend import NumpyBackend
from leelaz.backends.weights import load_weights
from leelaz.nn.features import input_planes_batch, packed_inputs
from leelaz.nn.network import Network

torch = requires("torch")

from leelaz.backends import torch_backend  # noqa: E402
from leelaz.backends.torch_backend import (EAGER_GRAPH_ROWS, TorchBackend,  # noqa: E402
                                            bucket_rows)

SHIPPED = "weights/leelaz-6x128.txt.gz"


@pytest.fixture(scope="module")
def shipped():
    return load_weights(SHIPPED)


@pytest.fixture(scope="module")
def small(random_weights):
    return load_weights(random_weights(2, 32, seed=9))




def test_single_precision_matches_numpy_on_the_shipped_network(shipped):
    planes = random_planes(24, seed=5)
    want_p, want_v = NumpyBackend(shipped).forward(planes)
    backend = TorchBackend(shipped, device="cpu", precision="single", quiet=True)
    got_p, got_v = backend.forward(planes)
    assert got_p.dtype == np.float32 and got_v.dtype == np.float32
    assert got_p.shape == (24, 362) and got_v.shape == (24,)
    assert np.abs(got_p - want_p).max() < 1e-4
    assert np.abs(got_v - want_v).max() < 1e-5
    assert backend.precision == "single" and not backend.asynchronous


def test_real_positions_every_symmetry_match_numpy(shipped):
    """Through the Network (softmax, value per side): every symmetry, the 8-way average, and
    a random symmetry per state with the same seed on both sides."""
    torch_net = Network(shipped, TorchBackend(shipped, device="cpu", quiet=True), seed=3)
    numpy_net = Network(shipped, NumpyBackend(shipped), seed=3)
    states = random_game_positions(40, seed=1)
    for symmetry in list(range(8)) + ["average", None]:
        batch = states[:12] if symmetry == "average" else states
        got = torch_net.evaluate(batch, symmetry=symmetry, read_cache=False)
        want = numpy_net.evaluate(batch, symmetry=symmetry, read_cache=False)
        for g, w in zip(got, want):
            assert np.abs(np.asarray(g.policy) - w.policy).max() < 1e-5, symmetry
            assert abs(g.winrate - w.winrate) < 1e-5, symmetry


def test_random_network_matches_numpy_at_many_batch_sizes(small):
    backend = TorchBackend(small, device="cpu", precision="single", quiet=True)
    reference = NumpyBackend(small)
    for batch, seed in ((1, 1), (7, 2), (33, 3)):
        planes = random_planes(batch, seed)
        got_p, got_v = backend.forward(planes)
        want_p, want_v = reference.forward(planes)
        assert np.abs(got_p - want_p).max() < 1e-4, batch
        assert np.abs(got_v - want_v).max() < 1e-5, batch
    backend.bucketed = True  # zero rows padded on (as on CUDA) change nothing
    states = random_game_positions(19, seed=8)
    syms = [i % 8 for i in range(19)]
    planes = input_planes_batch(states, np.zeros((19, 18, 361), np.float32), syms)
    want_p, want_v = reference.forward(planes.reshape(19, 18, 19, 19))
    for got_p, got_v in (backend.forward(planes.reshape(19, 18, 19, 19)),
                         backend.submit_packed(packed_inputs(states, syms), 19).result()):
        assert got_p.shape == (19, 362) and got_v.shape == (19,)
        assert np.abs(got_p - want_p).max() < 1e-4
        assert np.abs(got_v - want_v).max() < 1e-5
    empty_p, empty_v = backend.forward(np.zeros((0, 18, 19, 19), np.float32))
    assert empty_p.shape == (0, 362) and empty_v.shape == (0,)


def test_half_precision_stays_close_to_numpy(small):
    """fp16 weights and activations (CPU here; CUDA on the GPU): within half's precision."""
    backend = TorchBackend(small, device="cpu", precision="half", quiet=True)
    assert backend.precision == "half"
    planes = random_planes(6, seed=4)
    got_p, got_v = backend.forward(planes)
    want_p, want_v = NumpyBackend(small).forward(planes)
    assert got_p.dtype == np.float32
    assert rel_error(got_p, want_p) < 3e-2
    assert np.abs(got_v - want_v).max() < 3e-2


@pytest.mark.parametrize("symmetry", list(range(8)))
def test_planes_from_packed_positions_equal_the_host_planes(small, symmetry):
    """Every symmetry, both colours to move, short histories; rows of mixed symmetries."""
    backend = TorchBackend(small, device="cpu", quiet=True)
    states = random_game_positions(50, seed=symmetry + 10)
    syms = [symmetry] * 25 + [(symmetry + i) % 8 for i in range(25)]
    want = input_planes_batch(states, np.zeros((50, 18, 361), np.float32), syms)
    packed = torch.from_numpy(np.frombuffer(packed_inputs(states, syms), np.uint8).copy())
    got = backend.planes_from_packed(packed, 50).numpy()
    assert np.array_equal(got.reshape(50, 18, 361), want)


def test_symmetry_table_is_the_oracles_in_mailbox_indices():
    """The backend's own table (backends/ may not import nn/symmetry) entry by entry against
    Network::get_symmetry written out in tests/oracle.py."""
    y, x = np.divmod(oracle.symmetry_table(), 19)
    assert np.array_equal(torch_backend._symmetry_table(), (y + 1) * 21 + x + 1)


def test_planes_from_packed_positions_carry_the_dynamic_komi(small):
    states = random_game_positions(12, seed=4)
    for i, state in enumerate(states[::2]):
        state.set_net_komi(-20.0 + 9 * i, 3.0 + i)  # every other row told a komi
    syms = [i % 8 for i in range(12)]
    want = input_planes_batch(states, np.zeros((12, 18, 361), np.float32), syms)
    packed = packed_inputs(states, syms)
    assert len(packed) > 12 * (torch_backend.PACKED_ROW + 2)  # the komi section is there
    got_p, got_v = TorchBackend(small, device="cpu", quiet=True).submit_packed(packed,
                                                                               12).result()
    want_p, want_v = NumpyBackend(small).forward(want.reshape(12, 18, 19, 19))
    assert not np.array_equal(want[0, 16:], want[1, 16:])  # the komi planes differ
    assert np.abs(got_p - want_p).max() < 1e-4
    assert np.abs(got_v - want_v).max() < 1e-5


def test_network_sends_packed_positions_and_gets_numpys_answers(small, monkeypatch):
    backend = TorchBackend(small, device="cpu", quiet=True)
    assert backend.accepts_packed_inputs
    calls = record_packed_calls(backend, monkeypatch)
    device = Network(small, backend, seed=7)
    host = Network(small, NumpyBackend(small), seed=7)
    states = random_game_positions(60, seed=3)
    for size, symmetry in ((5, 0), (13, 5), (30, None), (2, "average")):
        got = device.evaluate(states[:size], symmetry=symmetry, read_cache=False)
        want = host.evaluate(states[:size], symmetry=symmetry, read_cache=False)
        for g, w in zip(got, want):
            assert np.abs(np.asarray(g.policy) - w.policy).max() < 1e-5
            assert abs(g.winrate - w.winrate) < 1e-5
    assert len(calls) == 4


def test_bucket_rows_cover_every_batch_with_few_shapes():
    rows = [bucket_rows(b) for b in range(1, 1025)]
    assert all(r >= b for b, r in zip(range(1, 1025), rows))
    assert all(r - b <= b // 8 for b, r in zip(range(17, 1025), rows[16:]))
    assert len(set(rows)) <= 5 + 8 * 6  # 1..16, then 8 sizes per doubling up to 1024
    assert rows[:8] == [1, 2, 4, 4, 8, 8, 8, 8]


def test_a_gpu_without_cuda_is_a_clear_error(small, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(BackendUnavailable, match="--gpu 1 asks for CUDA"):
        create_backend("torch", small, gpus=[1])
    with pytest.raises(BackendUnavailable, match="has no CUDA"):
        create_backend("torch", small, device="cuda:0")
    assert create_backend("torch", small, quiet=True).device.type == "cpu"  # no --gpu: CPU


def test_without_torch_the_registry_says_what_to_install(small, monkeypatch):
    import re

    from leelaz.install_hints import torch_install_hint
    monkeypatch.setattr(torch_backend, "torch", None)
    with pytest.raises(BackendUnavailable, match=re.escape(torch_install_hint())):
        create_backend("torch", small)


@pytest.mark.parametrize("precision", ["single", "half"])
def test_cuda_submits_in_flight_match_numpy(shipped, precision):
    """On a GPU only (the lead's run: `pytest tests/test_torch_backend.py -k cuda`): the
    asynchronous path (pinned staging, the stream, padded rows, packed positions decoded on
    the device) against NumPy, with several batches in flight at once."""
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and PyTorch's CUDA build (pip install -e '.[torch]')")
    backend = TorchBackend(shipped, device="cuda:0", precision=precision, quiet=True)
    assert backend.asynchronous and backend.bucketed and backend.precision == precision
    tolerance = {"single": 1e-4, "half": 5e-2}[precision]
    reference = NumpyBackend(shipped)
    jobs = []
    for batch, seed in ((1, 1), (19, 2), (130, 3), (7, 4)):
        states = random_game_positions(batch, seed=seed)
        syms = [(i * 3 + seed) % 8 for i in range(batch)]
        planes = input_planes_batch(states, np.zeros((batch, 18, 361), np.float32), syms)
        planes = planes.reshape(batch, 18, 19, 19)
        jobs.append((planes, backend.submit(planes),
                     backend.submit_packed(packed_inputs(states, syms), batch)))
    for planes, *pending in jobs:
        want_p, want_v = reference.forward(planes)
        for got in pending:
            got_p, got_v = got.result()
            assert got_p.dtype == np.float32 and got_p.shape == want_p.shape
            assert rel_error(got_p, want_p) < tolerance
            assert np.abs(got_v - want_v).max() < tolerance


@pytest.mark.parametrize("precision", ["single", "half"])
def test_cuda_graph_replays_equal_the_eager_pass(shipped, precision):
    """On a GPU only (as above): packed batches through the captured passes (several
    buckets, interleaved and in flight together, a bucket replayed twice) give what the
    eager pass gives for the same positions."""
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and PyTorch's CUDA build (pip install -e '.[torch]')")
    graphed = TorchBackend(shipped, device="cuda:0", precision=precision, quiet=True)
    eager = TorchBackend(shipped, device="cuda:0", precision=precision, quiet=True,
                         cuda_graphs=False)
    assert graphed.cuda_graphs and not eager.cuda_graphs
    jobs = []
    for batch, seed in ((3, 1), (19, 2), (130, 3), (17, 4), (20, 5)):
        states = random_game_positions(batch, seed=seed)
        syms = [(i * 5 + seed) % 8 for i in range(batch)]
        packed = packed_inputs(states, syms)
        jobs.append((graphed.submit_packed(packed, batch), eager.submit_packed(packed, batch)))
    assert sorted(graphed._graphs) == [4, 18, 20, 144]  # 19 and 20 share a bucket
    tolerance = {"single": 1e-5, "half": 1e-2}[precision]
    for got, want in jobs:
        got_p, got_v = got.result()
        want_p, want_v = want.result()
        assert got_p.shape == want_p.shape and got_v.shape == want_v.shape
        assert np.abs(got_p - want_p).max() < tolerance
        assert np.abs(got_v - want_v).max() < tolerance


def test_cuda_graphs_of_the_search_batch_are_captured_at_start(shipped):
    """On a GPU only (as above): with the search's batch size given, every bucket a batch
    of up to that many rows runs as is captured when the backend is made, not during the
    first search."""
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and PyTorch's CUDA build (pip install -e '.[torch]')")
    backend = TorchBackend(shipped, device="cuda:0", precision="half", quiet=True,
                           batch_size=20)
    assert sorted(backend._graphs) == [1, 2, 4, 8, 16, 18, 20]
    assert sorted(TorchBackend(shipped, device="cuda:0", quiet=True)._graphs) == []
    big = TorchBackend(shipped, device="cuda:0", quiet=True, batch_size=300)  # self-play's
    assert max(big._graphs) == EAGER_GRAPH_ROWS  # the rest at first use
