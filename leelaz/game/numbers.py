"""Numbers read the way Leela Zero's C++ reads them: the one parser for GTP and SGF text.

Owns: `leading_int`, `leading_float` (strict: None when there is no number or it does not fit
a C `int` / a finite `float`) and `cpp_int`, `cpp_float` (what `istream >> x` leaves in x: 0
when nothing was read). Imports: stdlib only.

C++ `>>` skips leading white space and reads the longest leading number, so `19x` is 19 and
`x19` is nothing. Where Leela Zero would go on with an overflowed or missing value, the GTP
commands use the strict forms and answer a syntax error instead (docs/usage.md, "Where we differ").
"""

from __future__ import annotations

import math
import re

INT_MIN, INT_MAX = -2**31, 2**31 - 1
FLT_MAX = 3.4028234663852886e38
_INT = re.compile(r"\s*[+-]?\d+")
_FLOAT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def leading_int(text: str) -> int | None:
    """`>> int`: the leading integer of text, None if there is none or it overflows."""
    m = _INT.match(text)
    if m is None or len(m.group()) > 40:
        return None
    value = int(m.group())
    return value if INT_MIN <= value <= INT_MAX else None


def leading_float(text: str) -> float | None:
    """`>> float`: the leading number of text, None if none or not finite as a float."""
    m = _FLOAT.match(text)
    if m is None:
        return None
    value = float(m.group())
    return value if math.isfinite(value) and abs(value) <= FLT_MAX else None


def cpp_int(text: str | None) -> int:
    """What `>> int` leaves: the leading integer, clamped to a C int, 0 when there is none."""
    m = _INT.match(text) if text is not None else None
    if m is None:
        return 0
    return min(max(int(m.group()), INT_MIN), INT_MAX)


def cpp_float(text: str | None) -> float:
    """What `>> float` leaves: the leading number, 0 when there is none."""
    m = _FLOAT.match(text) if text is not None else None
    return float(m.group()) if m else 0.0
