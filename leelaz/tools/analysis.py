"""`leelaz analysis`: the JSON-lines analysis engine on stdin/stdout (leelaz/review/json_engine.py).

Owns: the click command `command` (registered in leelaz/tools/__init__.py): the network and
its batches (selfplay.runner.EngineSide), the settings, and serving. Imports: click, tools,
review.*, selfplay.runner, cli (the default network).

A bad network or option is one `ERROR:` line on stderr and exit status 1; everything after
the start is answered on stdout as JSON (errors included), never a traceback. The engine
exits when its input ends and every query has been answered.
"""

from __future__ import annotations

import sys

import click

from leelaz.config import BACKEND_CHOICES, BACKEND_HELP, PRECISION_CHOICES
from leelaz.tools import ToolError

UINT64_MAX = 2**64 - 1
DEFAULT_VISITS = 200


@click.command("analysis",
               short_help="Analyse JSON queries (KataGo's analysis-engine protocol).",
               context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.option("-w", "--weights", default=None, metavar="FILE", help="Network weights.")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=DEFAULT_VISITS,
              show_default=True, help="maxVisits of a query that gives none.")
@click.option("--parallel", type=click.IntRange(1, None), default=128, show_default=True,
              help="Positions searched at once, their leaves in one network call.")
@click.option("-s", "--seed", type=click.IntRange(0, UINT64_MAX), default=1,
              show_default=True, help="Seed: a position's numbers are those of "
              "`leelaz -g -t 1 -v N -s SEED` running lz-analyze on it.")
@click.option("--winrates-as", type=click.Choice(["BLACK", "WHITE", "SIDETOMOVE"]),
              default="BLACK", show_default=True,
              help="Whose winrates the responses give (KataGo's reportAnalysisWinratesAs).")
@click.option("--cpu-only", is_flag=True, help="NumPy, no OpenCL.")
@click.option("--gpu", type=click.IntRange(0, None), multiple=True, metavar="ID",
              help="ID of the device(s) to use (repeatable).")
@click.option("--backend", type=click.Choice(BACKEND_CHOICES), default="auto",
              show_default=True, help=BACKEND_HELP)
@click.option("--precision", type=click.Choice(PRECISION_CHOICES), default="auto")
def command(weights, visits, parallel, seed, winrates_as, cpu_only, gpu, backend,
            precision) -> int:
    """Analyse positions sent as JSON lines on stdin (KataGo's analysis-engine protocol,
    the part a Leela Zero network can answer); responses are JSON lines on stdout."""
    from leelaz.review.analyse import ReviewSettings
    from leelaz.review.json_engine import JsonEngine
    from leelaz.tools.review import _network

    settings = ReviewSettings(visits=visits, seed=seed, parallel=parallel)
    side = _network(weights, cpu_only, gpu, precision, backend, parallel)
    try:
        JsonEngine(side, settings, sys.stdout, winrates_as).run(sys.stdin)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0
