"""`leelaz bench`: benchmarks of the board, the network, the search, the whole engine and
lz-analyze, with the C++ Leela Zero 0.17 measured in the same run where it is installed.

Owns: the `bench` group; each mode is a module of this package. Imports: click and the modes.
Speed targets live here (and in docs/performance.md, made with these commands), never in tests.
"""

from __future__ import annotations

import click

from leelaz.tools.bench import (analyze, board, data, engine, genmove, net, review, search,
                                selfplay, startup)
from leelaz.tools.bench.common import CONTEXT

EPILOG = """\b
Examples:
  leelaz bench board --seconds 3
  leelaz bench net -w 6x128 -w 10x128 --batches 1,8,32
  leelaz bench search --batch 1,32 --runs 5        (the search's own cost, instant network)
  leelaz bench search --at 40,120,200 --batch 16   (the same at a 9-dan game's positions)
  leelaz bench engine -w 6x128 -v 3200 -t 2 --runs 3
  leelaz bench analyze --seconds 4                 (lz-analyze on a 9-dan game, both engines)
  leelaz bench genmove --genmoves 6             (playouts a move at 0.5 s a move, both)
  leelaz bench selfplay -v 1601 --parallel 32 --workers 8 --reference-k 4,8
  leelaz bench startup --runs 7                    (time to answer protocol_version)
  leelaz bench startup --genmove 300 --runs 3      (a fresh process's first two moves)
  leelaz bench review --sgf GAMES.sgf.gz --games 10 -v 400   (vs GoReviewPartner's loop)
"""


@click.group(context_settings=CONTEXT, epilog=EPILOG)
def command() -> None:
    """Benchmarks, ours and the C++ Leela Zero 0.17's in the same run."""


for _mode in (board, net, search, engine, analyze, genmove, data, selfplay, startup, review):
    command.add_command(_mode.command)
