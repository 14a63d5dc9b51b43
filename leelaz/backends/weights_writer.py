"""Writing Leela Zero weights files: the one writer of the package.

Owns: the text form of a network (the version line, then one line of numbers per tensor, in
file order, Network::load_v1_network) and writing it completely or not at all, gzipped when the name
ends in `.gz`. Imports: numpy, leelaz.files.

Both the trainer's export and the seeded random nets of `leelaz weights random` come through
here, so every file we write has the same number format: six significant digits (`%.6g`), like
Leela Zero's own files and well inside float32 inference noise.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from leelaz.files import write_gzip_atomic, write_text_atomic

NUMBER_FORMAT = "%.6g"
#: gzip level 6: within 2% of level 9's size on weights text at a third of the time.
GZIP_LEVEL = 6


def tensor_line(values: np.ndarray) -> str:
    """One line of the file: the values, flattened, separated by single spaces."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    return " ".join(np.char.mod(NUMBER_FORMAT, flat))


def weights_text(tensors: Sequence[np.ndarray], version: int = 1) -> str:
    """The file's text: the version line, then one line of numbers per tensor."""
    lines = [str(version)] + [tensor_line(t) for t in tensors]
    return "\n".join(lines) + "\n"


def write_weights(path: str | os.PathLike, tensors: Sequence[np.ndarray],
                  version: int = 1) -> None:
    """Write `path` (gzip when it ends in .gz) atomically; its folder is created if needed."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    text = weights_text(tensors, version)
    if path.endswith(".gz"):
        write_gzip_atomic(path, text.encode(), level=GZIP_LEVEL)
    else:
        write_text_atomic(path, text)
