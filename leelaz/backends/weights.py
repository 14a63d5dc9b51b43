"""Loading a Leela Zero weights file: `load_weights(path) -> NetWeights`, the one entry point.

Owns: `load_weights`. Imports: backends.weights_text (the file's text, read, checked and
parsed) and backends.weights_cache (the parsed networks kept between starts), and gives their
public names under this module's name too (`WeightsError`, `read_text`, `parse_weights`, ...),
where the rest of leelaz has always imported them.
"""

from __future__ import annotations

import os

from leelaz.backends import weights_cache
from leelaz.backends.base import NetWeights
from leelaz.backends.weights_text import (GZIP_MAGIC, HEAD_BYTES,  # noqa: F401
                                          MAX_TEXT_BYTES, WeightsError, assemble,
                                          parse_tensors, parse_weights, read_text,
                                          weights_summary)


def load_weights(path: str | os.PathLike, cache: bool = False) -> NetWeights:
    """Load a version 1 or 2 Leela Zero weights file (plain text or gzip).

    With cache, the parsed tensors are kept in the user data folder (weights_cache), keyed by
    the file's hash: the engine's later starts skip the text parsing."""
    path = os.fspath(path)
    if cache:
        return weights_cache.load(path)
    return parse_weights(read_text(path), path)
