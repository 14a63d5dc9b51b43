"""The backend a start without --cpu-only chooses, its cache, and what follows from it.

When NumPy is chosen (no OpenCL, or an OpenCL CPU device that loses the race), the engine
must search exactly as with --cpu-only (same threads, same batch policy, same visits) and
say so in its start-up lines; the choice is cached per machine, drivers and network width so
later starts skip the race; a stale, damaged or unwritable cache costs one line, never a
failure.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

from leelaz.cli import run
from paths import REPO


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch):
    """These tests are about OpenCL against NumPy: on a machine where torch sees CUDA the
    engine would choose PyTorch instead (the last tests here), so CUDA is hidden."""
    from leelaz.backends import device_choice
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: False)
    monkeypatch.setattr(device_choice, "torch_may_see_cuda", lambda: False)


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    """A private user data folder (the choice cache and the tuner's cache live there)."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def _session(argv, script):
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, stdin=io.StringIO(script), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def _stats(err: str) -> list[str]:
    """The search's dump_stats lines and its visit and node counts (not its speed)."""
    return [line for line in err.splitlines() if " -> " in line] + \
        re.findall(r"^\d+ visits, \d+ nodes, \d+ playouts", err, re.M)


GENMOVE = "play b Q16\nplay w D4\ngenmove b\n"


def _write_choice(backend: str, width: int, batch: int):
    from leelaz.backends import choice_cache
    choice_cache.store(width, batch, {"backend": backend, "why": "race", "device": "test",
                                      "opencl_ms": 9.0, "numpy_ms": 1.0}, lambda line: None)


def _numpy_chosen(net: str, visits: int):
    """A cached "NumPy wins" for `net` (2x16), then GENMOVE with --cpu-only and without:
    (the start's args, its stdout, its stderr, --cpu-only's stderr)."""
    from leelaz.batching import DEFAULT_OPENCL_SEARCH_BATCH
    _write_choice("numpy", 16, DEFAULT_OPENCL_SEARCH_BATCH)
    base = ["-g", "--noponder", "-v", str(visits), "-s", "7", "-w", net]
    _, err_cpu = _session(base + ["--cpu-only"], GENMOVE)
    out, err = _session(base, GENMOVE)
    assert out.startswith("= \n\n= \n\n= ")
    return base, out, err, err_cpu


def test_a_numpy_choice_searches_and_speaks_like_cpu_only(random_weights, data_home):
    """A cached "NumPy wins" (as PoCL here): same stats as --cpu-only, no OpenCL lines."""
    _, out, err, err_cpu = _numpy_chosen(random_weights(2, 16), 200)
    assert _stats(err) == _stats(err_cpu) and "200 visits" in err
    assert "Using OpenCL batch size" not in err
    threads = re.findall(r"^Using \d+ thread\(s\)\.$", err_cpu, re.M)
    assert re.findall(r"^Using \d+ thread\(s\)\.$", err, re.M) == threads
    assert "using the NumPy backend (measured before" in err


def test_without_opencl_a_start_searches_like_cpu_only(random_weights, data_home, tmp_path):
    """No OpenCL device at all (the race is never run): NumPy, searching as --cpu-only. In a
    fresh process, since the OpenCL loader reads its environment once per process."""
    empty = tmp_path / "icd"
    empty.mkdir()
    # pyopencl's wheel adds its bundled PoCL; POCL_DEVICES hides PoCL's devices too.
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty), POCL_DEVICES="none",
               XDG_DATA_HOME=str(data_home), PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="")
    net = random_weights(1, 8)
    base = [sys.executable, "-m", "leelaz", "-g", "--noponder", "-v", "100", "-s", "3",
            "-w", net]
    runs = [subprocess.run(argv, input=GENMOVE, capture_output=True, text=True, env=env,
                           timeout=120) for argv in (base + ["--cpu-only"], base)]
    err_cpu, err = runs[0].stderr, runs[1].stderr
    assert _stats(err) == _stats(err_cpu) and "100 visits" in err
    assert "Using OpenCL batch size" not in err and "OpenCL unavailable" in err


