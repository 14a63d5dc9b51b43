"""An independent reader of Leela Zero's text training chunks, after training/tf/chunkparser.py.

It shares no code with leelaz.training (no NumPy either), so a bug in our writer cannot hide
behind the same bug in the reader. It is strict: every line must match the layout exactly.

    records = parse_chunk("out.0.gz")       # list of Record
    blocks = record_blocks(text)            # list of 19-line tuples, for multiset comparisons
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass

LINES_PER_RECORD = 19
POINTS = 361
SLOTS = 362

_PLANE = re.compile(r"[0-9a-f]{90}[01]")
# What C's %g prints for a finite non-negative number: digits with an optional fraction and no
# trailing zeros after the point, or a mantissa with an exponent of at least two digits.
_NUMBER = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]*[1-9])?(e[+-][0-9]{2,3})?")


@dataclass
class Record:
    planes: list[list[int]]  # 16 planes of 361 bits
    white_to_move: bool
    probabilities: list[float]  # 362, pass last
    probability_text: list[str]  # the same, as written
    winner_is_to_move: bool


def read_text(path: str) -> str:
    with gzip.open(path, "rb") as f:
        data = f.read()
    return data.decode("ascii")


def record_blocks(text: str) -> list[tuple[str, ...]]:
    """The records of a chunk as 19-line tuples; the text must end in a newline."""
    if text == "":
        return []
    assert text.endswith("\n"), "chunk text must end with a newline"
    lines = text[:-1].split("\n")
    assert len(lines) % LINES_PER_RECORD == 0, f"{len(lines)} lines is not a multiple of 19"
    return [tuple(lines[i:i + LINES_PER_RECORD]) for i in range(0, len(lines), LINES_PER_RECORD)]


def decode_plane(line: str) -> list[int]:
    assert _PLANE.fullmatch(line), f"bad plane line {line!r}"
    bits = []
    for digit in line[:90]:
        value = int(digit, 16)
        bits += [(value >> 3) & 1, (value >> 2) & 1, (value >> 1) & 1, value & 1]
    bits.append(int(line[90]))
    assert len(bits) == POINTS
    return bits


def decode(block: tuple[str, ...]) -> Record:
    """One 19-line record, checked line by line."""
    assert len(block) == LINES_PER_RECORD
    planes = [decode_plane(line) for line in block[:16]]
    assert block[16] in ("0", "1"), f"bad side to move {block[16]!r}"
    words = block[17].split(" ")
    assert len(words) == SLOTS, f"{len(words)} probabilities"
    for w in words:
        assert _NUMBER.fullmatch(w), f"bad probability {w!r}"
        assert len(w.split("e")[0].replace(".", "").lstrip("0")) <= 6, f"more than 6 digits: {w}"
    assert block[18] in ("1", "-1"), f"bad outcome {block[18]!r}"
    return Record(planes, block[16] == "1", [float(w) for w in words], words, block[18] == "1")


def parse_text(text: str) -> list[Record]:
    return [decode(b) for b in record_blocks(text)]


def parse_chunk(path: str) -> list[Record]:
    return parse_text(read_text(path))
