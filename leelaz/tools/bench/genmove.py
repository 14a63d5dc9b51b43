"""`leelaz bench genmove`: playouts a move on the clock, on real positions, for our engine and
the C++ Leela Zero 0.17 in the same run.

Owns: that measurement. Imports: gtp.client, tools.bench.common, tools.bench.analyze (the
game, the engine start and the warm-up).

What a player at a short time control gets from an engine is the search's playouts a move
(at 0.5 s a move, strength follows the playouts of one tree, not the visits a second of
analysis; docs/performance.md). For each engine command line: at each --moves position of the game,
`loadsgf GAME MOVE` and `time_settings` (--clock), then --genmoves `genmove`s of alternating
colours (the engine plays on from its own moves, its tree reused as in a game); each
`genmove` is read back from the engine's stderr statistics line, Leela Zero's `N visits, N
nodes, N playouts, N n/s`: the playouts are this move's own search, the visits include the
reused subtree (and, for ours with several search processes, the other trees' merged visits).
Engines alternate position by position, so drift in the machine's speed hits both; start-up
and --warmup are not timed.
"""

from __future__ import annotations

import os
import re
import time

import click

from leelaz.gtp.client import GtpClient, GtpFailure
from leelaz.tools import ToolError
from leelaz.tools.bench.analyze import (DEFAULT_GAME, QUIT_SECONDS, shipped_network,
                                        start_engine, warm_up)
from leelaz.tools.bench.common import (CONTEXT, engine_commands, load_line, log_files,
                                       network_file, say, table)
from leelaz.tools.options import weights_option

#: The statistics line both engines write to stderr at the end of a search.
STATS = re.compile(r"(\d+) visits, (\d+) nodes, (\d+) playouts")


def genmoves(engine: GtpClient, game: str, move: int, clock: str, count: int,
             log=None) -> list[dict]:
    """loadsgf at `move`, time_settings `clock`, then `count` genmoves of alternating colours
    (Black first when `move` is odd: the moves before it alternate from Black); each one's
    playouts, visits and wall time."""
    engine.ask(f"loadsgf {game} {move}", timeout=60)
    engine.ask(f"time_settings {clock}", timeout=60)
    engine.take_stderr()
    colours = ("b", "w") if move % 2 == 1 else ("w", "b")
    got = []
    for i in range(count):
        began = time.monotonic()
        reply = engine.ask(f"genmove {colours[i % 2]}", timeout=600)
        seconds = time.monotonic() - began
        text = engine.stderr_until(STATS.pattern, timeout=30)
        if log is not None:
            log.write(text)
        visits, _, playouts = (int(x) for x in STATS.findall(text)[-1])
        got.append({"move": reply.strip(), "visits": visits, "playouts": playouts,
                    "seconds": seconds})
        if reply.strip().lower() == "resign":
            break
    return got


@click.command("genmove", context_settings=CONTEXT)
@weights_option("Network for the default command lines (default: the shipped one).",
                metavar="FILE|BxF")
@click.option("--game", default=DEFAULT_GAME, show_default=False,
              help="SGF file (default: a 9-dan game shipped with leelaz).")
@click.option("--moves", default="40,120,200", show_default=True,
              help="Move numbers to start from, comma-separated.")
@click.option("--clock", default="0 1 2", show_default=True,
              help="time_settings arguments (main time, byo-yomi time, stones): 0.5 s a move.")
@click.option("--genmoves", "count", type=click.IntRange(1, None), default=6, show_default=True,
              help="genmoves at each position.")
@click.option("--warmup", type=click.FloatRange(0, None), default=0.0, show_default=True,
              help="Seconds of untimed lz-analyze on the empty board after each start.")
@click.option("--ours", multiple=True, metavar="CMD",
              help="Our whole command line (default: this Python's -m leelaz --gtp "
                   "--noponder --cpu-only -b 0 -w NET); repeatable.")
@click.option("--reference", multiple=True, metavar="CMD",
              help="The reference's whole command line (default: the installed Leela Zero "
                   "0.17 with the same flags; 'none': ours only); repeatable.")
@click.option("--log-dir", default="", metavar="DIR",
              help="Keep each engine's stderr of the genmoves here (a file per engine).")
def command(weights, game, moves, clock, count, warmup, ours, reference, log_dir) -> None:
    """Playouts a move on the clock at real positions: ours and Leela Zero 0.17, alternating."""
    if not os.path.isfile(game):
        raise ToolError(f"{game}: no such SGF file")
    try:
        positions = [int(m) for m in moves.split(",") if m.strip()]
        if len([float(x) for x in clock.split()]) != 3:
            raise ValueError
    except ValueError:
        raise ToolError(f"give --moves like 40,120,200 and --clock like '0 1 2' "
                        f"(got {moves!r}, {clock!r})") from None
    net = network_file(weights) if weights else shipped_network()
    if net is None and not (ours and reference):
        raise ToolError("no network: give -w FILE")
    flags = ["--gtp", "--noponder", "--cpu-only", "-b", "0", "-w", str(net)]
    commands = engine_commands(ours, reference, flags)
    game = os.path.abspath(game)
    say(f"{game} from moves {', '.join(map(str, positions))}; time_settings {clock}; "
        f"{count} genmoves each; {load_line()}")
    logs = {name: open(path, "a")  # noqa: SIM115 (closed below)
            for name, path in log_files(log_dir, [name for name, _ in commands]).items()}
    results: dict[str, list[dict]] = {name: [] for name, _ in commands}
    engines = []
    try:
        for name, argv in commands:  # one at a time: a failed start closes those before
            engines.append((name, start_engine(name, argv, "capture")))
        if warmup:
            for _, engine in engines:
                warm_up(engine, warmup, 25)
        for move in positions:
            for name, engine in engines:
                got = genmoves(engine, game, move, clock, count, logs.get(name))
                results[name] += got
                say(f"  move {move} {name:10s} playouts "
                    f"{' '.join(str(g['playouts']) for g in got)}; visits "
                    f"{' '.join(str(g['visits']) for g in got)}; "
                    f"{sum(g['seconds'] for g in got) / len(got):.2f} s a move")
    except GtpFailure as exc:
        raise ToolError(str(exc)) from None
    finally:
        for _, engine in engines:
            engine.close(QUIT_SECONDS)
        for f in logs.values():
            f.close()
    say(_table(results))


def _table(results: dict[str, list[dict]]) -> str:
    """Means a move per engine, and each engine's playouts as a ratio of the first's."""
    rows, first = [], None
    for name, got in results.items():
        n = max(1, len(got))
        playouts = sum(g["playouts"] for g in got) / n
        first = playouts if first is None else first
        rows.append([name, len(got), playouts, sum(g["visits"] for g in got) / n,
                     sum(g["seconds"] for g in got) / n, f"{playouts / max(first, 1e-9):.2f}"])
    return table(["engine", "moves", "playouts a move", "visits a move", "s a move",
                  "playouts / first"], rows)