def test_the_choice_is_measured_once_then_read(random_weights, data_home, monkeypatch):
    from leelaz.backends import choice_cache, device_choice
    from leelaz.backends.weights import load_weights

    calls = []

    def measure(weights, batch):
        calls.append(batch)
        return {"backend": "numpy", "why": "race", "device": "X", "opencl_ms": 5.0,
                "numpy_ms": 2.0}

    monkeypatch.setattr(device_choice, "_measure", measure)
    weights = load_weights(random_weights(1, 8))
    lines: list[str] = []
    assert device_choice.preferred_backend(weights, 32, lines.append) == "numpy"
    assert device_choice.preferred_backend(weights, 32, lines.append) == "numpy"
    assert calls == [32] and len(lines) == 2 and "measured before" in lines[1]
    saved = json.loads(choice_cache.cache_path().read_text())
    assert [e["numpy_ms"] for e in saved.values()] == [2.0]
    # another width is another entry (the race times one block of that width)
    device_choice.preferred_backend(load_weights(random_weights(1, 16)), 32, lines.append)
    assert calls == [32, 32] and len(json.loads(choice_cache.cache_path().read_text())) == 2
    # new drivers: stale, measured again, with a line saying so
    monkeypatch.setattr(choice_cache, "drivers_id", lambda: "other")
    lines.clear()
    device_choice.preferred_backend(weights, 32, lines.append)
    assert calls == [32, 32, 32] and "drivers changed" in lines[0] and len(lines) == 2


@pytest.mark.parametrize("damage", ["garbage", "directory", "entry"])
def test_a_damaged_cache_costs_one_line(random_weights, data_home, monkeypatch, damage):
    from leelaz.backends import choice_cache, device_choice
    from leelaz.backends.weights import load_weights

    monkeypatch.setattr(device_choice, "_measure", lambda w, b: {"backend": "numpy",
                                                                  "why": "unavailable",
                                                                  "reason": "test"})
    path = choice_cache.cache_path()
    path.parent.mkdir(parents=True)
    if damage == "garbage":
        path.write_bytes(b"\x00{not json")
    elif damage == "directory":
        path.mkdir()
    else:
        path.write_text(json.dumps({choice_cache._key(8, 32): {"backend": 7}}))
    lines: list[str] = []
    weights = load_weights(random_weights(1, 8))
    assert device_choice.preferred_backend(weights, 32, lines.append) == "numpy"
    assert len(lines) == 2 + (damage == "directory"), lines  # reason, choice[, not saved]
    assert str(path) in lines[0]


