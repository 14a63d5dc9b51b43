"""Reading and writing the user's files safely. Imports: stdlib only; any module may use it.

Writing: a file the user asked for (printsgf FILE, dump_training, a chunk, an exported
network, the caches) must never be left half written: the data goes to a temporary file in
the same folder as the file itself, which replaces it with one rename once it is closed and
synced. On any error the temporary file is removed and the target is left as it was. The
replacement must not change what the user named, though:
- a symbolic link is written through (its target is replaced, the link stays);
- an existing file keeps its permission bits (and owner, where we may set it); a new file
  gets the usual 0666 less the umask, as open() would give it;
- a file with several hard links is rewritten in place from the finished temporary file
  (a rename would split it from its other names); only this case is not atomic;
- a device node, FIFO, socket or folder is refused (`NotRegularFile`): renaming over it
  would replace the node itself (as root, `printsgf /dev/stdout` would replace the system's).
An OSError of a write (a full disk says ENOSPC, naming no file) carries the target's name, so
the one line a verb prints for it says which file could not be written.

Reading: `open_regular` opens without blocking on a FIFO and refuses anything but a regular
file; `read_bounded` also refuses more than a given size and stops gzip data that inflates
past it, so /dev/zero, a FIFO or a small gzip bomb costs an error, not the machine.
"""

from __future__ import annotations

import errno
import gzip
import os
import secrets
import stat
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

#: Prefix and suffix of the temporary files atomic_open makes beside the target
#: (`.NAME.XXXXXXXX.tmp`); a process killed while writing leaves one (see stale_temporaries).
TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"
GZIP_MAGIC = b"\x1f\x8b"


class NotRegularFile(OSError):
    """The path names a device node, FIFO, socket or folder where a regular file is needed."""

    def __init__(self, path: str, action: str = "use"):
        super().__init__(errno.EINVAL, f"not a regular file (cannot {action} it safely)", path)


class FileTooLarge(OSError):
    """More data than the caller's bound (the file, or what its gzip data inflates to)."""

    def __init__(self, path: str, limit: int):
        super().__init__(errno.EFBIG, f"larger than {limit >> 20} MiB", path)


def user_data_dir() -> Path:
    """leelaz's folder for caches it keeps between runs (tuning, the backend choice):
    $XDG_DATA_HOME/leelaz, else ~/.local/share/leelaz. Not created here."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return Path(base) / "leelaz"


# ---- writing ---------------------------------------------------------------------------------

def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, temp: str | None = None,
                **open_kwargs) -> Iterator[IO]:
    """Open a temporary file beside what `path` names; on a clean exit, it replaces it (see
    the module docstring for links, modes and the files refused).

    `temp` names the temporary file (in the same folder) for a caller that must recognise
    its own leftovers after a crash (self-play's output folders); it must not exist."""
    target = os.path.realpath(os.fspath(path))  # through symbolic links
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(os.fspath(path), "replace")
    folder = os.path.dirname(target)
    # The temporary file is named before it is created, and created inside the try: a Ctrl-C
    # delivered as its creation returns (CPython checks for signals right after a call)
    # removes it too. A name that exists already is not ours (O_EXCL): left alone.
    tmp, owned = None, True
    try:
        while True:
            tmp = os.fspath(temp) if temp is not None else os.path.join(
                folder, f"{TEMP_PREFIX}{os.path.basename(target)}.{secrets.token_hex(4)}"
                        f"{TEMP_SUFFIX}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:
                if temp is not None:  # a given name: someone else's file
                    owned = False
                    raise
                tmp = None  # a random name taken: not ours either; draw another
            except OSError:
                owned = False
                raise
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if st is None:
            os.chmod(tmp, 0o666 & ~_umask())  # created 0600
        else:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not ours to give away: the file becomes ours, with its mode
        if st is not None and st.st_nlink > 1:
            _copy_into(tmp, target)
            os.unlink(tmp)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None and owned:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = os.fspath(path)  # a failed write() names no file: say which
        raise


def _copy_into(source: str, target: str) -> None:
    """Rewrite target's content in place from the finished source (keeps its hard links)."""
    with open(source, "rb") as src, open(target, "r+b") as dst:
        while True:
            block = src.read(1 << 20)
            if not block:
                break
            dst.write(block)
        dst.truncate()
        dst.flush()
        os.fsync(dst.fileno())


def write_text_atomic(path: str | os.PathLike, text: str, *, temp: str | None = None) -> None:
    """Write text (UTF-8; undecodable input bytes kept as they came) atomically."""
    with atomic_open(path, "w", temp=temp, encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)


def create_text_atomic(path: str | os.PathLike, text: str) -> bool:
    """Write `path` whole (UTF-8) if it does not exist yet; False, leaving it alone, if it
    does. For a file several processes may publish at the same moment (a match's
    identity): exactly one of them creates it, by a hard link of a finished temporary file,
    and none ever reads it half written. Where the filesystem has no hard links, the
    temporary file is renamed into place (the last writer wins)."""
    target = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX + os.path.basename(target) + ".",
                               suffix=TEMP_SUFFIX, dir=os.path.dirname(target) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        except OSError:  # no hard links here
            if os.path.exists(target):
                return False
            os.replace(tmp, target)
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def write_gzip_atomic(path: str | os.PathLike, data: bytes, level: int = 9, *,
                      temp: str | None = None) -> None:
    """Write data gzipped atomically. The header has no name and a zero time stamp, so equal
    data gives equal bytes."""
    with atomic_open(path, "wb", temp=temp) as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level,
                           mtime=0) as gz:
            gz.write(data)


def stale_temporaries(target: str | os.PathLike) -> list[str]:
    """Temporary files atomic_open left beside files named like `target` (a glob pattern
    such as `OUT.*.gz`) when its process was killed mid-write."""
    import fnmatch

    target = os.path.realpath(os.fspath(target))
    folder, pattern = os.path.dirname(target), os.path.basename(target)
    temp_pattern = TEMP_PREFIX + pattern + ".*" + TEMP_SUFFIX
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if fnmatch.fnmatchcase(n, temp_pattern))


