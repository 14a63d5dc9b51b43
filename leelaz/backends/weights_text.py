"""The text of Leela Zero weights files (Network::load_v1_network), read and parsed into
NetWeights.

Owns: `read_text(path)`, `parse_tensors`/`parse_weights(data, source)`, `assemble`,
`WeightsError`, and `weights_summary` (the start-up line Leela Zero prints). Imports: numpy,
backends.base, files (bounded reading). Callers load a file with backends/weights.py's
`load_weights` (the text, or the parsed cache of backends/weights_cache.py, which parses with
this module too).

The file is text, one parameter tensor per line after the version line; gzip is detected by its
magic bytes, never by the file name. Blocks and filters are inferred: filters F from the input
conv's bias line (file line 3), blocks B from the line count (1 + 4 + 8B + 14 lines). Every line's
length is then checked against what F and B imply, so a malformed file fails here, naming the
file and the 1-based line, instead of failing later inside a reshape. So does a value that is
nan, inf or beyond float32 (it reads as inf), or a negative batch-norm variance: Leela Zero
loads those silently and then answers `winrate: nan`.

Only a regular file is read (a FIFO is refused without waiting for a writer); its version line
is checked from the first 64 kB and its text may not pass MAX_TEXT_BYTES (gzip is inflated in
a stream that stops there), so a wrong or huge file costs kilobytes, not the machine's memory.

At load, batch-norm variance v becomes scale 1/sqrt(v + 1e-5) and each conv bias is folded into
its mean (mean - bias), exactly as Leela Zero does; ConvBN therefore carries no bias.

Hot path: parsing. Each line is converted by NumPy in one call (`np.fromstring(line, sep=" ")`,
falling back to splitting into tokens for the error message when that fails), which reads a
10x128 text file in about half a second here.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from leelaz.backends.base import (BN_EPSILON, BOARD_SQUARES, INPUT_CHANNELS, POLICY_OUTPUTS,
                                  VALUE_HIDDEN, ConvBN, NetWeights)
from leelaz.files import FileTooLarge, NotRegularFile, gunzip_bounded, open_regular

GZIP_MAGIC = b"\x1f\x8b"
#: Lines besides the version line and the tower: input conv (4) + policy head (6) + value head (8).
FIXED_LINES = 1 + 4 + 14
LINES_PER_BLOCK = 8


class WeightsError(ValueError):
    """A weights file that cannot be used; the message names the file (and line, if any)."""


def _fail(source: str, message: str, line: int | None = None) -> WeightsError:
    where = f"{source}" if line is None else f"{source}, line {line}"
    return WeightsError(f"{where}: {message}")


#: The most text a weights file may hold: a 40x256 network (the largest Leela Zero trained)
#: is about 0.5 GB of text. A bigger file is refused before it is read whole.
MAX_TEXT_BYTES = 1 << 30
#: How much is read first to check the version line before reading the rest.
HEAD_BYTES = 1 << 16


def read_text(path: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The file's bytes, gunzipped when it starts with gzip's magic bytes.

    Only a regular file is read; its first line must be a version (1 or 2) before the rest is
    read, and the (decompressed) text may not exceed `limit`, so a huge or wrong file is
    refused after reading a few kilobytes, not after filling memory.
    """
    try:
        with open_regular(path) as f:
            head = f.read(HEAD_BYTES)
            if head[:2] == GZIP_MAGIC:
                f.seek(0)
                return gunzip_bounded(f, limit, path, lambda h: _check_head(h, path),
                                      HEAD_BYTES)
            if os.fstat(f.fileno()).st_size > limit:
                raise FileTooLarge(path, limit)
            _check_head(head, path)
            return head + f.read()
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except IsADirectoryError:
        raise _fail(path, "is a directory, not a weights file") from None
    except FileTooLarge:
        raise _fail(path, f"larger than any Leela Zero network ({limit >> 20} MiB of text at "
                    "most)") from None
    except NotRegularFile:
        raise _fail(path, "not a regular file") from None
    except OSError as e:
        raise _fail(path, f"cannot read: {e.strerror or e}") from None
    except ValueError as e:
        if isinstance(e, WeightsError):
            raise
        raise _fail(path, f"corrupt or truncated gzip data ({e})") from None


