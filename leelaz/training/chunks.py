"""Gzip chunk files of training records: `OUT.0.gz`, `OUT.1.gz`, ... with 32 games each.

Owns: file naming, grouping games into chunks, and writing each file atomically (a temporary
name in the same folder, then os.replace), so a reader never sees half a chunk and a crash
leaves no truncated file behind. Imports: stdlib only.

Leela Zero writes one chunk per 32 games and the last partial chunk at the end; unlike Leela
Zero (which aborts when the last chunk would be empty), an empty last chunk is simply not
written.
"""

from __future__ import annotations

import gzip
from typing import Callable

from leelaz import files

#: Games per chunk file, as in Leela Zero (Training.cpp's chunk size).
GAMES_PER_CHUNK = 32
#: gzip level Leela Zero uses.
GZIP_LEVEL = 9


def chunk_path(prefix: str, number: int) -> str:
    """Name of chunk `number` for the output prefix: `prefix.number.gz`."""
    return f"{prefix}.{number}.gz"


def write_gzip_atomic(path: str, text: str, level: int = GZIP_LEVEL) -> None:
    """Write text gzipped to path, completely or not at all (leelaz.files)."""
    files.write_gzip_atomic(path, text.encode("ascii"), level)


class ChunkWriter:
    """Collects games (each the concatenated text of its records) and writes full chunks.

    add_game() writes `prefix.N.gz` as soon as N's 32nd game arrives; close() writes the last
    partial chunk, if any. `log` gets Leela Zero's `Writing chunk N` line for each file.
    """

    def __init__(self, prefix: str, games_per_chunk: int = GAMES_PER_CHUNK,
                 level: int = GZIP_LEVEL, log: Callable[[str], None] | None = None,
                 first_chunk: int = 0):
        self.prefix = prefix
        self.games_per_chunk = games_per_chunk
        self.level = level
        self.log = log
        self.paths: list[str] = []
        self.games = 0
        self.positions = 0
        self._next = first_chunk
        self._pending: list[str] = []

    def add_game(self, text: str, positions: int = 0) -> None:
        """Queue one game's records; writes a chunk when it is full."""
        self._pending.append(text)
        self.games += 1
        self.positions += positions
        if len(self._pending) >= self.games_per_chunk:
            self._flush()

    def close(self) -> list[str]:
        """Write the last partial chunk (nothing if empty); the paths of all chunks written."""
        if self._pending:
            self._flush()
        return self.paths

    def _flush(self) -> None:
        path = chunk_path(self.prefix, self._next)
        if self.log:
            self.log(f"Writing chunk {self._next}")
        write_gzip_atomic(path, "".join(self._pending), self.level)
        self.paths.append(path)
        self._pending = []
        self._next += 1

    def __enter__(self) -> "ChunkWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()


def read_chunk_text(path: str) -> str:
    """The text of a gzip chunk (for tests and tools)."""
    with gzip.open(path, "rt", encoding="ascii") as f:
        return f.read()
