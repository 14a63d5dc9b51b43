"""Leela Zero's 19-line text training record ("v1" in LZ's training scripts): writer and reader.

Owns: the record layout of src/Training.cpp and nothing else (no files, no games).
Imports: numpy, game.coords.

One record is one position, 19 lines, each ending in a newline:

    lines 1-16  planes 0..15 of the input features (gather_features), one line each: the 361 bits
                b[0..360] (b[i] = intersection i = y*19 + x). The first 360 bits are written
                as 90 lower-case hex digits, 4 bits per digit, the first bit the most
                significant; then one character, `0` or `1`, for b[360]. 91 characters.
    line 17     `0` if Black is to move, `1` if White.
    line 18     362 probabilities (pass last), separated by single spaces, no trailing space,
                each as C++ `ostream << float` writes it: `%g` with 6 significant digits of the
                float32 value (`0`, `1`, `0.0625`, `6.25e-05`).
    line 19     `1` if the side to move won, `-1` if it lost.

Planes 16 and 17 (the side-to-move planes) are not written; line 17 carries the same fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, POTENTIAL_MOVES, WHITE

#: Planes written per record (the 8 history pairs; the side-to-move planes are implied).
RECORD_PLANES = 16
#: Lines per record.
RECORD_LINES = 19
#: Characters in one plane line: 90 hex digits plus the bit of the last intersection.
PLANE_CHARS = 91


@dataclass
class TrainingRecord:
    """One position: what the network saw, what the search (or the game) chose, who won.

    planes: uint8 [16, 361] of 0/1 (more planes are accepted and cut to 16 on writing);
    to_move: BLACK or WHITE; probabilities: float32 [362] (pass last);
    outcome: +1 if the side to move won, -1 if it lost.
    """

    planes: np.ndarray
    to_move: int
    probabilities: np.ndarray
    outcome: int


# ---------------------------------------------------------------------------------------------
# Writing


def format_plane(bits: np.ndarray) -> str:
    """361 bits -> the 91-character plane line (without the newline).

    Hot path: np.packbits puts the first bit in the most significant place, which is the
    order Leela Zero uses for each hex digit, and bytes.hex() is lower case.
    """
    bits = np.asarray(bits).reshape(-1)
    if bits.shape[0] != NUM_INTERSECTIONS:
        raise ValueError(f"a plane has {NUM_INTERSECTIONS} points, got {bits.shape[0]}")
    head = np.packbits(bits[:NUM_INTERSECTIONS - 1] != 0).tobytes().hex()
    return head + ("1" if bits[NUM_INTERSECTIONS - 1] else "0")


def format_probability(p: float) -> str:
    """A probability as C++ `std::ostream << float` prints it (default precision 6).

    That is printf's `%g` applied to the float32 value widened to double, so the value is
    rounded to float32 first: 1/3 prints as `0.333333`, 1e-5 as `1e-05`.
    """
    return "%g" % float(np.float32(p))


def format_probabilities(probabilities: np.ndarray) -> str:
    """362 probabilities -> line 18 (without the newline). Zeros take a fast path."""
    probs = np.asarray(probabilities, dtype=np.float32).reshape(-1)
    if probs.shape[0] != POTENTIAL_MOVES:
        raise ValueError(f"a policy has {POTENTIAL_MOVES} entries, got {probs.shape[0]}")
    words = ["0"] * POTENTIAL_MOVES
    for i in np.flatnonzero(probs):
        words[i] = "%g" % float(probs[i])
    return " ".join(words)


def format_record(record: TrainingRecord) -> str:
    """The 19 lines of one record, each ending in a newline."""
    return format_fields(record.planes, record.to_move, record.probabilities, record.outcome)


def format_fields(planes: np.ndarray, to_move: int, probabilities: np.ndarray,
                  outcome: int) -> str:
    """Like format_record, from the fields; planes may have 16 or 18 planes (extra are cut)."""
    planes = np.asarray(planes).reshape(-1, NUM_INTERSECTIONS)
    if planes.shape[0] < RECORD_PLANES:
        raise ValueError(f"a record needs {RECORD_PLANES} planes, got {planes.shape[0]}")
    if to_move not in (BLACK, WHITE):
        raise ValueError(f"side to move must be BLACK or WHITE, got {to_move!r}")
    if outcome not in (1, -1):
        raise ValueError(f"outcome must be 1 or -1, got {outcome!r}")
    lines = [format_plane(planes[p]) for p in range(RECORD_PLANES)]
    lines.append("1" if to_move == WHITE else "0")
    lines.append(format_probabilities(probabilities))
    lines.append("1" if outcome == 1 else "-1")
    return "\n".join(lines) + "\n"


def format_plane_lines(planes: np.ndarray) -> list[list[str]]:
    """Plane lines of many positions at once: planes uint8 [T, >=16, 361] -> T lists of 16
    lines. Hot path (one packbits and one hex() for the whole batch)."""
    planes = np.asarray(planes)
    count = planes.shape[0]
    head = np.packbits(planes[:, :RECORD_PLANES, :NUM_INTERSECTIONS - 1] != 0, axis=2)
    digits = head.tobytes().hex()
    last = (planes[:, :RECORD_PLANES, NUM_INTERSECTIONS - 1] != 0).tolist()
    width = PLANE_CHARS - 1
    out = []
    pos = 0
    for t in range(count):
        lines = []
        for p in range(RECORD_PLANES):
            lines.append(digits[pos:pos + width] + ("1" if last[t][p] else "0"))
            pos += width
        out.append(lines)
    return out


_ONE_HOT_TEXT: dict[int, str] = {}


def one_hot_text(slot: int) -> str:
    """Line 18 of a supervised record: `1` at the played move's slot, `0` elsewhere."""
    text = _ONE_HOT_TEXT.get(slot)
    if text is None:
        words = ["0"] * POTENTIAL_MOVES
        words[slot] = "1"
        text = _ONE_HOT_TEXT[slot] = " ".join(words)
    return text


