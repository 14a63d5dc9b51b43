"""`--workers W`: W processes, each playing `--parallel K` games, into one folder.

Owns: `run_workers`, `Counters`, `worker_devices`, `enter_device`, `default_processes`.
Imports: multiprocessing, selfplay.store, selfplay.summary, selfplay.lifetime,
backends.device_choice (the CUDA devices visible); what a worker plays (selfplay.run_games) is
handed to it, as selfplay.py imports this module.

Why processes: one process walks one tree at a time, so Python's tree work (a few hundred
microseconds per playout) caps a process at a few thousand playouts/s whatever the network's
speed; on a many-core GPU host W processes multiply that, each sending its own big batches to
the device. Worker w takes the game indices first + w, first + w + W, ... (so
seeded games never repeat across workers) and plays its share of the games; the parent shows
one progress bar from shared counters. Processes are spawned, not forked (OpenCL contexts and
threads do not survive a fork). A worker dies with its parent (selfplay/lifetime.py), so a
SIGKILLed run leaves no process writing into the folder.

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


def _worker(play, parallel, settings, weights, folder, count, first, stride, seconds, counters,
            out, backend, parent, device=(None, None)):
    from leelaz.selfplay.lifetime import die_with_parent, parent_gone
    die_with_parent(parent)  # a SIGKILLed run must not leave its workers writing
    gpus = enter_device(device)
    if gpus is not None:
        import dataclasses
        settings = dataclasses.replace(settings, engine=settings.engine.with_(gpus=gpus))

    from leelaz.selfplay.store import GameStore
    store = GameStore(folder, first_index=first, stride=stride)
    try:
        summary = play(settings, weights, store, count, parallel, False, seconds,
                            counters, backend, orphaned=lambda: parent_gone(parent))
        out.put(("ok", summary.evaluations, summary.network_calls, summary.backend))
    except KeyboardInterrupt:
        out.put(("interrupted", 0, 0, ""))
    except SelfplayError as exc:
        out.put(("error", str(exc), 0, ""))
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        out.put(("error", f"{type(exc).__name__}: {exc}", 0, ""))
    finally:
        store.close()


def run_workers(play, settings, weights: str, folder: str, wanted: int, workers: int,
                parallel: int, progress: bool, seconds: float | None, first: int, backend=None):
    """Play `wanted` games in `workers` processes, each calling `play` (selfplay.run_games,
    handed down by play_selfplay: a module-level function, so a spawned worker finds it by
    name) for its share; the summary of them all."""
    from leelaz.selfplay.store import GameStore
    ctx = mp.get_context("spawn")
    counters = Counters(ctx)
    out = ctx.Queue()
    shares = [wanted // workers + (1 if w < wanted % workers else 0) for w in range(workers)]
    from leelaz.backends.device_choice import visible_cuda_devices
    devices = worker_devices(settings.engine, workers,
                             visible_cuda_devices() if backend is None else [])
    procs = [ctx.Process(target=_worker, args=(play, parallel, settings, weights, folder,
                                              shares[w], first + w, workers, seconds,
                                              counters, out, backend, os.getpid(), devices[w]),
                         daemon=True)
             for w in range(workers) if shares[w] > 0]
    began = time.monotonic()
    bar = ProgressBar(wanted, f"{len(procs)} workers", settings.max_moves) \
        if progress else None
    for p in procs:
        p.start()
    reports = []
    try:
        while len(reports) < len(procs):
            try:
                reports.append(out.get(timeout=0.5))
            except Exception:  # noqa: BLE001 - queue.Empty; a dead worker is checked below
                if not any(p.is_alive() for p in procs) and out.empty():
                    break
            if bar is not None:
                bar.update_counts(*counters.read())
    except KeyboardInterrupt:
        for p in procs:
            p.join()  # each worker got the Ctrl-C too and drops its games
        raise
    finally:
        for p in procs:
            p.join()
        if bar is not None:
            bar.update_counts(*counters.read())
            bar.close(None)
    errors = [r[1] for r in reports if r[0] == "error"]
    if errors:
        raise SelfplayError(errors[0])
    if len(reports) < len(procs):
        raise SelfplayError("a worker process died; the games it finished are kept")
    moves, playouts, games, _ = counters.read()
    evals = sum(r[1] for r in reports if r[0] == "ok")
    calls = sum(r[2] for r in reports if r[0] == "ok")
    backend = next((r[3] for r in reports if r[0] == "ok"), "")
    return SelfplaySummary(folder, len(GameStore.finished_in(folder)), games, moves,
                           time.monotonic() - began, playouts, 0, evals, calls,
                           f"{backend} x{len(procs)} workers")
