"""Ends the Ray processes a `leelaz zero --ray` driver started, once the driver is gone.

Run as a script (`python ray_reaper.py`, importing nothing of leelaz), started by the driver
right after ray.init with a pipe on its stdin. Ray's own fate sharing ends the raylet and the
GCS with a killed driver, but the dashboard and runtime-env agents (children of the raylet,
renamed `ray::DashboardAgent`, `ray::RuntimeEnvAgent`) outlived a SIGKILLed driver by over a
minute, and a worker may outlive it mid-task. So this process, while the driver lives, notes
every descendant of the driver once a second (process id and start time, so a reused id is
never taken for one of them); when its stdin reaches end-of-file (the driver exited, however),
it sends SIGTERM to those still alive, and SIGKILL to any left after GRACE_SECONDS.

It touches only the driver's descendants that it saw, never processes found by name.
Imports: stdlib only.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

GRACE_SECONDS = 3.0
POLL_SECONDS = 1.0


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent id, start time) of a live process; None if it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if fields[0] == b"Z":
        return None
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """{pid: start time} of every live descendant of `root`."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                children.setdefault(found[0], []).append(int(name))
                starts[int(name)] = found[1]
    out, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out[child] = starts[child]
                todo.append(child)
    return out


def alive(seen: dict[int, int]) -> list[int]:
    return [pid for pid, start in seen.items() if (_stat(pid) or (0, None))[1] == start]


def main(driver: int) -> None:
    me = os.getpid()
    seen: dict[int, int] = {}
    while True:
        for pid, start in descendants(driver).items():
            if pid != me:
                seen[pid] = start
        ready, _, _ = select.select([sys.stdin.buffer], [], [], POLL_SECONDS)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # end-of-file: the driver is gone
    for pid in alive(seen):  # those started since the last look, under ones seen
        seen.update((k, v) for k, v in descendants(pid).items() if k != me)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive(seen):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE_SECONDS
        while alive(seen) and time.monotonic() < deadline:
            time.sleep(0.1)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is the driver's
    main(int(sys.argv[1]))
