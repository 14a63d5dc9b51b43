"""Where the tests find the reference programs and the shared data.

The shared folder sits beside the checkout (`../shared`) on the developers' machines and in CI;
LEELAZ_SHARED overrides it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("LEELAZ_SHARED", REPO.parent / "shared"))
TYGEM = SHARED / "data" / "tygem-9d"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def leelaz_binary() -> str | None:
    """The C++ Leela Zero 0.17 binary, if installed."""
    return shutil.which("leelaz", path="/usr/games:" + os.environ.get("PATH", ""))


def gnugo_binary() -> str | None:
    """GNU Go, if installed."""
    return shutil.which("gnugo", path="/usr/games:" + os.environ.get("PATH", ""))
