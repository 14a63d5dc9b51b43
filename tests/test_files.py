"""leelaz.files: a file is written completely or not at all."""

from __future__ import annotations

import gzip
import os

import pytest

from leelaz.files import atomic_open, write_gzip_atomic, write_text_atomic


def test_text_replaces_the_file_in_one_step(tmp_path):
    path = tmp_path / "game.sgf"
    path.write_text("old")
    write_text_atomic(path, "(;GM[1])\n")
    assert path.read_text() == "(;GM[1])\n"
    assert os.listdir(tmp_path) == ["game.sgf"]  # no temporary file left behind


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
