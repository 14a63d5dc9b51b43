"""`leelaz analysis`: the JSON-lines analysis engine on stdin/stdout (leelaz/review/json_engine.py).

Owns: the click command `command` (registered in leelaz/tools/__init__.py): the settings and
serving. Imports: click, tools, tools.review (the options both verbs take, and the network:
selfplay.runner.EngineSide), review.*.

A bad network or option is one `ERROR:` line on stderr and exit status 1; everything after
the start is answered on stdout as JSON (errors included), never a traceback. The engine
exits when its input ends and every query has been answered.
"""

from __future__ import annotations

import sys

import click

from leelaz.tools.review import load_network, network_options, search_options

DEFAULT_VISITS = 200


@click.command("analysis",
               short_help="Analyse JSON queries (KataGo's analysis-engine protocol).",
               context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.option("-v", "--visits", type=click.IntRange(1, None), default=DEFAULT_VISITS,
              show_default=True, help="maxVisits of a query that gives none.")
@search_options
@click.option("--winrates-as", type=click.Choice(["BLACK", "WHITE", "SIDETOMOVE"]),
              default="BLACK", show_default=True,
              help="Whose winrates the responses give (KataGo's reportAnalysisWinratesAs).")
@network_options
def command(visits, parallel, seed, winrates_as, weights, cpu_only, gpu, backend,
            precision) -> int:
    """Analyse positions sent as JSON lines on stdin (KataGo's analysis-engine protocol,
    the part a Leela Zero network can answer); responses are JSON lines on stdout."""
    from leelaz.review.analyse import ReviewSettings
    from leelaz.review.json_engine import JsonEngine
    settings = ReviewSettings(visits=visits, seed=seed, parallel=parallel)
    side = load_network(weights, cpu_only, gpu, precision, backend, parallel)
    try:
        JsonEngine(side, settings, sys.stdout, winrates_as).run(sys.stdin)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0