def test_a_read_only_data_folder_costs_one_line(random_weights, tmp_path, monkeypatch):
    """The cache cannot be written (the home is read-only; as root, a file where the folder
    should be stands in for that): the engine starts, says so once, and measures again."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    if os.geteuid() != 0:  # a really read-only folder as well, where permissions bite
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        monkeypatch.setenv("XDG_DATA_HOME", str(ro))
    from leelaz.backends import device_choice

    monkeypatch.setattr(device_choice, "_measure", lambda w, b: {"backend": "numpy",
                                                                  "why": "unavailable",
                                                                  "reason": "test"})
    out, err = _session(["-g", "--noponder", "-v", "5", "-w", random_weights(1, 8)],
                        "genmove b\n")
    assert out.startswith("= ")
    assert len(re.findall(r"^Cannot save the backend choice to .* the next start measures "
                          r"again\.$", err, re.M)) == 1, err


def test_left_to_choose_a_cuda_gpu_runs_pytorch_in_half_precision(monkeypatch):
    """--backend auto on a machine where torch sees CUDA: the engine's search runs PyTorch
    (fp16 unless --precision says otherwise); --cpu-only, --gpu, --tune-only and a backend
    asked for by name keep their meaning, and without CUDA nothing changes."""
    from leelaz.backends import device_choice
    from leelaz.config import EngineConfig
    from leelaz.nn.loading import choose

    weights = object()  # only its presence matters before the backend loads
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    plan = choose(EngineConfig(), weights)
    assert (plan.backend, plan.precision, plan.automatic) == ("torch", "half", True)
    given = EngineConfig(precision="single", precision_given=True)
    assert choose(given, weights).precision == "single"
    for own in (EngineConfig(cpu_only=True), EngineConfig(gpus=(0,)),
                EngineConfig(network_backend="torch", precision="single")):
        assert choose(own, weights) == choose(own, None)  # nothing measured nor swapped
        assert not choose(own, weights).automatic and choose(own, weights).lines == ()
    assert [choose(own, weights).backend for own in (
        EngineConfig(cpu_only=True), EngineConfig(gpus=(0,)),
        EngineConfig(network_backend="torch"))] == ["numpy", "opencl", "torch"]
    monkeypatch.setattr(device_choice, "preferred_backend", lambda *a: "opencl")
    tune_only = choose(EngineConfig(tune_only=True), weights)  # --tune-only tunes OpenCL
    assert (tune_only.backend, tune_only.automatic) == ("opencl", False)
    assert choose(EngineConfig(), weights, torch=False) == choose(EngineConfig(), None)
    leelas = EngineConfig(network_backend="opencl")  # --backend opencl: never PyTorch
    assert choose(leelas, weights).backend == "opencl"
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: False)
    assert choose(EngineConfig(), weights) == choose(EngineConfig(), None)


def test_no_nvidia_driver_means_no_torch_import():
    """Asking whether torch sees CUDA on a machine without NVIDIA's driver answers no
    without importing torch (its import costs a second or more at every start)."""
    from leelaz.backends.device_choice import NVIDIA_DRIVER_PATHS
    paths = [p for p in NVIDIA_DRIVER_PATHS if os.path.exists(p)]
    if paths:
        pytest.skip(f"this machine has a GPU driver ({paths[0]})")
    code = ("import sys; from leelaz.backends.device_choice import cuda_for_torch; "
            "print(cuda_for_torch(), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_verbs_games_take_the_same_choice(random_weights, monkeypatch):
    """Self-play, gating and `bench selfplay` (selfplay/runner.EngineSide) load their network
    by the engine's rule: auto is PyTorch where torch sees CUDA, unless --cpu-only or --gpu
    is given; opencl and torch are themselves."""
    from leelaz.backends import create_backend, device_choice
    from leelaz.selfplay.runner import EngineSide

    asked = []

    def built(weights, kind, **options):
        asked.append(kind)
        return create_backend("random", weights, asynchronous=False)

    monkeypatch.setattr(device_choice, "build_backend", built)
    monkeypatch.setattr(device_choice, "preferred_backend", lambda *a: "opencl")
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    net = random_weights(1, 8)
    common = dict(precision="auto", batch_rows=8)
    EngineSide(net, cpu_only=False, gpus=(), **common)
    EngineSide(net, cpu_only=True, gpus=(), **common)
    EngineSide(net, cpu_only=False, gpus=(0,), **common)
    EngineSide(net, cpu_only=False, gpus=(), network_backend="opencl", **common)
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: False)
    EngineSide(net, cpu_only=False, gpus=(), **common)
    assert asked == ["torch", "numpy", "opencl", "opencl", "opencl"]


def test_a_failed_automatic_pytorch_start_runs_on_opencls_choice(random_weights, data_home,
                                                                  monkeypatch):
    """PyTorch chosen by itself (torch sees CUDA) but failing to load (out of memory, a
    broken driver): one line says so, and the engine starts on what `--backend opencl` would
    choose (here NumPy, cached as the race's winner), searching as with --cpu-only. Asked
    for by name, the same failure is an error."""
    from leelaz.backends import device_choice
    from leelaz.backends.base import BackendUnavailable

    def broken(*args, **kwargs):
        raise BackendUnavailable("PyTorch failed on cuda:0: CUDA out of memory")

    from leelaz.nn import loading

    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    monkeypatch.setattr(device_choice, "_torch", broken)
    monkeypatch.setattr(loading, "opens_in_background", lambda config: False)  # --benchmark's
    base, out, err, err_cpu = _numpy_chosen(random_weights(2, 16), 50)
    assert "PyTorch unavailable (PyTorch failed on cuda:0: CUDA out of memory); using " \
           "OpenCL." in err
    assert _stats(err) == _stats(err_cpu) and "50 visits" in err
    code = run(base + ["--backend", "torch"], stdin=io.StringIO(GENMOVE),
               stdout=io.StringIO(), stderr=(named := io.StringIO()))
    assert code == 1 and "ERROR: PyTorch failed on cuda:0: CUDA out of memory" in named.getvalue()


def test_a_deferred_backend_waits_only_when_used():
    """backends/deferred.py: made at once while its opener runs; the opened backend's
    capabilities and answers once used; the opener's error at every use; root parallelism
    reads the expected device without waiting."""
    import threading

    import numpy as np

    from leelaz.backends import create_backend
    from leelaz.backends.base import BackendUnavailable
    from leelaz.backends.deferred import DeferredBackend
    from leelaz.nn.network import Network
    from leelaz.root_parallel.pool import runs_on_gpu

    go = threading.Event()

    def opener():
        assert go.wait(20)
        return create_backend("random", None, seed=3, asynchronous=False)

    backend = DeferredBackend(opener, weights=None, expected_on_gpu=True)
    assert not backend.ready
    assert runs_on_gpu(Network(None, backend)) is True  # answered while the opener waits
    go.set()
    planes = np.zeros((2, 18, 19, 19), np.float32)
    want = create_backend("random", None, seed=3, asynchronous=False).forward(planes)
    got = backend.forward(planes)
    assert backend.ready and backend.name == "random" and backend.asynchronous is False
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert runs_on_gpu(Network(None, backend)) is False  # now the backend's own answer

    def failing():
        raise BackendUnavailable("no CUDA here")

    broken = DeferredBackend(failing, weights=None, expected_on_gpu=True)
    for _ in range(2):
        with pytest.raises(BackendUnavailable, match="no CUDA here"):
            broken.forward(planes)


class _AnswersSeen(io.StringIO):
    """stdout that lets the backend open (`go`) once `first` answers are written, and
    remembers whether they were all written before it did."""

    def __init__(self, go, first: int):
        super().__init__()
        self.go, self.first, self.before_open = go, first, False

    def write(self, text):
        n = super().write(text)
        if not self.go.is_set() and self.getvalue().count("\n\n") >= self.first:
            self.before_open = True
            self.go.set()
        return n


def test_an_automatic_pytorch_opens_while_gtp_is_answered(random_weights, data_home,
                                                        monkeypatch):
    """Where torch may see CUDA, the start answers GTP at once and opens PyTorch in the
    background (nn/loading.open_in_background): here the answers to protocol_version,
    boardsize and play are written while the backend is still held back, and the genmove
    after them, which waits for it, plays the move a start that waits plays."""
    import threading

    from leelaz.backends import create_backend, device_choice
    from leelaz.nn import loading

    go = threading.Event()
    opened = []

    def held_back(weights, *args, **kwargs):  # a GPU's stand-in: answers while Python goes on
        opened.append(go.wait(20))
        return create_backend("random", weights, seed=5, asynchronous=True)

    monkeypatch.setattr(device_choice, "torch_may_see_cuda", lambda: True)
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    monkeypatch.setattr(device_choice, "_torch", held_back)
    argv = ["-g", "--noponder", "-v", "40", "-s", "7", "-w", random_weights(2, 16)]
    script = "protocol_version\nboardsize 19\nplay b Q16\ngenmove w\n"
    out, err = _AnswersSeen(go, 3), io.StringIO()
    assert run(argv, stdin=io.StringIO(script), stdout=out, stderr=err) == 0, err.getvalue()
    assert out.before_open and opened == [True]
    answers = out.getvalue().split("\n\n")
    assert answers[:3] == ["= 2", "= ", "= "] and re.fullmatch(r"= [A-T]\d+", answers[3])
    monkeypatch.setattr(loading, "opens_in_background", lambda config: False)
    waited, _ = _session(argv, script)
    assert waited == out.getvalue()


def test_a_failed_pytorch_in_the_background_gives_way_to_opencls_choice(random_weights,
                                                                         data_home,
                                                                         monkeypatch):
    """PyTorch opened in the background but failing (out of memory): the same line as a
    start that waits, and the moves come from what `--backend opencl` chooses (here NumPy,
    with its line)."""
    from leelaz.backends import device_choice
    from leelaz.backends.base import BackendUnavailable

    def broken(*args, **kwargs):
        raise BackendUnavailable("PyTorch failed on cuda:0: CUDA out of memory")

    monkeypatch.setattr(device_choice, "torch_may_see_cuda", lambda: True)
    monkeypatch.setattr(device_choice, "cuda_for_torch", lambda: True)
    monkeypatch.setattr(device_choice, "_torch", broken)
    monkeypatch.setattr(device_choice, "preferred_backend", lambda *a: "numpy")
    out, err = _session(["-g", "--noponder", "-v", "30", "-w", random_weights(2, 16)],
                        GENMOVE)
    assert "PyTorch unavailable (PyTorch failed on cuda:0: CUDA out of memory); using " \
           "OpenCL." in err and "Initializing CPU-only evaluation." in err
    assert re.fullmatch(r"= \n\n= \n\n= [A-T]\d+\n\n\n", out)  # + the end of input's
