"""Runs the loop's jobs in local child processes: the executor used without --ray.

Each job gets a fresh process (spawned, not forked: the parent may hold OpenCL contexts, torch
or threads that must not be copied), so a network, an OpenCL context or CUDA memory is released
when the job ends, and up to `workers` self-play jobs run at once. A child asks the kernel to
kill it when the loop dies (PR_SET_PDEATHSIG): after `kill -9` of the loop no orphan keeps
writing into the run folder while a rerun starts.

A child that dies without answering (killed, out of memory) is started again up to
MAX_RETRIES times; the job resumes from its files, so only the games in flight are lost. A job
that raises a Python exception is not retried (it would fail the same way): JobFailed.

On a machine of several GPUs the self-play and match jobs are dealt round robin over them
(`job_devices`, self-play's own rule).

Imports: leelaz.zero.jobs (the jobs, JobFailed), leelaz.selfplay.lifetime (a child that dies
with its parent, as self-play's workers do), leelaz.selfplay.workers and
leelaz.backends.device_choice (which device a job gets); pyopencl (only to look for a GPU);
stdlib.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from typing import Callable

from leelaz.selfplay.lifetime import die_with_parent
from leelaz.zero.jobs import JOBS, JobFailed

MAX_RETRIES = 3
#: How often the parent looks at its children and updates the progress bar (seconds).
POLL_SECONDS = 0.5


def _child(name: str, spec: dict, conn, parent: int, device=(None, None)) -> None:
    from leelaz.selfplay.workers import enter_device
    die_with_parent(parent)  # exits at once if the loop died while this process was starting
    gpus = enter_device(device)
    if gpus is not None:
        spec = {**spec, "gpus": list(gpus)}
    try:
        result = JOBS[name](spec)
    except BaseException as exc:  # report it to the parent, which decides
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        conn.send(("error", last, traceback.format_exc()))
    else:
        conn.send(("ok", result, ""))
    conn.close()


def job_devices(name: str, specs: list[dict]) -> list[tuple]:
    """The device of each self-play or match job on a machine of several GPUs: the jobs
    dealt round robin over them as self-play's workers are (selfplay/workers.py
    `worker_devices`); the trainer and everything else keep the default device."""
    if name not in ("selfplay", "match") or not specs:
        return [(None, None)] * len(specs)
    from leelaz.backends.device_choice import visible_cuda_devices
    from leelaz.config import EngineConfig
    from leelaz.selfplay.workers import worker_devices

    first = specs[0]
    cfg = EngineConfig(cpu_only=bool(first.get("cpu_only")),
                       gpus=tuple(first.get("gpus") or ()),
                       network_backend=first.get("network_backend") or "auto")
    return worker_devices(cfg, len(specs), visible_cuda_devices())


class LocalExecutor:
    """Jobs in local processes, `workers` at a time."""

    name = "local"

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)
        self._ctx = multiprocessing.get_context("spawn")

    def describe(self) -> str:
        return f"local processes ({self.workers} self-play worker(s))"

    def has_gpu(self) -> bool | None:
        return None  # unknown here: the caller probes the local machine

    def run(self, name: str, specs: list[dict], tick: Callable[[], None] = lambda: None,
            at_once: int | None = None) -> list[dict]:
        """Run every spec of job `name`; results in spec order. JobFailed if one fails."""
        at_once = max(1, at_once or self.workers)
        devices = job_devices(name, specs)
        results: list[dict | None] = [None] * len(specs)
        queue = list(range(len(specs)))
        retries = [0] * len(specs)
        running: dict[int, tuple] = {}
        try:
            while queue or running:
                while queue and len(running) < at_once:
                    i = queue.pop(0)
                    running[i] = self._start(name, specs[i], devices[i])
                time.sleep(POLL_SECONDS)
                tick()
                for i in list(running):
                    outcome = self._outcome(*running[i])
                    if outcome is None:
                        continue
                    del running[i]
                    status, value, detail = outcome
                    if status == "ok":
                        results[i] = value
                    elif status == "error":
                        raise JobFailed(f"{name} job {i} failed: {value}\n{detail}")
                    else:  # died without answering
                        retries[i] += 1
                        if retries[i] > MAX_RETRIES:
                            raise JobFailed(f"{name} job {i}: its process died {retries[i]} "
                                            f"times ({value}); giving up")
                        queue.insert(0, i)
            tick()
        finally:
            for proc, conn in running.values():
                proc.kill()
                proc.join()
        return results  # type: ignore[return-value]

    def train(self, spec: dict) -> dict:
        """The trainer, in its own process like any job."""
        return self.run("train", [spec], at_once=1)[0]

    def close(self) -> None:
        pass

    def _start(self, name: str, spec: dict, device=(None, None)) -> tuple:
        parent, child = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=_child, args=(name, spec, child, os.getpid(), device),
                                 daemon=False)
        proc.start()
        child.close()
        return proc, parent

    @staticmethod
    def _outcome(proc, conn) -> tuple | None:
        """(status, value, detail) once the child has ended; None while it runs."""
        if conn.poll():
            try:
                answer = conn.recv()
            except (EOFError, OSError):
                answer = None
            if answer is not None:
                proc.join()
                return answer
        if proc.is_alive():
            return None
        proc.join()
        if conn.poll():  # the answer arrived between the two looks
            try:
                return conn.recv()
            except (EOFError, OSError):
                pass
        return ("died", f"exit code {proc.exitcode}", "")


def local_gpu_present() -> bool:
    """Whether this machine has an OpenCL GPU (what self-play would run on without
    --cpu-only); sizes the defaults. False when pyopencl or its platforms are missing."""
    try:
        import pyopencl as cl

        return any(d.type & cl.device_type.GPU
                   for p in cl.get_platforms() for d in p.get_devices())
    except Exception:  # no ICD, no platform, a broken driver: no GPU to size for
        return False