def format_one_hot_records(planes: np.ndarray, to_move, slots, outcomes) -> str:
    """The records of many positions whose probabilities are one-hot (supervised data):
    planes uint8 [T, >=16, 361], to_move/slots/outcomes of length T. Same text as format_fields
    with one_hot(slot), much faster. Hot path."""
    parts = []
    for lines, stm, slot, z in zip(format_plane_lines(planes), to_move, slots, outcomes):
        lines.append("1" if stm == WHITE else "0")
        lines.append(one_hot_text(int(slot)))
        lines.append("1" if z == 1 else "-1")
        parts.append("\n".join(lines))
    return "".join(p + "\n" for p in parts)


def one_hot(slot: int) -> np.ndarray:
    """The probability vector of a played move (supervised data): 1 at its policy slot."""
    probs = np.zeros(POTENTIAL_MOVES, dtype=np.float32)
    probs[slot] = 1.0
    return probs


def outcome_for(to_move: int, winner: int) -> int:
    """+1 if the side to move is the winner, else -1."""
    return 1 if to_move == winner else -1


# ---------------------------------------------------------------------------------------------
# Reading


class RecordError(ValueError):
    """A record that does not follow the layout; the message names the record and line."""


def parse_plane(line: str) -> np.ndarray:
    """A 91-character plane line -> uint8 [361] of 0/1."""
    if len(line) != PLANE_CHARS or line[-1] not in "01":
        raise RecordError(f"plane line must be 90 hex digits and 0/1, got {line[:20]!r}...")
    try:
        head = np.frombuffer(bytes.fromhex(line[:-1]), dtype=np.uint8)
    except ValueError as err:
        raise RecordError(f"plane line is not hex: {err}") from None
    bits = np.empty(NUM_INTERSECTIONS, dtype=np.uint8)
    bits[:-1] = np.unpackbits(head)
    bits[-1] = line[-1] == "1"
    return bits


def parse_record(lines: list[str]) -> TrainingRecord:
    """19 lines (newlines stripped) -> a TrainingRecord; RecordError when malformed."""
    if len(lines) != RECORD_LINES:
        raise RecordError(f"a record has {RECORD_LINES} lines, got {len(lines)}")
    planes = np.stack([parse_plane(line) for line in lines[:RECORD_PLANES]])
    if lines[16] not in ("0", "1"):
        raise RecordError(f"side to move must be 0 or 1, got {lines[16]!r}")
    words = lines[17].split(" ")
    if len(words) != POTENTIAL_MOVES:
        raise RecordError(f"{POTENTIAL_MOVES} probabilities expected, got {len(words)}")
    try:
        probs = np.array([float(w) for w in words], dtype=np.float32)
    except ValueError as err:
        raise RecordError(f"bad probability: {err}") from None
    check_probabilities(probs)
    if lines[18] not in ("1", "-1"):
        raise RecordError(f"outcome must be 1 or -1, got {lines[18]!r}")
    return TrainingRecord(planes, WHITE if lines[16] == "1" else BLACK, probs, int(lines[18]))


#: Slack on the sum of a record's probabilities: each is printed with 6 significant digits.
SUM_TOLERANCE = 1e-3


def check_probabilities(probs: np.ndarray) -> None:
    """RecordError unless every probability is a finite number in [0, 1] and they sum to at
    most 1: a NaN, inf, negative or huge target would be trained on and spread NaN or nonsense
    through the network (Leela Zero's visit fractions and one-hot moves always pass)."""
    bad = np.flatnonzero(~np.isfinite(probs) | (probs < 0) | (probs > 1))
    if len(bad):
        raise RecordError(f"probability {bad[0]} is {probs[bad[0]]:g}: each must be a number "
                          "from 0 to 1")
    total = float(probs.sum(dtype=np.float64))
    if total > 1 + SUM_TOLERANCE:
        raise RecordError(f"the probabilities sum to {total:g}, more than 1")


def parse_records(text: str | Iterable[str]) -> Iterator[TrainingRecord]:
    """Every record of a chunk's text (or of an iterable of its lines), in order."""
    lines = text.splitlines() if isinstance(text, str) else (l.rstrip("\n") for l in text)
    batch: list[str] = []
    count = 0
    for line in lines:
        batch.append(line)
        if len(batch) == RECORD_LINES:
            try:
                yield parse_record(batch)
            except RecordError as err:
                raise RecordError(f"record {count}: {err}") from None
            batch = []
            count += 1
    if batch:
        raise RecordError(f"{len(batch)} lines left over after {count} records")
