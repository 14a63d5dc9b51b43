"""A gating match played by several processes at once, dealt over the machine's GPUs.

Owns: `play_match_in_processes` (`leelaz match --preset lz-gate --jobs N`). Imports:
selfplay.network_match (the match, its shards and its folder), selfplay.workers (which device
a process gets), selfplay.lifetime, backends.device_choice (the visible CUDA devices), config.

One process's games are bound by its Python thread, not by the device (the self-play
measurements in docs/performance.md): a second GPU given to the same process only splits
its batches. So, as autogtp runs one Leela Zero per GPU and the Zero loop runs its gating
match as shards on its workers, N spawned processes play shards 0..N-1 of one match into
one folder (network_match's `shard=(s, N)`: together exactly one match, the same games, the
SPRT read in game order), each on a device of its own: the --gpu ids dealt round robin, or
without --gpu one visible CUDA device each (selfplay/workers.py `worker_devices`, the rule
self-play's workers follow). The result is the folder's, as a single process reports it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

from leelaz.selfplay.network_match import MatchResult, play_match, tally
from leelaz.selfplay.runner import SelfplayError, warn

#: How often the parent looks at the folder for finished games (seconds).
POLL_SECONDS = 1.0


def _shard(weights_a, weights_b, out_dir, shard, jobs, options, device, parent, out):
    """A child: play shard `shard` of `jobs` on `device` ((gpus, CUDA_VISIBLE_DEVICES))."""
    from leelaz.selfplay.lifetime import die_with_parent
    from leelaz.selfplay.workers import enter_device
    die_with_parent(parent)  # a killed match leaves no process writing into its folder
    gpus = enter_device(device)
    if gpus is not None:
        options = {**options, "gpus": gpus}
    try:
        play_match(weights_a, weights_b, out_dir, shard=(shard, jobs), progress=False,
                   **options)
        out.put(("ok", ""))
    except KeyboardInterrupt:
        out.put(("interrupted", ""))
    except SelfplayError as exc:
        out.put(("error", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def play_match_in_processes(weights_a: str, weights_b: str, out_dir: str, *, jobs: int,
                            progress: bool = True, **options) -> MatchResult:
    """`play_match(weights_a, weights_b, out_dir, **options)` played by `jobs` processes at
    once (the module docstring); with `jobs` 1 it is play_match itself. Raises SelfplayError
    for bad input (a child's first error) or a child that died."""
    if jobs <= 1:
        return play_match(weights_a, weights_b, out_dir, progress=progress, **options)
    from leelaz.backends.device_choice import visible_cuda_devices
    from leelaz.config import EngineConfig
    from leelaz.selfplay.workers import worker_devices

    cfg = EngineConfig(cpu_only=bool(options.get("cpu_only")),
                       gpus=tuple(options.get("gpus") or ()),
                       network_backend=options.get("network_backend") or "auto")
    devices = worker_devices(cfg, jobs, visible_cuda_devices())
    ctx = mp.get_context("spawn")  # the parent may hold CUDA or OpenCL: never forked
    out = ctx.Queue()
    procs = [ctx.Process(target=_shard, args=(weights_a, weights_b, out_dir, s, jobs, options,
                                              devices[s], os.getpid(), out), daemon=True)
             for s in range(jobs)]
    for p in procs:
        p.start()
    reports, seen = [], 0
    try:
        while len(reports) < len(procs):
            try:
                reports.append(out.get(timeout=POLL_SECONDS))
            except Exception:  # noqa: BLE001 - queue.Empty; a dead child is checked below
                if not any(p.is_alive() for p in procs) and out.empty():
                    break
            if progress:
                seen = _say_progress(out_dir, seen)
    finally:
        for p in procs:
            p.join()
    errors = [text for status, text in reports if status == "error"]
    if errors:
        raise SelfplayError(errors[0])
    if len(reports) < len(procs):
        raise SelfplayError(f"a match process died; the games it finished are kept in "
                            f"{out_dir}")
    if any(status == "interrupted" for status, _ in reports):
        raise KeyboardInterrupt
    # Every shard has ended: the folder's result, as play_match gives it with nothing to play.
    return play_match(weights_a, weights_b, out_dir, progress=False, **options)


def _say_progress(out_dir: str, seen: int) -> int:
    """A line when the folder holds more finished games than `seen`; the new count."""
    try:
        wins, losses = tally(out_dir)
    except OSError:
        return seen
    if wins + losses > seen:
        warn(f"{time.strftime('%H:%M:%S')} {wins + losses} games: A {wins}, B {losses}")
    return max(seen, wins + losses)
