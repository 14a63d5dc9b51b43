"""nn/loading.py: one choice of backend for every caller, handed on as a plan that pickles.

The backend each case must give is written out by hand from the rule: Leela Zero 0.17's
--cpu-only (the CPU) and --gpu (OpenCL on those ids), and leelaz's --backend (torch by name;
auto: PyTorch where torch sees CUDA, else OpenCL or NumPy by a timed race). The CUDA probe and
the race are stubbed, so that every case runs on any machine; what each caller then builds is
recorded at the one place backends are built (device_choice.build_backend).
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

from leelaz.backends import create_backend, device_choice
from leelaz.backends.weights import load_weights
from leelaz.config import EngineConfig
from leelaz.nn.loading import choose

#: (engine flags, torch sees CUDA, the race's winner, the backend every caller must open)
CASES = [
    (["--cpu-only"], True, "opencl", "numpy"),
    (["--gpu", "0", "--gpu", "1"], True, "opencl", "opencl"),
    (["--backend", "torch", "--cpu-only"], False, "opencl", "torch"),
    ([], True, "numpy", "torch"),
    ([], False, "numpy", "numpy"),
    ([], False, "opencl", "opencl"),
    (["--backend", "opencl"], True, "opencl", "opencl"),
]


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    """A private user data folder (the weights cache of the engine's start lives there)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def _rule(monkeypatch, cuda: bool, race: str) -> None:
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: cuda)
    monkeypatch.setattr(device_choice, "torch_may_see_cuda", lambda: cuda)
    monkeypatch.setattr(device_choice, "preferred_backend",
                        lambda weights, batch, say: say(f"the race: {race}") or race)


def test_a_plan_pickles_and_opens_the_same_network(random_weights, monkeypatch):
    from leelaz.game.state import GameState

    _rule(monkeypatch, cuda=False, race="numpy")
    path = random_weights(1, 8)
    weights = load_weights(path)
    plan = choose(EngineConfig(seed=5, noise=True), weights)
    copy = pickle.loads(pickle.dumps(plan))
    assert copy == plan
    assert (copy.backend, copy.lines, copy.cpu_search) == ("numpy", ("the race: numpy",), True)
    said: list[str] = []
    ours, theirs = plan.open_network(path, log=said.append), copy.open_network(path)
    assert said == ["the race: numpy", "Initializing CPU-only evaluation."]
    assert not theirs.symmetric_lookups  # -n: no symmetric cache lookups, as Leela Zero
    states = [GameState()]
    a, b = ours.evaluate(states)[0], theirs.evaluate(states)[0]  # the same seed, symmetry
    assert np.array_equal(a.policy, b.policy) and a.winrate == b.winrate


@pytest.mark.parametrize("flags,cuda,race,expected", CASES)
def test_every_caller_opens_the_engines_choice(flags, cuda, race, expected, random_weights,
                                               monkeypatch):
    """The engine's start, its helpers and network server (the engine's plan, pickled),
    self-play, gating and review (EngineSide) and `bench selfplay` (backend_peak): one
    choice, the rule's."""
    from leelaz.cli import parse_args, run
    from leelaz.gtp import search_commands
    from leelaz.selfplay.bench import backend_peak
    from leelaz.selfplay.runner import EngineSide

    _rule(monkeypatch, cuda, race)
    built = []

    def build(weights, kind, **options):
        built.append((kind, tuple(options["gpus"]), options["cpu_only"], options["precision"]))
        return create_backend("random", weights, asynchronous=False)

    monkeypatch.setattr(device_choice, "build_backend", build)
    handed = []
    make_search = search_commands.make_search

    def capture(*args, plan=None, **options):  # the plan the helpers would get
        handed.append(plan)
        return make_search(*args, plan=None, **options)

    monkeypatch.setattr(search_commands, "make_search", capture)
    path = random_weights(1, 8)
    weights = load_weights(path)
    argv = flags + ["-g", "-s", "3", "-w", path]
    err = io.StringIO()
    assert run(argv, stdin=io.StringIO("quit\n"), stdout=io.StringIO(), stderr=err) == 0
    engine = choose(parse_args(argv), weights)
    assert handed == [engine] and engine.backend == expected
    said = [line for line in err.getvalue().splitlines() if line.startswith("the race")]
    assert said == list(engine.lines)  # said once, by the engine alone
    helper = pickle.loads(pickle.dumps(engine)).quietly(seed=11)
    helper.open_network(path)
    pickle.loads(pickle.dumps(engine)).quietly().open_network(path)  # the network server
    cfg = parse_args(flags)
    EngineSide(path, cpu_only=cfg.cpu_only, gpus=cfg.gpus, precision="auto", batch_rows=8,
               network_backend=cfg.network_backend)
    backend_peak(path, 8, seconds=0.01, cpu_only=cfg.cpu_only, gpus=cfg.gpus,
                 backend=cfg.network_backend)
    assert len(built) == 5 and len(set(built)) == 1, built
    assert built[0][0] == expected
