"""Self-play's workers over several GPUs: which device each worker process is given.

The rule (selfplay/workers.py `worker_devices`) is checked on made-up configurations, and the
plumbing on real worker processes: each records what it was given (its CUDA_VISIBLE_DEVICES
and its engine's --gpu ids) before it would load a network. No GPU is needed; the CUDA
devices are named through CUDA_VISIBLE_DEVICES, which is what the parent reads.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from leelaz.config import EngineConfig
from leelaz.selfplay.settings import SELFPLAY_DEFAULTS, SelfplaySettings
from leelaz.selfplay.workers import (default_processes, enter_device, run_workers,
                                     worker_devices)


def test_workers_are_dealt_round_robin_over_the_devices():
    two_ids = EngineConfig(gpus=(0, 1))
    assert worker_devices(two_ids, 3, []) == [((0,), None), ((1,), None), ((0,), None)]
    assert worker_devices(EngineConfig(), 3, ["2", "7"]) == [
        (None, "2"), (None, "7"), (None, "2")]
    torch = EngineConfig(network_backend="torch")
    assert worker_devices(torch, 2, ["0", "1"]) == [(None, "0"), (None, "1")]
    # Left alone: one device, one worker, the CPU, OpenCL asked for by name, one --gpu id.
    for cfg, workers, visible in ((EngineConfig(), 4, ["0"]), (EngineConfig(), 1, ["0", "1"]),
                                  (EngineConfig(cpu_only=True, gpus=(0, 1)), 2, ["0", "1"]),
                                  (EngineConfig(network_backend="opencl"), 2, ["0", "1"]),
                                  (EngineConfig(gpus=(1,)), 2, ["0", "1"])):
        assert worker_devices(cfg, workers, visible) == [(None, None)] * workers


def test_a_child_takes_its_device(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert enter_device((None, "1")) is None
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    assert enter_device(((3,), None)) == (3,)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"  # a --gpu id leaves the variable alone
    assert enter_device((None, None)) is None


def test_one_process_per_visible_gpu_when_the_device_is_left_to_choose():
    assert default_processes(EngineConfig(), ["0", "1"]) == 2
    assert default_processes(EngineConfig(network_backend="torch"), ["4", "5", "6"]) == 3
    assert default_processes(EngineConfig(), []) == 1  # no NVIDIA GPU: one process
    for told in (EngineConfig(cpu_only=True), EngineConfig(gpus=(0, 1)),
                 EngineConfig(network_backend="opencl")):
        assert default_processes(told, ["0", "1"]) == 1


def test_the_verbs_default_to_a_process_per_gpu(monkeypatch, random_weights, tmp_path):
    """selfplay without --workers and lz-gate without --jobs on a machine that shows two
    CUDA devices start two processes; --cpu-only or a --gpu id keeps one; given, the option
    decides (what the machine has is read from CUDA_VISIBLE_DEVICES, as the workers'
    devices are)."""
    from leelaz.selfplay import match_processes, selfplay
    from leelaz.selfplay.runner import SelfplayError
    from leelaz.tools import run_verb

    asked = []

    def record(name):
        def stand_in(*args, **kwargs):
            asked.append((name, kwargs.get("workers", kwargs.get("jobs"))))
            raise SelfplayError("stopped here")
        return stand_in

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(selfplay, "play_selfplay", record("selfplay"))
    monkeypatch.setattr(match_processes, "play_match_in_processes", record("match"))
    net = random_weights(1, 8)
    for extra in ([], ["--cpu-only"], ["--gpu", "1"], ["--workers", "3"]):
        run_verb(["selfplay", "-w", net, "--games", "2", "--out", str(tmp_path / "s"), "-q"]
                 + extra)
    for extra in ([], ["--cpu-only"], ["--jobs", "3"]):
        run_verb(["match", "--preset", "lz-gate", "--weights1", net, "--weights2", net,
                  "--out", str(tmp_path / "m")] + extra)
    assert asked == [("selfplay", 2), ("selfplay", 1), ("selfplay", 1), ("selfplay", 3),
                     ("match", 2), ("match", 1), ("match", 3)]


def test_the_zero_loop_defaults_to_a_process_per_gpu(monkeypatch, random_weights, tmp_path):
    from leelaz.tools import ToolError, run_verb
    from leelaz.tools import zero as zero_verb

    made = []

    def stand_in(workers):
        made.append(workers)
        raise ToolError("stopped here")

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(zero_verb, "LocalExecutor", stand_in)
    for i, extra in enumerate(([], ["--cpu-only"], ["--workers", "3"])):
        # --selfplay-only: no trainer, so no PyTorch needed to get as far as the executor
        run_verb(["zero", str(tmp_path / f"run{i}"), "--size", "1x8", "-q", "--selfplay-only"]
                 + extra)
    assert made == [2, 1, 3]


def test_the_visible_cuda_devices_follow_cuda_visible_devices(monkeypatch):
    from leelaz.backends.device_choice import visible_cuda_devices

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5")
    assert visible_cuda_devices() == ["3", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_cuda_devices() == []


def record_device(settings, weights, store, count, parallel, progress, seconds, counters,
                  backend, orphaned=None):
    """A worker's play (run_games' signature): write down what this process was given."""
    with open(os.path.join(store.folder, f"worker-{store._next}.json"), "w") as f:
        json.dump({"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                   "gpus": list(settings.engine.gpus)}, f)
    return SimpleNamespace(evaluations=0, network_calls=0, backend="recorded")


def _given(folder) -> dict[int, dict]:
    return {int(name[7:-5]): json.loads((folder / name).read_text())
            for name in os.listdir(folder) if name.startswith("worker-")}


def test_each_worker_process_gets_its_device(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    auto = SelfplaySettings.build(SELFPLAY_DEFAULTS, weights="w", visits=2)
    run_workers(record_device, auto, "w", str(tmp_path / "auto"), 3, 3, 1, False, None, 0)
    got = _given(tmp_path / "auto")
    assert {w: g["cuda"] for w, g in got.items()} == {0: "4", 1: "6", 2: "4"}
    assert all(g["gpus"] == [] for g in got.values())

    ids = SelfplaySettings.build(SELFPLAY_DEFAULTS, weights="w", visits=2, gpus=(1, 0))
    run_workers(record_device, ids, "w", str(tmp_path / "ids"), 2, 2, 1, False, None, 0)
    got = _given(tmp_path / "ids")
    assert {w: g["gpus"] for w, g in got.items()} == {0: [1], 1: [0]}
    assert all(g["cuda"] == "4,6" for g in got.values())  # inherited, not narrowed


def test_the_zero_loops_jobs_are_dealt_over_the_gpus_too(monkeypatch):
    """leelaz zero without Ray: its self-play and match jobs get the devices self-play's
    workers would; the trainer keeps the default one; a child applies what it was given."""
    from leelaz.zero import local_executor

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    spec = {"cpu_only": False, "gpus": [], "network_backend": "auto"}
    assert local_executor.job_devices("selfplay", [spec] * 3) == [
        (None, "0"), (None, "1"), (None, "0")]
    assert local_executor.job_devices("match", [spec] * 2) == [(None, "0"), (None, "1")]
    assert local_executor.job_devices("train", [spec]) == [(None, None)]
    ids = {**spec, "gpus": [2, 3]}
    assert local_executor.job_devices("selfplay", [ids] * 2) == [((2,), None), ((3,), None)]

    seen = []
    def record(spec):
        seen.append((spec["gpus"], os.environ.get("CUDA_VISIBLE_DEVICES")))
        return {}

    monkeypatch.setitem(local_executor.JOBS, "selfplay", record)
    monkeypatch.setattr(local_executor, "die_with_parent", lambda parent: None)
    sent = []
    conn = SimpleNamespace(send=sent.append, close=lambda: None)
    local_executor._child("selfplay", ids, conn, os.getpid(), ((3,), None))
    local_executor._child("selfplay", spec, conn, os.getpid(), (None, "1"))
    assert seen == [([3], "0,1"), ([], "1")] and [s[0] for s in sent] == ["ok", "ok"]