def _check_head(head: bytes, source: str) -> None:
    """Refuse a file whose first line is not a version, from its first bytes alone (the
    whole text is checked again when parsed)."""
    _version([head.split(b"\n", 1)[0][:20]], source)


def _expected_sizes(filters: int, blocks: int) -> list[int]:
    """Number of values on each tensor line (file lines 2..), for F filters and B blocks."""
    f = filters
    sizes = [f * INPUT_CHANNELS * 9, f, f, f]
    sizes += [f * f * 9, f, f, f] * (2 * blocks)
    sizes += [2 * f, 2, 2, 2, POLICY_OUTPUTS * 2 * BOARD_SQUARES, POLICY_OUTPUTS]
    sizes += [f, 1, 1, 1, VALUE_HIDDEN * BOARD_SQUARES, VALUE_HIDDEN, VALUE_HIDDEN, 1]
    return sizes


def _split_lines(data: bytes, source: str) -> list[bytes]:
    """Text lines without the trailing blank ones; empty or binary content is an error."""
    if not data.strip():
        raise _fail(source, "empty weights file")
    if b"\x00" in data[:4096]:
        raise _fail(source, "not a weights file (binary content)")
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _version(lines: list[bytes], source: str) -> int:
    text = lines[0].strip()
    try:
        version = int(text)
    except ValueError:
        version = None
    if version not in (1, 2):
        shown = text[:20].decode("utf-8", "replace")
        raise _fail(source, f"Weights file is the wrong version ({shown!r}; "
                    "only 1 and 2 are supported).", 1)
    return version


