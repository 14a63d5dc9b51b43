"""Runs the loop's jobs on Ray: self-play and matches as tasks, the trainer as one actor.

`--ray auto` joins the Ray cluster started on this machine (`ray start --head`) if there is
one, else starts a private one for the life of the loop; `--ray HOST:PORT` joins that cluster.
Ray is the distributed engine (an optional extra): nothing here is a server of our own.

Each self-play job is one task that plays its share of games, many at once with batched
leaves, with a GPU share (1/workers of the cluster's GPUs, so K workers time-share one card)
when the cluster has GPUs. A task whose worker process or node dies is retried by Ray
(max_retries): the retry resumes the same job folder, so the games it had finished stay and
only the games in flight are lost. A gating match goes out the same way, one task per worker
(its shards, playing into one folder): a retried shard plays only its games that have no SGF
yet. Application errors are not retried: JobFailed.

The files are the results: workers write into the run folder (by atomic renames), which must
therefore be on a filesystem every node sees; a job on a node without it fails with one clear
line (jobs.SharedFolderMissing).

Security of a private cluster (`--ray auto` where none runs): Ray 2.60's GCS and raylet
listen on every interface and have no option to bind to the loopback only (`ray.init`'s
`_node_ip_address="127.0.0.1"` is rewritten to the machine's address by Ray's
`resolve_ip_for_localhost`), so what keeps others out is Ray's token authentication: added in
Ray 2.52 behind RAY_AUTH_MODE=token, and on by default for a cluster that `ray.init()` starts
since Ray 2.59 (its token in ~/.ray/auth_token), hence the minimum version. The dashboard (an
HTTP server that runs jobs) is not started. A cluster the user names or started is theirs to
secure. The private cluster's processes end with the driver: ray_reaper.py ends those that
Ray's fate sharing leaves behind.

Imports: ray (optional), leelaz.zero.jobs, leelaz.zero.rundir (RunError); stdlib.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Callable

from leelaz.zero.jobs import JOBS, JobFailed, TrainerActor
from leelaz.zero.rundir import RunError

INSTALL_HINT = "pip install 'leelaz[zero]'"
#: The first Ray whose private cluster has token authentication on by default (pyproject's
#: `zero` extra asks for it too).
MIN_RAY = (2, 59)
#: How many times Ray reruns a task or restarts the trainer whose process or node died.
MAX_RETRIES = 3
POLL_SECONDS = 1.0
CONNECT_SECONDS = 5.0


def import_ray():
    """The ray module, or RunError saying what to install."""
    try:
        import ray
    except ImportError:
        raise RunError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    version = str(getattr(ray, "__version__", "0"))
    numbers = tuple(int(part) if part.isdigit() else 0 for part in version.split(".")[:2])
    if numbers < MIN_RAY:
        raise RunError(f"--ray needs Ray {'.'.join(map(str, MIN_RAY))} or newer (token "
                       f"authentication), not {version}: pip install -U 'leelaz[zero]'")
    return ray


def _running_cluster(ray) -> bool:
    """Whether `ray.init()` would join a cluster (RAY_ADDRESS, or one `ray start` began on
    this machine) rather than start a private one."""
    if os.environ.get("RAY_ADDRESS"):
        return True
    try:
        from ray._private.services import canonicalize_bootstrap_address

        return canonicalize_bootstrap_address(None) is not None  # as ray.init() decides
    except Exception:  # a private API: if it changed or found nothing usable, start our own
        return False


def start_reaper() -> subprocess.Popen | None:
    """ray_reaper.py watching this process (None where /proc is missing: not Linux)."""
    if not os.path.isdir("/proc/self"):
        return None
    return subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                                          "ray_reaper.py"), str(os.getpid())],
                            stdin=subprocess.PIPE, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _check_reachable(address: str) -> None:
    """Fail fast (one line) when nothing listens at HOST:PORT; ray.init would retry long."""
    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise RunError(f"--ray {address}: give 'auto' or the cluster's HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise RunError(f"cannot reach the Ray cluster at {address}: "
                       f"{exc.strerror or exc}") from None


class RayExecutor:
    """Jobs as Ray tasks; `workers` self-play tasks at once."""

    name = "ray"

    def __init__(self, address: str, workers: int = 1, worker_cpus: float = 1.0):
        self.ray = import_ray()
        self.workers = max(1, workers)
        self.worker_cpus = worker_cpus
        if address != "auto":
            _check_reachable(address)
        kwargs = dict(include_dashboard=False, log_to_driver=False,
                      runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
        self._reaper = None
        try:
            if address == "auto":
                if not _running_cluster(self.ray):  # a private cluster: it ends with us
                    self._reaper = start_reaper()
                self.ray.init(**kwargs)
            else:
                self.ray.init(address=address, **kwargs)
        except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError...
            self._end_reaper()
            raise RunError(f"cannot start or join Ray ({address}): "
                           f"{' '.join(str(exc).split())[:300]}") from None
        self.gpus = float(self.ray.cluster_resources().get("GPU", 0.0))
        self.cpus = float(self.ray.cluster_resources().get("CPU", 0.0))

    def describe(self) -> str:
        return (f"Ray ({self.workers} self-play worker(s); cluster: {self.cpus:g} CPUs, "
                f"{self.gpus:g} GPUs)")

    def has_gpu(self) -> bool | None:
        return self.gpus > 0

    def _gpu_share(self, at_once: int) -> float:
        if self.gpus <= 0:
            return 0.0
        return min(1.0, self.gpus / at_once)

    def run(self, name: str, specs: list[dict], tick: Callable[[], None] = lambda: None,
            at_once: int | None = None) -> list[dict]:
        """Run every spec as a task; results in spec order. JobFailed if one fails."""
        ray = self.ray
        at_once = max(1, at_once or self.workers)
        task = ray.remote(JOBS[name]).options(
            num_cpus=self.worker_cpus, num_gpus=self._gpu_share(at_once),
            max_retries=MAX_RETRIES, retry_exceptions=False, name=f"leelaz-{name}")
        index = {task.remote(spec): i for i, spec in enumerate(specs)}
        results: list[dict | None] = [None] * len(specs)
        pending = list(index)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_SECONDS)
            tick()
            for ref in ready:
                results[index[ref]] = self._get(ref, f"{name} job {index[ref]}", pending)
        tick()
        return results  # type: ignore[return-value]

    def train(self, spec: dict) -> dict:
        """The trainer as one actor (a whole GPU when the cluster has one), restarted by Ray
        if its process dies; a restart resumes from the checkpoint."""
        ray = self.ray
        actor_class = ray.remote(TrainerActor).options(
            num_cpus=self.worker_cpus, num_gpus=1.0 if self.gpus >= 1 else 0.0,
            max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES)
        actor = actor_class.remote()
        try:
            ref = actor.train.remote(spec)
            while True:
                ready, _ = ray.wait([ref], timeout=POLL_SECONDS)
                if ready:
                    return self._get(ref, "train job", [])
        finally:
            ray.kill(actor)

    def _get(self, ref, what: str, pending: list) -> dict:
        ray = self.ray
        try:
            return ray.get(ref)
        except Exception as exc:
            for other in pending:
                ray.cancel(other, force=True)
            cause = getattr(exc, "cause", None) or exc
            text = " ".join(str(cause).split())
            raise JobFailed(f"{what} failed on Ray: {type(cause).__name__}: {text[:500]}") \
                from None

    def close(self) -> None:
        try:
            self.ray.shutdown()
        except Exception:
            pass
        self._end_reaper()

    def _end_reaper(self) -> None:
        """Close its pipe: it ends what ray.shutdown left, then exits."""
        if self._reaper is not None:
            self._reaper.stdin.close()
            try:
                self._reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self._reaper = None
