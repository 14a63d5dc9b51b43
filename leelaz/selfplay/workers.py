"""`--workers W`: W processes, each playing `--parallel K` games, into one folder.

Owns: `run_workers`, `Counters`, `worker_devices`, `enter_device`, `default_processes`, and
the life of a spawned child that plays a share of a job (`run_children`, `child_main`: one
report each, ok, interrupted or one line of error), which the gating match's processes use too.
Imports: multiprocessing, selfplay.store, selfplay.summary, selfplay.lifetime,
backends.device_choice (the CUDA devices visible), backends.remote and selfplay.runner's
load_verb_weights / verbs_plan (the shared network server, `--network-server`); what a
worker plays (selfplay.run_games) is handed to it, as selfplay.py imports this module.

Why processes: one process walks one tree at a time, so Python's tree work (a few hundred
microseconds per playout) caps a process at a few thousand playouts/s whatever the network's
speed; on a many-core GPU host W processes multiply that, each sending its own big batches to
the device. Worker w takes the game indices first + w, first + w + W, ... (so
seeded games never repeat across workers) and plays its share of the games; the parent shows
one progress bar from shared counters. Processes are spawned, not forked (OpenCL contexts and
threads do not survive a fork). A worker dies with its parent (selfplay/lifetime.py), so a
SIGKILLed run leaves no process writing into the folder.

One network for all (`network_server`, off unless asked for: `--network-server`): with two
or more workers on one device, the workers send their batches to one network server
(backends/remote.py, as the engine's analysis helpers do) instead of each holding a device
context of its own, so that the device computes one context's calls instead of taking
sixteen contexts in turn (the analysis helpers' 8 trees on 6x128 went from 28,700 to 40,742
visits/s so, docs/log.md).

Several GPUs (`worker_devices`): as autogtp runs one Leela Zero per GPU, the workers are dealt
round robin over the devices instead of each splitting its batches over all of them: worker w
gets `--gpu` id w mod n when several ids are given, or, left to choose on a machine of several
NVIDIA GPUs (PyTorch's default there), CUDA_VISIBLE_DEVICES set to one of them before it
imports anything that starts CUDA. Without --workers there is one worker per such GPU
(`default_processes`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

from leelaz.selfplay.runner import SelfplayError
from leelaz.selfplay.summary import ProgressBar, SelfplaySummary

#: The most rows of one call of the shared network server (`run_workers`' network_server):
#: on an H200 the shipped 6x128 alone made 149,749 evaluations/s at 338 rows and 149,738 at
#: 512 (docs/performance.md), so larger calls buy nothing, and each new size of call costs a
#: CUDA graph capture and cuDNN's algorithm search when first seen.
SERVER_MAX_ROWS = 512


class Counters:
    """Moves, playouts, finished games and their moves, shared by the workers and their
    parent."""

    def __init__(self, ctx):
        self._values = ctx.Array("q", 4)

    def add(self, moves: int, playouts: int, games: int, finished_moves: int = 0) -> None:
        with self._values.get_lock():
            self._values[0] += moves
            self._values[1] += playouts
            self._values[2] += games
            self._values[3] += finished_moves

    def read(self) -> tuple[int, int, int, int]:
        with self._values.get_lock():
            return tuple(self._values)


def worker_devices(cfg, workers: int, visible: list[str]) -> list[tuple]:
    """(gpus, cuda_visible) for each worker: a --gpu id of its own (a tuple) when several are
    given, or a CUDA device of its own (CUDA_VISIBLE_DEVICES' value) when the choice is left
    to the engine (--backend auto or torch, no --gpu) and `visible` lists several; else
    (None, None), the engine's own choice as with one worker."""
    if cfg.cpu_only or workers < 2:
        return [(None, None)] * workers
    if len(cfg.gpus) >= 2:
        return [((cfg.gpus[w % len(cfg.gpus)],), None) for w in range(workers)]
    if not cfg.gpus and cfg.network_backend in ("auto", "torch") and len(visible) >= 2:
        return [(None, visible[w % len(visible)]) for w in range(workers)]
    return [(None, None)] * workers


def enter_device(device: tuple) -> tuple | None:
    """In a child process, before anything starts CUDA: take the device `worker_devices`
    gave it (gpus, CUDA_VISIBLE_DEVICES), setting CUDA_VISIBLE_DEVICES when it names one;
    the --gpu ids the child's engine is to use instead of its own, or None."""
    gpus, cuda_visible = device
    if cuda_visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = cuda_visible
    return tuple(gpus) if gpus is not None else None


def default_processes(cfg, visible: list[str]) -> int:
    """Processes a verb starts when not told (--workers, lz-gate's --jobs): one per visible
    CUDA device when the engine chooses the device itself (--backend auto or torch, no --gpu,
    no --cpu-only), so that every GPU of the machine plays, as autogtp runs one Leela Zero
    per GPU; else 1 (several --gpu ids are then split inside the batches of one process)."""
    if cfg.cpu_only or cfg.gpus or cfg.network_backend not in ("auto", "torch"):
        return 1
    return max(1, len(visible))


def child_main(job, parent: int, device: tuple, out, *args) -> None:
    """A spawned child's whole life (`run_children` starts it): die with the process
    `parent` (a SIGKILLed parent must not leave children writing into its folder), take
    `device` (enter_device), run `job(gpus, *args)` and put one report on `out`: ("ok", what
    the job returned), ("interrupted", None) after a Ctrl-C, or ("error", one line)."""
    from leelaz.selfplay.lifetime import die_with_parent
    die_with_parent(parent)
    gpus = enter_device(device)
    try:
        value = job(gpus, *args)
    except KeyboardInterrupt:
        out.put(("interrupted", None))
    except SelfplayError as exc:
        out.put(("error", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        out.put(("error", f"{type(exc).__name__}: {exc}"))
    else:
        out.put(("ok", value))


def run_children(children: list[tuple], watch, poll_seconds: float, died: str) -> list[tuple]:
    """Spawn a child for each (job, device, *args) of `children` (child_main: `job` a
    module-level function, so that a spawned process finds it by name), call `watch()` every
    `poll_seconds` until each has reported or died, and join them all, also after a Ctrl-C
    (each child got it too and drops its games in flight). The reports as they came; raises
    SelfplayError with the first child's error, or `died` when a child ended without one.
    Processes are spawned, never forked: the parent may hold CUDA, OpenCL or threads."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=child_main, args=(job, os.getpid(), device, out, *args),
                         daemon=True)
             for job, device, *args in children]
    for p in procs:
        p.start()
    reports: list[tuple] = []
    try:
        while len(reports) < len(procs):
            try:
                reports.append(out.get(timeout=poll_seconds))
            except Exception:  # noqa: BLE001 - queue.Empty; a dead child is checked below
                if not any(p.is_alive() for p in procs) and out.empty():
                    break
            watch()
    finally:
        for p in procs:
            p.join()
    errors = [value for status, value in reports if status == "error"]
    if errors:
        raise SelfplayError(errors[0])
    if len(reports) < len(procs):
        raise SelfplayError(died)
    return reports


def _play_share(gpus, play, parallel, settings, weights, folder, count, first, stride,
                seconds, counters, backend, parent):
    """A worker's share of the games (run by child_main): game indices first, first +
    stride, ... into `folder`; (evaluations, network calls, backend name)."""
    from leelaz.selfplay.lifetime import parent_gone
    from leelaz.selfplay.store import GameStore
    if gpus is not None:
        import dataclasses
        settings = dataclasses.replace(settings, engine=settings.engine.with_(gpus=gpus))
    store = GameStore(folder, first_index=first, stride=stride)
    try:
        summary = play(settings, weights, store, count, parallel, False, seconds,
                       counters, backend, orphaned=lambda: parent_gone(parent))
    finally:
        store.close()
    return summary.evaluations, summary.network_calls, summary.backend


def run_workers(play, settings, weights: str, folder: str, wanted: int, workers: int,
                parallel: int, progress: bool, seconds: float | None, first: int, backend=None,
                network_server: bool = False):
    """Play `wanted` games in `workers` processes, each calling `play` (selfplay.run_games,
    handed down by play_selfplay: a module-level function, so a spawned worker finds it by
    name) for its share; the summary of them all. `network_server`: the workers share one
    network server where they would all use the same device (the module docstring)."""
    from leelaz.selfplay.store import GameStore
    counters = Counters(mp.get_context("spawn"))
    shares = [wanted // workers + (1 if w < wanted % workers else 0) for w in range(workers)]
    from leelaz.backends.device_choice import visible_cuda_devices
    devices = worker_devices(settings.engine, workers,
                             visible_cuda_devices() if backend is None else [])
    server = None
    backends = [backend] * workers
    if network_server and backend is None and all(d == (None, None) for d in devices):
        server = _start_server(settings, weights, parallel, workers)
        from leelaz.backends.remote import ServerClient
        backends = [ServerClient(server.client(w)) for w in range(workers)]
    parent = os.getpid()
    children = [(_play_share, devices[w], play, parallel, settings, weights, folder,
                 shares[w], first + w, workers, seconds, counters, backends[w], parent)
                for w in range(workers) if shares[w] > 0]
    began = time.monotonic()
    bar = ProgressBar(wanted, f"{len(children)} workers", settings.max_moves) \
        if progress else None

    def watch():
        if bar is not None:
            bar.update_counts(*counters.read())
    try:
        reports = run_children(children, watch, 0.5,
                               "a worker process died; the games it finished are kept")
    finally:
        if server is not None:
            server.close()
        if bar is not None:
            bar.update_counts(*counters.read())
            bar.close(None)
    done = [value for status, value in reports if status == "ok"]
    moves, playouts, games, _ = counters.read()
    return SelfplaySummary(folder, len(GameStore.finished_in(folder)), games, moves,
                           time.monotonic() - began, playouts, 0, sum(d[0] for d in done),
                           sum(d[1] for d in done), f"{next((d[2] for d in done), '')} "
                           f"x{len(children)} workers"
                           + (", one network server" if server is not None else ""))


def _start_server(settings, weights: str, parallel: int, clients: int):
    """The workers' network server (backends/remote.NetworkServer): the backend the engine
    would choose for a worker's calls (selfplay.runner.verbs_plan), its calls capped at
    SERVER_MAX_ROWS rows and at --batchsize when given."""
    from leelaz.backends.remote import NetworkServer
    from leelaz.selfplay.runner import load_verb_weights, verbs_plan
    cfg = settings.engine
    plan = verbs_plan(load_verb_weights(weights), parallel * settings.leaves_per_batch,
                      cpu_only=cfg.cpu_only, gpus=cfg.gpus, precision=cfg.precision,
                      network_backend=cfg.network_backend, full_tuner=cfg.full_tuner)
    rows = min(n for n in (SERVER_MAX_ROWS, cfg.batchsize) if n)
    return NetworkServer(plan, weights, clients, max_rows=rows)
