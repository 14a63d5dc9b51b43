"""A gating match played by several processes at once, dealt over the machine's GPUs.

Owns: `play_match_in_processes` (`leelaz match --preset lz-gate --jobs N`). Imports:
selfplay.network_match (the match, its shards and its folder), selfplay.workers (which device
a process gets, and the children's start, report and end: `run_children`, as self-play's
workers use), backends.device_choice (the visible CUDA devices), config.

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

import time

from leelaz.selfplay.network_match import MatchResult, play_match, tally
from leelaz.selfplay.runner import warn

#: How often the parent looks at the folder for finished games (seconds).
POLL_SECONDS = 1.0


def _shard(gpus, weights_a, weights_b, out_dir, shard, jobs, options):
    """A child's part (run by workers.child_main): shard `shard` of `jobs`, on its device."""
    if gpus is not None:
        options = {**options, "gpus": gpus}
    play_match(weights_a, weights_b, out_dir, shard=(shard, jobs), progress=False, **options)


def play_match_in_processes(weights_a: str, weights_b: str, out_dir: str, *, jobs: int,
                            progress: bool = True, **options) -> MatchResult:
    """`play_match(weights_a, weights_b, out_dir, **options)` played by `jobs` processes at
    once (the module docstring); with `jobs` 1 it is play_match itself. Raises SelfplayError
    for bad input (a child's first error) or a child that died."""
    if jobs <= 1:
        return play_match(weights_a, weights_b, out_dir, progress=progress, **options)
    from leelaz.backends.device_choice import visible_cuda_devices
    from leelaz.config import EngineConfig
    from leelaz.selfplay.workers import run_children, worker_devices

    cfg = EngineConfig(cpu_only=bool(options.get("cpu_only")),
                       gpus=tuple(options.get("gpus") or ()),
                       network_backend=options.get("network_backend") or "auto")
    devices = worker_devices(cfg, jobs, visible_cuda_devices())
    seen = 0

    def watch():
        nonlocal seen
        if progress:
            seen = _say_progress(out_dir, seen)
    reports = run_children([(_shard, devices[s], weights_a, weights_b, out_dir, s, jobs, options)
                            for s in range(jobs)], watch, POLL_SECONDS,
                           f"a match process died; the games it finished are kept in {out_dir}")
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