def _parse_line_fast(line: bytes) -> np.ndarray | None:
    """The line's numbers via np.fromstring (30% faster than splitting), or None when it
    cannot read the whole line. A blank line is handled apart: fromstring returns [-1] there."""
    if not line.strip():
        return np.empty(0, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "could not be read to its end" becomes an exception
        try:
            return np.fromstring(line, dtype=np.float32, sep=" ")
        except (ValueError, DeprecationWarning):
            return None


def _parse_line(line: bytes, source: str, number: int) -> np.ndarray:
    """The numbers of one line; the error names the first token that is not a number."""
    try:
        return np.array(line.split(), dtype=np.float32)
    except ValueError:
        bad = next((t for t in line.split() if not _is_float(t)), b"?")
        raise _fail(source, f"Failed to parse weight file: {bad[:30].decode('utf-8', 'replace')!r}"
                    " is not a number.", number) from None


def _is_float(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _infer_shape(lines: list[bytes], source: str) -> tuple[int, int]:
    """(filters, blocks) from the line count and the input conv's bias line."""
    if len(lines) < FIXED_LINES or (len(lines) - FIXED_LINES) % LINES_PER_BLOCK:
        raise _fail(source, f"Inconsistent number of weights in the file: {len(lines)} lines, "
                    f"expected {FIXED_LINES} + {LINES_PER_BLOCK} per residual block "
                    "(truncated file?).", len(lines))
    blocks = (len(lines) - FIXED_LINES) // LINES_PER_BLOCK
    filters = len(lines[2].split())
    if filters == 0:
        raise _fail(source, "Inconsistent number of weights in the file: the input "
                    "convolution's bias line is empty.", 3)
    return filters, blocks


def parse_tensors(data: bytes, source: str = "<weights>") -> tuple[int, list[np.ndarray]]:
    """(version, the raw tensor of each line after the version), every line checked: its
    length against the shape, every value finite in float32, every variance >= 0."""
    lines = _split_lines(data, source)
    version = _version(lines, source)
    filters, blocks = _infer_shape(lines, source)
    sizes = _expected_sizes(filters, blocks)
    variances = _variance_lines(blocks)
    tensors = []
    for i, (line, size) in enumerate(zip(lines[1:], sizes)):
        number = i + 2
        values = _parse_line_fast(line)
        if values is None or values.size != size:
            values = _parse_line(line, source, number)  # the careful reading, for the message
        if values.size != size:
            if size == POLICY_OUTPUTS * 2 * BOARD_SQUARES:
                raise _fail(source, "The weights file is not for 19x19 boards: the policy FC "
                            f"has {values.size} weights, expected {size}.", number)
            raise _fail(source, f"Inconsistent number of weights in the file: {values.size} "
                        f"values, expected {size} for {blocks} blocks x {filters} filters.",
                        number)
        _check_values(values, line, source, number, variance=i in variances)
        tensors.append(values)
    return version, tensors


def parse_weights(data: bytes, source: str = "<weights>") -> NetWeights:
    """Parse the (already gunzipped) text of a weights file; `source` names it in errors."""
    version, tensors = parse_tensors(data, source)
    return assemble(tensors, version, source)


def _variance_lines(blocks: int) -> set[int]:
    """Indexes (in the tensors after the version line) of the batch-norm variance lines:
    the 4th line of each conv (input, 2 per block, policy, value)."""
    convs = 1 + 2 * blocks
    starts = [4 * c for c in range(convs)] + [4 * convs, 4 * convs + 6]
    return {start + 3 for start in starts}


def _check_values(values: np.ndarray, line: bytes, source: str, number: int,
                  variance: bool) -> None:
    """nan, inf or a value beyond float32 (it reads as inf) would make the network answer
    nan; a negative variance makes its scale nan. Refuse them, naming the token."""
    if values.size == 0:
        return
    finite = np.isfinite(values)
    if not finite.all():
        token = line.split()[int(np.argmin(finite))]
        raise _fail(source, f"{token[:30].decode('utf-8', 'replace')!r} is not a finite "
                    "float32 number (nan, inf or out of range).", number)
    if variance and (values < 0).any():
        token = line.split()[int(np.argmax(values < 0))]
        raise _fail(source, f"negative batch-norm variance {token[:30].decode('utf-8', 'replace')}"
                    ".", number)


def _conv(tensors: list[np.ndarray], out_c: int, in_c: int, k: int) -> ConvBN:
    """Pop one conv's 4 lines (weights, bias, mean, variance) and fold bias and variance."""
    w, bias, mean, var = (tensors.pop(0) for _ in range(4))
    scale = (1.0 / np.sqrt(var.astype(np.float64) + BN_EPSILON)).astype(np.float32)
    return ConvBN(weights=w.reshape(out_c, in_c, k, k), mean=(mean - bias).astype(np.float32),
                  scale=scale)


def assemble(tensors: list[np.ndarray], version: int, source: str) -> NetWeights:
    """NetWeights from parse_tensors' checked tensors (filters and blocks follow from them)."""
    f = tensors[1].size
    blocks = (len(tensors) + 1 - FIXED_LINES) // LINES_PER_BLOCK
    tensors = list(tensors)
    input_conv = _conv(tensors, f, INPUT_CHANNELS, 3)
    tower = [(_conv(tensors, f, f, 3), _conv(tensors, f, f, 3)) for _ in range(blocks)]
    policy_conv = _conv(tensors, 2, f, 1)
    pol_w = tensors.pop(0).reshape(POLICY_OUTPUTS, 2 * BOARD_SQUARES)
    pol_b = tensors.pop(0)
    value_conv = _conv(tensors, 1, f, 1)
    fc1_w = tensors.pop(0).reshape(VALUE_HIDDEN, BOARD_SQUARES)
    fc1_b = tensors.pop(0)
    fc2_w = tensors.pop(0).reshape(1, VALUE_HIDDEN)
    fc2_b = tensors.pop(0)
    return NetWeights(version=version, input_conv=input_conv, tower=tower,
                      policy_conv=policy_conv, policy_fc_w=pol_w, policy_fc_b=pol_b,
                      value_conv=value_conv, value_fc1_w=fc1_w, value_fc1_b=fc1_b,
                      value_fc2_w=fc2_w, value_fc2_b=fc2_b, source=source)


def weights_summary(weights: NetWeights) -> str:
    """Leela Zero's start-up line, e.g. `Detecting residual layers...v1...128 channels...6 blocks.`"""
    return (f"Detecting residual layers...v{weights.version}...{weights.filters} channels..."
            f"{weights.blocks} blocks.")
