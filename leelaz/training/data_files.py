"""Which files `leelaz train --data` reads, and one line naming the file when one is bad.

Owns: expanding the `--data` / `--val` arguments (files, folders, glob patterns) into the list
of data files, `reading(path)`, which turns any failure to read one data file into a
TrainingError naming it, and `check_pack`, what a game pack must hold. Imports: stdlib,
numpy (lazily), game.sgf (its error type), training.train_config.

The arguments are what a user has after `leelaz selfplay --out DIR` (leelaz/selfplay/store.py):
a folder of `NAME.txt.0.gz` chunks, `NAME.debug.txt.0.gz` resign-analysis files (dump_debug's
layout, not training records) and `NAME.sgf` games, plus hidden temporary and lock files.
- a folder gives its chunks, or, when it holds none, its game packs and SGF collections; a
  folder with neither is an error;
- a glob pattern (the shell's, or one the shell left alone because it was quoted or matched
  nothing) gives the files it matches;
- everywhere, `*.debug.*` files and hidden files are left out, so `--data DIR/*.gz` works.

Why `reading`: a truncated gzip file raises EOFError, which click turns into `Aborted.` and
exit status 130 as if the user had pressed Ctrl-C; corrupt records, bad gzip data and unreadable
files would end in a traceback naming no file. Each becomes one line: the file, then the reason.
"""

from __future__ import annotations

import glob
import lzma
import os
import zlib
from contextlib import contextmanager
from typing import Iterator

from leelaz.training.train_config import TrainingError

#: Name endings of the data files the trainer reads (see training/trainer.py).
CHUNK_SUFFIX = ".gz"
SGF_SUFFIXES = (".sgf", ".sgf.gz")
PACK_SUFFIX = ".npz.xz"


def is_chunk(path: str) -> bool:
    """A Leela Zero chunk file: `*.gz` but not an SGF collection."""
    return path.endswith(CHUNK_SUFFIX) and not path.endswith(".sgf.gz")


def is_debug(path: str) -> bool:
    """Self-play's resign-analysis file (`NAME.debug.txt.0.gz`): not training data."""
    return ".debug." in os.path.basename(path)


def _skipped(path: str) -> bool:
    return is_debug(path) or os.path.basename(path).startswith(".")


def _folder_files(folder: str) -> list[str]:
    """A folder's data files: its chunks, else its packs and SGF collections."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise TrainingError(f"{folder}: cannot read the folder ({exc.strerror or exc})") from None
    paths = [os.path.join(folder, n) for n in names]
    paths = [p for p in paths if not _skipped(p) and os.path.isfile(p)]
    chunks = [p for p in paths if is_chunk(p)]
    if chunks:
        return chunks
    games = [p for p in paths if p.endswith(SGF_SUFFIXES + (PACK_SUFFIX,))]
    if not games:
        raise TrainingError(f"{folder}: no training data in this folder (chunks *.gz, SGF "
                            f"*.sgf / *.sgf.gz or game packs *.npz.xz)")
    return games


def expand_data(args: list[str]) -> list[str]:
    """The data files that files, folders and glob patterns name, in order, each once;
    TrainingError (one line naming the argument) for one that names nothing."""
    out: list[str] = []
    for arg in args:
        if os.path.isdir(arg):
            found = _folder_files(arg)
        elif os.path.exists(arg):
            if not os.path.isfile(arg):
                raise TrainingError(f"{arg}: not a regular file")
            found = [] if _skipped(arg) else [arg]
        elif glob.has_magic(arg):
            matches = sorted(glob.glob(arg))
            if not matches:
                raise TrainingError(f"{arg}: no file matches")
            found = [m for m in matches if os.path.isfile(m) and not _skipped(m)]
        else:
            raise TrainingError(f"{arg}: no such file or folder")
        out += [p for p in found if p not in out]
    if args and not out:
        raise TrainingError(f"{args[0]}: no training data (only self-play .debug files or "
                            "hidden files)")
    return out


def check_pack(pack):
    """The game pack if its arrays agree (moves are policy slots 0..361, the lengths add up
    to the moves, winners are -1, 0 or +1); ValueError saying what is wrong otherwise, since
    a slot out of range would fail deep inside a batch and a wrong winner train the value
    head on nonsense."""
    import numpy as np
    if int(np.sum(pack.lengths, dtype=np.int64)) != len(pack.moves) or \
            (len(pack.lengths) and int(pack.lengths.min()) < 0):
        raise ValueError(f"game lengths add up to {int(np.sum(pack.lengths))}, but the pack "
                         f"holds {len(pack.moves)} moves")
    if len(pack.moves) and int(pack.moves.max()) > 361:
        raise ValueError(f"move {int(pack.moves.max())} is not a policy slot (0..361)")
    if not (len(pack.winner) == len(pack.use_value) == len(pack.lengths)):
        raise ValueError("the pack's per-game arrays differ in length")
    if len(pack.winner) and not np.isin(pack.winner, (-1, 0, 1)).all():
        raise ValueError("a winner is not -1, 0 or +1")
    return pack


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Any failure to read the data file `path` inside the block becomes one TrainingError
    naming it (EOFError included: see the module docstring)."""
    from leelaz.game.sgf import SgfError
    try:
        yield
    except TrainingError as exc:
        raise TrainingError(_named(path, str(exc))) from None
    except EOFError:
        raise TrainingError(f"{path}: the file is truncated (it ends early)") from None
    except OSError as exc:  # gzip.BadGzipFile too
        raise TrainingError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except (SgfError, ValueError, KeyError, IndexError, zlib.error, lzma.LZMAError) as exc:
        raise TrainingError(_named(path, str(exc) or type(exc).__name__)) from None


def _named(path: str, message: str) -> str:
    """The message with the file's name in front, unless it names the file already."""
    return message if path in message else f"{path}: {message}"
