"""Where the tests find the reference programs and their data.

The 9-dan games the tests replay are TYGEM_FIXTURE, committed with the tests. The shared folder
beside the checkout (`../shared`, or LEELAZ_SHARED) holds the whole collection the fixture was
cut from (scripts/make_tygem_fixture.py); no test needs it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("LEELAZ_SHARED", REPO.parent / "shared"))
TYGEM = SHARED / "data" / "tygem-9d"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TYGEM_FIXTURE = FIXTURES / "tygem-9d"


def leelaz_binary() -> str | None:
    """The C++ Leela Zero 0.17 binary, if installed."""
    return shutil.which("leelaz", path="/usr/games:" + os.environ.get("PATH", ""))


def gnugo_binary() -> str | None:
    """GNU Go, if installed."""
    return shutil.which("gnugo", path="/usr/games:" + os.environ.get("PATH", ""))
