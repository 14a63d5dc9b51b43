"""The output folder of a self-play run or a match: names, atomic commits, resume.

Owns: `GameStore`. Imports: stdlib, training.chunks (the gzip writer and chunk naming).

A game is named `<index:06d>-<token>`: `index` counts the run's games (a resumed run goes on
after the highest index in the folder), `token` is random per process, so runs writing into
the same folder at the same time never collide. Its files appear in this order, each written
to a hidden temporary name and renamed into place:

    NAME.txt.0.gz        the training chunk (dump_training's file for that game)
    NAME.debug.txt.0.gz  dump_debug's file (the resign analysis reads it)
    NAME.sgf             the game; written LAST: a game exists iff its SGF exists

A killed run leaves at most hidden temporary files and the first files of one commit; both
belong to its token, whose `.<token>.pid` file names the process and its host. Opening a store
removes such leftovers of every token whose process is gone (never those of a live run), so a
rerun finds only whole games and counts only those. A process of another host (a folder shared
by a Ray cluster's nodes, where the shards of one match write together) cannot be looked at
from here and counts as live: its leftovers wait for the Zero loop, which clears temporary
files under its run lock.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket

from leelaz.training.chunks import GZIP_LEVEL
from leelaz import files

_NAME = re.compile(r"^(\d{6,})-([0-9a-f]{8})\.")
_TEMP = re.compile(r"^\.(\d{6,})-([0-9a-f]{8})\..*\.tmp$")
_PID = re.compile(r"^\.([0-9a-f]{8})\.pid$")


class StoreError(Exception):
    """The output folder cannot be used (one line for the user)."""


class GameStore:
    """One process's view of an output folder."""

    def __init__(self, folder: str, first_index: int | None = None, stride: int = 1):
        self.folder = os.path.abspath(folder)
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create output folder {folder}: "
                             f"{exc.strerror or exc}") from None
        if not os.access(self.folder, os.W_OK | os.X_OK):
            raise StoreError(f"output folder {folder} is not writable")
        self.token = secrets.token_hex(4)
        self._pid_file = os.path.join(self.folder, f".{self.token}.pid")
        try:
            # whole or absent: a half-written one would read as a dead process to a store
            # opened at the same moment (the shards of a match start together)
            files.write_text_atomic(self._pid_file, f"{os.getpid()} {socket.gethostname()}\n")
        except OSError as exc:
            raise StoreError(f"cannot write in output folder {folder}: "
                             f"{exc.strerror or exc}") from None
        self.remove_leftovers()
        self._next = self.highest_index() + 1 if first_index is None else first_index
        self._stride = max(1, stride)  # worker processes of one run take every stride-th index

    # ---- what is there ------------------------------------------------------------------
    def finished(self) -> list[str]:
        """The SGF paths of the finished games, by index."""
        return self.finished_in(self.folder)

    @staticmethod
    def finished_in(folder: str) -> list[str]:
        names = [n for n in os.listdir(folder) if n.endswith(".sgf") and _NAME.match(n)]
        return [os.path.join(folder, n) for n in sorted(names)]

    def highest_index(self) -> int:
        best = -1
        for name in os.listdir(self.folder):
            m = _NAME.match(name)
            if m:
                best = max(best, int(m.group(1)))
        return best

    def next_index(self) -> int:
        index = self._next
        self._next += self._stride
        return index

    def game_name(self, index: int) -> str:
        return f"{index:06d}-{self.token}"

    # ---- commits --------------------------------------------------------------------------
    def commit(self, index: int, *, sgf: str, chunk: str = "", debug: str = "") -> str:
        """Write one game's files, SGF last; on failure remove what this commit wrote.
        Returns the SGF path. OSError propagates (disk full: the caller stops)."""
        base = os.path.join(self.folder, self.game_name(index))
        written = []
        try:
            if chunk:
                self._write_gzip(base + ".txt.0.gz", chunk)
                written.append(base + ".txt.0.gz")
            if debug:
                self._write_gzip(base + ".debug.txt.0.gz", debug)
                written.append(base + ".debug.txt.0.gz")
            files.write_text_atomic(base + ".sgf", sgf, temp=self._temp_name(base + ".sgf"))
        except BaseException:
            for path in written:
                _remove(path)
            raise
        return base + ".sgf"

    def _temp_name(self, path: str) -> str:
        folder, name = os.path.split(path)
        return os.path.join(folder, f".{name}.tmp")

    def _write_gzip(self, path: str, text: str) -> None:
        files.write_gzip_atomic(path, text.encode("ascii"), GZIP_LEVEL,
                                temp=self._temp_name(path))

    # ---- leftovers --------------------------------------------------------------------------
    def remove_leftovers(self) -> int:
        """Remove temporary files and unfinished commits of runs that are gone; their count."""
        names = os.listdir(self.folder)
        live = {self.token}
        for name in names:
            m = _PID.match(name)
            if m and m.group(1) != self.token:
                if _alive(os.path.join(self.folder, name)):
                    live.add(m.group(1))
                else:
                    _remove(os.path.join(self.folder, name))
        sgfs = {name[:-4] for name in names if name.endswith(".sgf")}
        removed = 0
        for name in names:
            m = _TEMP.match(name) or _NAME.match(name)
            if m is None or m.group(2) in live:
                continue
            stem = name.split(".")[0] if not name.startswith(".") else None
            if name.startswith(".") or (stem not in sgfs):
                _remove(os.path.join(self.folder, name))
                removed += 1
        return removed

    def close(self) -> None:
        _remove(self._pid_file)


def _alive(pid_file: str) -> bool:
    try:
        with open(pid_file) as f:
            pid_text, _, host = f.read().strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    if host and host != socket.gethostname():
        return True  # another machine's process: not ours to judge
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
