"""Several --gpu ids: MultiDeviceBackend splits a batch across OpenCL backends.

References: the NumPy backend (1e-4 relative, fp32) for the joined answers; the chunk sizes and
the submit-before-wait order are checked on recording fakes, so they hold without OpenCL too.
On PoCL two backends share one device (`--gpu 0 --gpu 0`), which exercises the split, the
concurrent queues and the join exactly as two GPUs would.

Runs on PoCL in CI; the OpenCL tests are skipped only when no OpenCL device exists and
LEELAZ_STRICT_TESTS is not set (the pattern of test_opencl_backend.py).
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from backend_helpers import (need_opencl, opencl_backend, random_game_positions, random_planes,
                             rel_error)
from conftest import requires

from leelaz.backends.base import Backend
from leelaz.backends.demux import MultiDeviceBackend, split_packed, split_sizes
from leelaz.backends.mux import join_packed
from leelaz.nn.features import input_planes_batch, packed_inputs
from leelaz.backends.weights import load_weights

cl = requires("pyopencl")

from leelaz.backends.numpy_backend import NumpyBackend  # noqa: E402

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def multi(weights_2x32):
    """Two fp32 OpenCL backends on the same device, default tile sizes (no tuning)."""
    from leelaz.backends.device_choice import pick_device

    need_opencl()
    device = pick_device([0])
    parts = [opencl_backend(weights_2x32, "single", device=device) for _ in range(2)]
    return MultiDeviceBackend(parts)


# ---- the split and the order, on fakes --------------------------------------------------------

class _Recorder(Backend):
    """A fake asynchronous backend: policy row = the input's first value, value = its index."""

    name = "fake"
    asynchronous = True

    def __init__(self, label: str, events: list):
        self.label, self.events = label, events

    def submit(self, planes):
        self.events.append(("submit", self.label, len(planes)))
        policy = np.repeat(planes[:, :1, 0, 0], 362, axis=1).astype(np.float32)
        value = planes[:, 0, 0, 0].astype(np.float32)
        return _RecordedPending(self, policy, value)


class _RecordedPending:
    def __init__(self, backend, policy, value):
        self.backend, self.answer = backend, (policy, value)

    def result(self):
        self.backend.events.append(("result", self.backend.label))
        return self.answer


def test_split_sizes():
    assert split_sizes(7, 2) == [4, 3]
    assert split_sizes(8, 3) == [3, 3, 2]
    assert split_sizes(3, 3) == [1, 1, 1]
    assert split_sizes(1, 2) == [1]  # smaller than the device count: first devices only
    assert split_sizes(2, 4) == [1, 1]
    assert split_sizes(0, 2) == [0]


@pytest.mark.parametrize("batch", [0, 1, 2, 3, 7])
def test_chunks_are_submitted_before_any_wait_and_joined_in_order(batch):
    events: list = []
    backend = MultiDeviceBackend([_Recorder("a", events), _Recorder("b", events),
                                  _Recorder("c", events)])
    planes = np.zeros((batch, 18, 19, 19), np.float32)
    planes[:, 0, 0, 0] = np.arange(batch)
    pending = backend.submit(planes)
    submits = [e for e in events if e[0] == "submit"]
    assert events == submits  # nothing waited on yet
    assert [n for _, _, n in submits] == split_sizes(batch, 3)
    policy, value = pending.result()
    assert [e[0] for e in events[len(submits):]] == ["result"] * len(submits)
    assert policy.shape == (batch, 362) and value.shape == (batch,)
    np.testing.assert_array_equal(value, np.arange(batch))
    np.testing.assert_array_equal(policy[:, 361], np.arange(batch))
    assert backend.asynchronous and backend.name == "fake"


def test_synchronous_parts_make_a_synchronous_whole(weights_2x32):
    backend = MultiDeviceBackend([NumpyBackend(weights_2x32), NumpyBackend(weights_2x32)])
    assert not backend.asynchronous and backend.name == "numpy"
    planes = random_planes(3, seed=1)
    want = NumpyBackend(weights_2x32).forward(planes)
    got = backend.forward(planes)
    assert rel_error(got[0], want[0]) < 1e-6 and np.abs(got[1] - want[1]).max() < 1e-6


# ---- packed positions --------------------------------------------------------------------------

