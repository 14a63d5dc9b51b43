"""Writing files completely or not at all. Imports: stdlib only; any module may use it.

A file the user asked for (printsgf FILE, dump_training, a chunk, an exported network, the
tuner's cache) must never be left half written: the data goes to a temporary file in the same
folder, which replaces the target with one rename once it is closed and synced. On any error
the temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def user_data_dir() -> Path:
    """leelaz's folder for caches it keeps between runs (tuning, the backend choice):
    $XDG_DATA_HOME/leelaz, else ~/.local/share/leelaz. Not created here."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return Path(base) / "leelaz"


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, temp: str | None = None,
                **open_kwargs) -> Iterator[IO]:
    """Open a temporary file beside `path`; on a clean exit, rename it over `path`.

    `temp` names the temporary file (in the same folder) for a caller that must recognise
    its own leftovers after a crash (self-play's output folders); it must not exist."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if temp is None:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                                   dir=folder)
    else:
        tmp = os.fspath(temp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a written file should look like any other
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text_atomic(path: str | os.PathLike, text: str, *, temp: str | None = None) -> None:
    """Write text (UTF-8; undecodable input bytes kept as they came) atomically."""
    with atomic_open(path, "w", temp=temp, encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)


def write_gzip_atomic(path: str | os.PathLike, data: bytes, level: int = 9, *,
                      temp: str | None = None) -> None:
    """Write data gzipped atomically. The header has no name and a zero time stamp, so equal
    data gives equal bytes."""
    with atomic_open(path, "wb", temp=temp) as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level,
                           mtime=0) as gz:
            gz.write(data)