# ---- reading ---------------------------------------------------------------------------------

def open_regular(path: str | os.PathLike) -> IO[bytes]:
    """Open a regular file for reading in binary; NotRegularFile for anything else (a FIFO
    is opened without blocking, so one with no writer does not hang us)."""
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(os.fspath(path), "read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | os.PathLike, limit: int, gunzip: bool = True) -> bytes:
    """A regular file's bytes, at most `limit` of them; with gunzip, data that starts with
    gzip's magic bytes is decompressed (every member), also bounded by `limit`. Raises
    OSError (NotRegularFile, FileTooLarge) or ValueError for corrupt gzip data."""
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > limit and not gunzip:
            raise FileTooLarge(os.fspath(path), limit)
        head = f.read(2)
        if gunzip and head == GZIP_MAGIC:
            f.seek(0)
            return gunzip_bounded(f, limit, os.fspath(path))
        if os.fstat(f.fileno()).st_size > limit:
            raise FileTooLarge(os.fspath(path), limit)
        data = head + f.read(limit + 1 - len(head))
        if len(data) > limit:  # it grew while we read
            raise FileTooLarge(os.fspath(path), limit)
        return data


def gunzip_bounded(f: IO[bytes], limit: int, name: str = "<gzip>", check_head=None,
                   head_bytes: int = 1 << 16) -> bytes:
    """Decompress the gzip members read from f, stopping as soon as the output passes
    `limit` (FileTooLarge). ValueError for corrupt or truncated data. check_head(first
    bytes), if given, is called once `head_bytes` are out (or at the end), so a caller can
    refuse a wrong file before inflating all of it."""
    parts: list[bytes] = []
    total, checked = 0, check_head is None
    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = b""
    try:
        while True:
            if not pending:
                pending = f.read(1 << 20)
                if not pending:
                    break
            out = decomp.decompress(pending, 1 << 22)
            pending = decomp.unconsumed_tail
            total += len(out)
            if total > limit:
                raise FileTooLarge(name, limit)
            parts.append(out)
            if not checked and total >= head_bytes:
                check_head(b"".join(parts)[:head_bytes])
                checked = True
            if decomp.eof:
                pending = decomp.unused_data + pending
                if not pending.strip(b"\0"):
                    pending = f.read(1 << 20)
                    if not pending.strip(b"\0"):
                        break
                decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)  # another member
    except zlib.error as e:
        raise ValueError(f"{name}: corrupt gzip data ({e})") from None
    if not decomp.eof:
        raise ValueError(f"{name}: truncated gzip data (no end-of-stream marker)")
    data = b"".join(parts)
    if not checked:
        check_head(data[:head_bytes])
    return data