@pytest.mark.parametrize("komi", [False, True], ids=["plain", "dynamic-komi"])
@pytest.mark.parametrize("batch,parts", [(7, 2), (8, 3), (1, 2), (5, 1)])
def test_split_packed_chunks_are_the_positions_packed_alone(batch, parts, komi):
    """Each chunk is exactly nn/features.packed_inputs of its positions alone (the layout's
    own writer, not the splitter's inverse), and mux's join puts the chunks back together."""
    states = random_game_positions(batch, seed=batch + 3 * parts)
    if komi:
        for i, state in enumerate(states):
            state.set_net_komi(-10.0 + 4 * i, 2.0)
    syms = [(3 * i) % 8 for i in range(batch)]
    packed = packed_inputs(states, syms)
    sizes = split_sizes(batch, parts)
    chunks = split_packed(packed, batch, sizes)
    start = 0
    for chunk, size in zip(chunks, sizes):
        assert chunk == packed_inputs(states[start:start + size], syms[start:start + size])
        start += size
    assert join_packed(list(zip(chunks, sizes))) == packed


class _PackedDecoder(Backend):
    """A fake that takes packed positions: it answers from the host planes of what it got, so
    a wrong split, pairing or order changes the answers."""

    name = "decoder"
    asynchronous = True

    def __init__(self, reference: Backend, states_by_key: dict):
        self.reference, self.states_by_key, self.rows = reference, states_by_key, []

    @property
    def accepts_packed_inputs(self) -> bool:
        return True

    def submit_packed(self, packed, batch):
        from leelaz.backends.base import PACKED_ROW

        self.rows.append(batch)
        boxes, pairs = packed[:batch * PACKED_ROW], packed[batch * PACKED_ROW:]
        states = [self.states_by_key[boxes[i * PACKED_ROW:(i + 1) * PACKED_ROW]]
                  for i in range(batch)]
        syms = list(pairs[1:2 * batch:2])
        planes = input_planes_batch(states, np.zeros((batch, 18, 361), np.float32), syms)
        return _RecordedPending(self, *self.reference.forward(planes.reshape(batch, 18, 19, 19)))


def test_packed_batches_split_over_parts_give_the_planes_answers(weights_2x32):
    states = random_game_positions(9, seed=77)
    key = {packed_inputs([s], [0])[:-2]: s for s in states}
    assert len(key) == 9  # distinct positions, so a mix-up would show
    reference = NumpyBackend(weights_2x32)
    events: list = []
    parts = [_PackedDecoder(reference, key) for _ in range(2)]
    for part in parts:
        part.events, part.label = events, "x"
    multi = MultiDeviceBackend(parts)
    assert multi.accepts_packed_inputs
    syms = [i % 8 for i in range(9)]
    policy, value = multi.submit_packed(packed_inputs(states, syms), 9).result()
    planes = input_planes_batch(states, np.zeros((9, 18, 361), np.float32), syms)
    want_policy, want_value = reference.forward(planes.reshape(9, 18, 19, 19))
    assert [p.rows for p in parts] == [[5], [4]]
    # BLAS blocks 5 rows differently from 9: equal to float32 rounding, not bit for bit
    np.testing.assert_allclose(policy, want_policy, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value, want_value, rtol=1e-5, atol=1e-6)
    # one part that takes planes only: the whole takes planes only
    assert not MultiDeviceBackend([parts[0], NumpyBackend(weights_2x32)]).accepts_packed_inputs


# ---- on OpenCL ----------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 2, 3, 7])
def test_two_backends_on_one_device_match_numpy(multi, weights_2x32, batch, monkeypatch):
    used = []
    for part in multi.parts:  # record which part got how many rows
        monkeypatch.setattr(part, "submit", lambda p, _s=part.submit: used.append(len(p)) or _s(p))
    reference = NumpyBackend(weights_2x32)
    planes = random_planes(batch, seed=300 + batch)
    policy, value = multi.forward(planes)
    want_policy, want_value = reference.forward(planes)
    assert used == split_sizes(batch, 2)
    assert policy.shape == (batch, 362) and value.shape == (batch,)
    assert policy.dtype == np.float32 and value.dtype == np.float32
    assert rel_error(policy, want_policy) < TOLERANCE
    assert np.abs(value - want_value).max() < TOLERANCE


