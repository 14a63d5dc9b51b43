"""leelaz.files: a file is written completely or not at all."""

from __future__ import annotations

import gzip
import os

import pytest

from leelaz import files
from leelaz.files import (atomic_open, create_text_atomic, write_gzip_atomic,
                          write_text_atomic)


def test_text_replaces_the_file_in_one_step(tmp_path):
    path = tmp_path / "game.sgf"
    path.write_text("old")
    write_text_atomic(path, "(;GM[1])\n")
    assert path.read_text() == "(;GM[1])\n"
    assert os.listdir(tmp_path) == ["game.sgf"]  # no temporary file left behind


def test_create_writes_once_and_never_replaces(tmp_path):
    """Several processes publishing the same file at once: the first wins, the others are
    told (False), nobody fails, and no temporary file stays."""
    path = tmp_path / "match.json"
    assert create_text_atomic(path, "first\n") is True
    assert create_text_atomic(path, "second\n") is False
    assert path.read_text() == "first\n"
    assert os.listdir(tmp_path) == ["match.json"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def test_an_error_while_writing_leaves_the_old_file_and_no_debris(tmp_path):
    path = tmp_path / "chunk.0.gz"
    path.write_bytes(b"complete")
    with pytest.raises(RuntimeError):
        with atomic_open(path, "wb") as f:
            f.write(b"half a rec")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"complete"
    assert os.listdir(tmp_path) == ["chunk.0.gz"]


def test_gzip_is_reproducible_and_readable(tmp_path):
    a, b = tmp_path / "a.gz", tmp_path / "b.gz"
    write_gzip_atomic(a, b"0\n1\n")
    write_gzip_atomic(b, b"0\n1\n")
    assert a.read_bytes() == b.read_bytes()
    assert gzip.decompress(a.read_bytes()) == b"0\n1\n"


def test_a_missing_folder_is_an_error_not_a_partial_file(tmp_path):
    with pytest.raises(OSError):
        write_text_atomic(tmp_path / "no" / "such" / "x.sgf", "x")
    assert not (tmp_path / "no").exists()


# ---- what the user named stays what it was ---------------------------------------------------

def test_a_symlink_is_written_through(tmp_path):
    real = tmp_path / "real.sgf"
    real.write_text("old")
    link = tmp_path / "link.sgf"
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link.sgf", "real.sgf"]


def test_the_mode_of_an_existing_file_is_kept_and_a_new_one_follows_the_umask(tmp_path):
    private = tmp_path / "private.sgf"
    private.write_text("old")
    private.chmod(0o600)
    write_text_atomic(private, "new")
    assert (private.stat().st_mode & 0o777) == 0o600 and private.read_text() == "new"
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "fresh.sgf", "x")
    finally:
        os.umask(old)
    assert ((tmp_path / "fresh.sgf").stat().st_mode & 0o777) == 0o640


def test_hard_links_are_kept(tmp_path):
    a = tmp_path / "a.gz"
    a.write_bytes(b"old data, longer than the new")
    b = tmp_path / "b.gz"
    os.link(a, b)
    write_gzip_atomic(a, b"new")
    assert a.stat().st_ino == b.stat().st_ino and a.stat().st_nlink == 2
    assert gzip.decompress(b.read_bytes()) == b"new"
    assert sorted(os.listdir(tmp_path)) == ["a.gz", "b.gz"]


def test_device_nodes_fifos_and_folders_are_refused(tmp_path):
    from leelaz.files import NotRegularFile

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "null-link"
    link.symlink_to("/dev/null")
    for target in (fifo, "/dev/null", link, tmp_path):
        with pytest.raises(NotRegularFile):
            write_text_atomic(target, "x")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    import stat
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["null-link", "pipe"]


def test_stale_temporaries_are_found_by_pattern(tmp_path):
    from leelaz.files import stale_temporaries

    (tmp_path / ".out.3.gz.k2j4h5.tmp").write_bytes(b"half")
    (tmp_path / ".other.1.gz.aaaa.tmp").write_bytes(b"half")
    (tmp_path / "out.2.gz").write_bytes(b"")
    assert stale_temporaries(tmp_path / "out.*.gz") == [str(tmp_path / ".out.3.gz.k2j4h5.tmp")]


def test_bounded_reading(tmp_path):
    from leelaz.files import FileTooLarge, NotRegularFile, read_bounded

    with pytest.raises(NotRegularFile):
        read_bounded("/dev/zero", 1 << 20)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):  # no writer: opening must not block
        read_bounded(fifo, 1 << 20)
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"(" * (8 << 20)))
    with pytest.raises(FileTooLarge):
        read_bounded(bomb, 1 << 20)
    assert read_bounded(bomb, 9 << 20) == b"(" * (8 << 20)
    big = tmp_path / "big.sgf"
    big.write_bytes(b";" * 5000)
    with pytest.raises(FileTooLarge):
        read_bounded(big, 4096)
    with pytest.raises(ValueError):
        (tmp_path / "cut.gz").write_bytes(gzip.compress(b"abc" * 1000)[:-12])
        read_bounded(tmp_path / "cut.gz", 1 << 20)


def test_a_failed_write_names_the_file(tmp_path, monkeypatch):
    """A full disk fails fsync or write with ENOSPC and no file name: the error carries the
    target's name (what a verb's one line prints), and no temporary file stays."""
    import errno

    import leelaz.files as files

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(files.os, "fsync", full)
    path = tmp_path / "status.png"
    with pytest.raises(OSError) as caught:
        write_gzip_atomic(path, b"data")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    assert os.listdir(tmp_path) == []


def test_every_new_file_follows_the_umask(tmp_path):
    """mkstemp makes 0600; a file we create gets 0666 less the umask, as open() gives."""
    for mask in (0o022, 0o002, 0o077):
        old = os.umask(mask)
        try:
            for i, write in enumerate((write_text_atomic, write_gzip_atomic)):
                path = tmp_path / f"{mask:o}-{i}"
                write(path, "x" if write is write_text_atomic else b"x")
                assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~mask)
            with atomic_open(tmp_path / f"{mask:o}-temp", temp=str(tmp_path / f".t{mask:o}")) as f:
                f.write("x")
            assert oct((tmp_path / f"{mask:o}-temp").stat().st_mode & 0o777) == \
                oct(0o666 & ~mask)
        finally:
            os.umask(old)


@pytest.mark.parametrize("named", [False, True])
def test_ctrl_c_as_the_temporary_file_is_created_leaves_no_debris(tmp_path, monkeypatch, named):
    """CPython checks for a pending signal right after a call returns: a Ctrl-C can land the
    moment the temporary file exists, before anything is written into it (a self-play run
    interrupted so left `.NAME.txt.0.gz.tmp` behind). Simulated by an os.open that creates
    the file and then raises KeyboardInterrupt."""
    real_open = os.open

    def open_then_interrupted(path, *args, **kwargs):
        real_open(path, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "open", open_then_interrupted)
    target = tmp_path / "game.sgf"
    with pytest.raises(KeyboardInterrupt):
        files.write_text_atomic(target, "(;)", temp=str(tmp_path / ".game.sgf.tmp")
                                if named else None)
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(files.os, "open", real_open)
    (tmp_path / ".other.tmp").write_text("someone's")  # an existing name is not ours
    with pytest.raises(FileExistsError):
        files.write_text_atomic(target, "(;)", temp=str(tmp_path / ".other.tmp"))
    assert os.listdir(tmp_path) == [".other.tmp"]
