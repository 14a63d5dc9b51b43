"""--backend torch from the command line to the backend: the engine, self-play, the gating match,
several --gpu ids, and the one-line error when PyTorch is missing or cannot do what was asked.

The engine's root evaluation with torch is checked against the same start on NumPy
(--cpu-only); the backend's own numbers are test_torch_backend's.
"""

from __future__ import annotations

import io
import re
import sys

import pytest

from conftest import requires

from leelaz.backends import BackendUnavailable
from leelaz.backends.weights import load_weights
from leelaz.cli import parse_args, run
from leelaz.install_hints import torch_install_hint

torch = requires("torch")

from leelaz.backends.torch_backend import TorchBackend  # noqa: E402


def _engine(argv, script="genmove b\nquit\n"):
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, stdin=io.StringIO(script), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _nn_eval(err: str) -> float:
    found = re.findall(r"^NN eval=([\d.]+)$", err, re.M)
    assert len(found) == 1, err
    return float(found[0])


@pytest.fixture
def no_torch(monkeypatch):
    """PyTorch not installed: importing torch fails, as on a machine without the extra."""
    import leelaz.backends

    monkeypatch.setitem(sys.modules, "torch", None)
    # imported afresh (and put back after): the package attribute too, or a later
    # `from leelaz.backends import torch_backend` would get the torch-less module
    monkeypatch.delitem(sys.modules, "leelaz.backends.torch_backend", raising=False)
    monkeypatch.delattr(leelaz.backends, "torch_backend", raising=False)


def test_the_flag_defaults_to_leela_zeros_choice():
    assert parse_args([]).network_backend == "auto"
    assert parse_args(["--backend", "torch", "--gpu", "1"]).network_backend == "torch"


def test_engine_plays_on_torch_with_numpys_root_evaluation(random_weights, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the CPU, here and in CI
    base = ["-g", "--noponder", "-v", "20", "-s", "5", "-t", "1", "--batchsize", "1", "-w",
            random_weights(2, 16)]
    code, out, err = _engine(base + ["--backend", "torch"])
    assert code == 0, err
    assert re.match(r"= [A-T]\d+\n\n= \n\n$", out), out
    assert "PyTorch" in err and "on cpu: fp32 (single precision)" in err
    assert "OpenCL unavailable" not in err and "CPU-only" not in err
    code, _, reference = _engine(base + ["--cpu-only"])
    assert code == 0
    assert abs(_nn_eval(err) - _nn_eval(reference)) < 1e-4


def test_engine_without_torch_says_what_to_install_and_exits_1(random_weights, no_torch):
    code, out, err = _engine(["-g", "--backend", "torch", "-w", random_weights(1, 8)])
    assert code == 1
    assert err.splitlines()[-1] == f"ERROR: PyTorch is not installed: {torch_install_hint()}"
    assert out == ""


def test_engine_gpu_id_without_cuda_is_an_error_not_a_fallback(random_weights, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, _, err = _engine(["-g", "--backend", "torch", "--gpu", "2", "-w",
                            random_weights(1, 8)])
    assert code == 1
    assert err.splitlines()[-1].startswith("ERROR: --gpu 2 asks for CUDA")
    assert "using the NumPy backend" not in err and "CPU-only" not in err


def test_several_gpu_ids_make_one_torch_backend_each(random_weights, monkeypatch):
    from leelaz.backends import device_choice
    from leelaz.backends.demux import MultiDeviceBackend

    made = []

    def create(name, weights, **options):
        made.append((name, options["gpus"]))
        return TorchBackend(weights, device="cpu", quiet=True)

    monkeypatch.setattr(device_choice, "create_backend", create)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # two CUDA devices
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    weights = load_weights(random_weights(1, 8))
    backend = device_choice.build_backend(weights, "torch", gpus=[1, 0], quiet=True)
    assert isinstance(backend, MultiDeviceBackend) and backend.name == "torch"
    assert made == [("torch", [1]), ("torch", [0])]


def test_a_bad_id_among_several_is_one_line_before_any_device_starts(random_weights,
                                                                       monkeypatch):
    """`--gpu 0 --gpu 5` on a machine of two CUDA devices: the engine says which id is
    missing in one ERROR line and exits 1, before the first device's backend is made."""
    from leelaz.backends import device_choice

    made = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(device_choice, "create_backend",
                        lambda name, weights, **options: made.append(options["gpus"]))
    code, out, err = _engine(["-g", "--backend", "torch", "--gpu", "0", "--gpu", "5", "-w",
                              random_weights(1, 8)])
    assert code == 1 and out == ""
    assert err.splitlines()[-1] == "ERROR: no CUDA device with id 5 (2 present)"
    assert made == []


def test_selfplay_and_the_gating_match_run_on_torch(random_weights, tmp_path, monkeypatch):
    from leelaz.selfplay import play_match, play_selfplay

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    calls = []
    real = TorchBackend.submit_packed
    monkeypatch.setattr(TorchBackend, "submit_packed",
                        lambda self, packed, n: calls.append(n) or real(self, packed, n))
    net_a, net_b = random_weights(1, 8, seed=1), random_weights(1, 8, seed=2)
    summary = play_selfplay(net_a, str(tmp_path / "sp"), 1, visits=4, parallel=1, seed=3,
                            progress=False, max_moves=12, network_backend="torch")
    assert summary.games_this_run == 1 and "torch" in summary.backend
    assert calls
    before = len(calls)
    result = play_match(net_a, net_b, str(tmp_path / "match"), max_games=2, sprt=False,
                        visits=4, parallel=2, seed=3, progress=False, max_moves=12,
                        network_backend="torch")
    assert result.games == 2
    assert len(calls) > before


def test_selfplay_without_torch_is_a_one_line_error(random_weights, tmp_path, no_torch,
                                                     capsys):
    code = run(["selfplay", "--games", "1", "--out", str(tmp_path / "sp"), "-w",
                random_weights(1, 8), "--backend", "torch", "-q"])
    assert code != 0
    err = capsys.readouterr().err
    assert f"PyTorch is not installed: {torch_install_hint()}" in err
    assert "Traceback" not in err


def test_the_loader_never_swaps_torch_for_another(random_weights, no_torch):
    from leelaz.config import EngineConfig
    from leelaz.nn.loading import choose

    weights = load_weights(random_weights(1, 8))
    plan = choose(EngineConfig(network_backend="torch", quiet=True), weights)
    with pytest.raises(BackendUnavailable, match="PyTorch is not installed"):
        plan.open_backend(weights)
