#!/usr/bin/env python3
"""Write tests/fixtures/tygem-9d: the first games of four months of the 9-dan collections.

Usage:
    python3 scripts/make_tygem_fixture.py [SOURCE]   (default: ../shared/data/tygem-9d)

The tests that replay real games (against Leela Zero 0.17, GNU Go and our own reader) read
the fixture, never the 221,901-game collection, so they run in any clone and give the same
result everywhere. Each month's file is the first GAMES[month] lines of the original, byte for
byte, so a test that reads "the first n games of month m" sees the games it always saw. The
counts are what the tests read (see tests/fixtures/README.md); no sampling, no seed. The files
are gzip with no name and a zero time stamp (leelaz.files), so a rerun writes the same bytes.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from leelaz.files import write_gzip_atomic

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "data" / "tygem-9d"
TARGET = REPO / "tests" / "fixtures" / "tygem-9d"

#: Games kept from the start of each month, and the tests that need that many.
GAMES = {
    # dump_supervised killed mid-way, once its third 32-game chunk is written: 96 and more
    "2010-01": 200,
    # the oracle board test's 50-game sample from each of the first four months
    "2010-02": 60,
    # the supervised oracle's 6 resigned, 6 scored, 4 timed-out and 4 forfeited games
    # (the 20th of them is game 295), the heatmap oracle's first 100 lines
    "2010-03": 300,
    # dump-supervised's 40 games, the trainer's first 12 and its 3 held-out games (51-53)
    "2011-12": 60,
}


def first_lines(path: Path, count: int) -> bytes:
    """The first `count` lines (games) of a gzip collection, as stored."""
    out = []
    with gzip.open(path, "rb") as f:
        for line in f:
            out.append(line)
            if len(out) == count:
                return b"".join(out)
    raise SystemExit(f"ERROR: {path} has only {len(out)} games, {count} wanted")


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE
    TARGET.mkdir(parents=True, exist_ok=True)
    for month, count in GAMES.items():
        name = f"tygem-9d-{month}.sgf.gz"
        if not (source / name).is_file():
            raise SystemExit(f"ERROR: {source / name} not found")
        write_gzip_atomic(TARGET / name, first_lines(source / name, count))
        print(f"{TARGET / name}: {count} games, {(TARGET / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
