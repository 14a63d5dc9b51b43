"""Who may write into an output folder, and child processes that do not outlive their parent.

Owns: `FolderLock` (one run per output folder: `selfplay --out`, `dump-supervised -o`) and
`die_with_parent` (called first thing in a worker process). Imports: stdlib only.

The lock is `flock` on the folder itself (no lock file: the folder holds only the games, as
the leftover checks of a rerun expect); the kernel drops it when the holder dies however it
dies, so a SIGKILLed run never blocks the next one. Children forked from the holder share the
lock until they exit, which is right: while a killed run's workers still write, the folder is
not free. Where the filesystem cannot lock (some network filesystems), the run goes on without
one, as before.

A worker must die with its parent: a SIGKILLed `dump-supervised` or `selfplay` cannot tell
its pool or its worker processes to stop, and they would go on writing into a folder that a
rerun already uses. On Linux the kernel sends the worker SIGKILL when its parent goes
(prctl PR_SET_PDEATHSIG); elsewhere the workers poll their parent's pid (selfplay's runner
does at every progress poll).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import signal
import sys

#: prctl option: the signal this process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


class FolderBusy(Exception):
    """Another live run holds the folder (one line for the user)."""


class FolderLock:
    """An exclusive lock on `folder` for the life of this object (or of the process)."""

    def __init__(self, folder: str, verb: str):
        self.folder = folder
        self._fd: int | None = None
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return  # the caller's own checks name what is wrong with the folder
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise FolderBusy(f"another leelaz {verb} is writing into {folder}: wait for it "
                                 "to finish, or give another folder") from None
            return  # a filesystem without locks: no lock, as before
        os.set_inheritable(fd, False)  # spawned processes do not hold it; forked ones do
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux); exit now if the
    parent `parent_pid` is already gone (it may have died before the request was made)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the caller's polling of its parent remains
    if os.getppid() != parent_pid:
        os._exit(1)


def parent_gone(parent_pid: int) -> bool:
    """True once the process that started this one has died (polling, for any platform)."""
    return os.getppid() != parent_pid
