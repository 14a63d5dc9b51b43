"""Parsed networks kept between starts, so the engine does not read the text again.

Owns: `load(path) -> NetWeights` with the cache in the user data folder
(~/.local/share/leelaz/networks/<hash>.npz). Imports: backends.weights_text, files, numpy, stdlib.

Why: reading a weights file's text is most of a start (the shipped 6x128 network is 22 MB
of text: half a second; Leela Zero's C++ reader takes a fraction of that). The checked
float32 tensors of a file are stored once, keyed by the SHA-256 of its bytes (an edited or
replaced file is a new key), and read back in milliseconds. The file is still read and
hashed every time, so the name the user gave always means its current content.

The cache never changes what loads: an entry that cannot be read (damaged, truncated, from
another layout) is parsed again and rewritten; one that cannot be written is skipped. It
holds at most MAX_ENTRIES networks and MAX_BYTES in all, the least recently used leaving first.
"""

from __future__ import annotations

import hashlib
import os
import zipfile

import numpy as np

from leelaz.backends.base import NetWeights
from leelaz.backends.weights_text import MAX_TEXT_BYTES, assemble, parse_tensors, read_text
from leelaz.files import atomic_open, open_regular, user_data_dir

#: Bump when the stored layout changes: older entries are then ignored (and age out).
LAYOUT = 1
MAX_ENTRIES = 4
MAX_BYTES = 1 << 30


def cache_dir():
    return user_data_dir() / "networks"


def load(path: str) -> NetWeights:
    raw = _read_raw(path)
    key = hashlib.sha256(raw).hexdigest()[:32]
    entry = cache_dir() / f"{key}.v{LAYOUT}.npz"
    weights = _read_entry(entry, path)
    if weights is not None:
        return weights
    text = raw if raw[:2] != b"\x1f\x8b" else read_text(path)
    version, tensors = parse_tensors(text, path)
    _write_entry(entry, version, tensors)
    return assemble(tensors, version, path)


def _read_raw(path: str) -> bytes:
    """The file's bytes as stored (compressed or not), after read_text's checks on size and
    kind; read_text itself decompresses only when the cache misses."""
    try:
        with open_regular(path) as f:
            if os.fstat(f.fileno()).st_size > MAX_TEXT_BYTES:
                return read_text(path)  # refuses it with the usual message
            return f.read()
    except OSError:
        return read_text(path)  # raises the usual WeightsError


def _read_entry(entry, source: str) -> NetWeights | None:
    try:
        with np.load(entry, allow_pickle=False) as z:
            version = int(z["version"])
            sizes = z["sizes"]
            values = z["values"]
        if values.dtype != np.float32 or int(sizes.sum()) != values.size:
            return None
        tensors = np.split(values, np.cumsum(sizes)[:-1])
        weights = assemble(tensors, version, source)
    except (OSError, ValueError, KeyError, IndexError, EOFError, zipfile.BadZipFile):
        return None
    try:
        os.utime(entry)  # recently used
    except OSError:
        pass
    return weights


def _write_entry(entry, version: int, tensors: list[np.ndarray]) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        sizes = np.array([t.size for t in tensors], dtype=np.int64)
        with atomic_open(entry, "wb") as f:
            np.savez(f, version=np.int64(version), sizes=sizes,
                     values=np.concatenate(tensors).astype(np.float32))
        _evict(entry)
    except OSError:
        pass  # a read-only or full data folder: parse again next time


def _evict(keep) -> None:
    """Drop the least recently used entries beyond MAX_ENTRIES or MAX_BYTES."""
    found = []
    for p in keep.parent.glob("*.npz"):
        try:
            st = p.stat()
        except OSError:
            continue
        found.append((st.st_mtime, st.st_size, p))
    found.sort(reverse=True)
    total = 0
    for i, (_, size, p) in enumerate(found):
        total += size
        if p != keep and (i >= MAX_ENTRIES or total > MAX_BYTES):
            try:
                p.unlink()
            except OSError:
                pass