def test_two_batches_submitted_then_read(multi, weights_2x32):
    """A second batch enqueued on the same queues before the first is read gives both right."""
    reference = NumpyBackend(weights_2x32)
    first, second = random_planes(5, seed=41), random_planes(3, seed=42)
    pending_first = multi.submit(first)
    pending_second = multi.submit(second)
    for pending, planes in ((pending_second, second), (pending_first, first)):
        policy, value = pending.result()
        want_policy, want_value = reference.forward(planes)
        assert rel_error(policy, want_policy) < TOLERANCE
        assert np.abs(value - want_value).max() < TOLERANCE


def test_multi_exposes_what_start_up_reads(multi):
    assert multi.name == "opencl" and multi.asynchronous
    assert multi.precision == "single"
    assert multi.device == multi.parts[0].device and len(multi.devices) == 2


def test_chooser_builds_one_backend_per_id(weights_2x32):
    from leelaz.backends.device_choice import build_backend

    need_opencl()
    lines: list[str] = []
    backend = build_backend(weights_2x32, "opencl", gpus=[0, 0], precision="single",
                            batch_size=2, tune="none", quiet=True, log=lines.append)
    assert isinstance(backend, MultiDeviceBackend) and len(backend.parts) == 2
    assert all(part.name == "opencl" for part in backend.parts)
    assert backend.parts[0] is not backend.parts[1] and lines == []
    # one id: exactly the single backend of before
    single = build_backend(weights_2x32, "opencl", gpus=[0], precision="single", batch_size=2,
                           tune="none", quiet=True, log=lines.append)
    assert not isinstance(single, MultiDeviceBackend) and single.name == "opencl"


def test_chooser_falls_back_to_numpy_for_a_bad_id_among_several(weights_2x32):
    from leelaz.backends.device_choice import build_backend
    from leelaz.backends.device_choice import list_devices

    need_opencl()
    bad = len(list_devices()) + 5
    lines: list[str] = []
    backend = build_backend(weights_2x32, "opencl", gpus=[0, bad], precision="single",
                            batch_size=2, tune="none", quiet=True, log=lines.append)
    assert backend.name == "numpy"
    want = f"OpenCL unavailable (no OpenCL device with id {bad}); using the NumPy backend."
    assert lines == [want]


def test_cli_with_two_gpu_ids_answers(random_weights, tmp_path, monkeypatch, capsys):
    """`leelaz --gpu 0 --gpu 0`: a Selected device line per id, a heatmap that agrees with the
    NumPy network, and a move."""
    from leelaz.cli import run
    from leelaz.game.state import GameState
    from leelaz.nn.network import Network

    need_opencl()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # any tuner cache stays here
    net = random_weights(1, 8)
    out, err = io.StringIO(), io.StringIO()
    code = run(["-g", "--gpu", "0", "--gpu", "0", "--precision", "single", "-t", "2",
                "--noponder", "-v", "8", "-s", "3", "-w", net],
               stdin=io.StringIO("heatmap 0\ngenmove b\nquit\n"), stdout=out, stderr=err)
    text, log = out.getvalue(), err.getvalue()
    assert code == 0, log
    opencl_lines = capsys.readouterr().err  # the OpenCL backend writes to sys.stderr itself
    assert len(re.findall(r"^Selected device: ", opencl_lines, re.MULTILINE)) == 2, opencl_lines
    assert "NumPy backend" not in log and "CPU-only" not in log
    replies = text.split("\n\n")
    assert replies[0] == "= "
    assert re.fullmatch(r"= ([A-HJ-T](1[0-9]|[1-9])|pass|resign)", replies[1]), replies[1]
    want = Network(load_weights(net), NumpyBackend(load_weights(net))).evaluate(
        [GameState()], symmetry=0, read_cache=False)[0]
    winrate = float(re.search(r"^winrate: (\S+)$", log, re.MULTILINE).group(1))
    assert abs(winrate - want.winrate) < 1e-4
    rows = log[:log.index("\npass: ")].splitlines()[-19:]
    per_mille = np.array([[int(v) for v in row.split()] for row in rows[::-1]]).ravel()
    np.testing.assert_allclose(per_mille, want.policy[:361] * 1000, atol=1.01)
