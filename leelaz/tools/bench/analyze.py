"""`leelaz bench analyze`: visits per second of `lz-analyze` on real positions, as a Lizzie or
Sabaki user sees them, for our engine and the C++ Leela Zero 0.17 in the same run; with
--quality, what those seconds' answers are worth (tools/bench/quality.py).

Owns: that measurement. Imports: gtp.client, tools.bench.common, cli (the shipped network).

For each engine command line (a GTP engine; start-up is not timed): at each --moves position
of the game, `loadsgf GAME MOVE`, then `lz-analyze` for --seconds; the speed is the sum of the
visits of the last `info` line over the time from the command to that line. Positions and
engines alternate (each position is measured on one engine, then at once on the other),
--rounds times, and the best of the rounds counts, so that drift in the machine's speed hits
both. Every round starts both engines afresh: a second analysis of a position in the same
process would find the first one's evaluations in the network cache, replay that tree at
almost no cost and report its visits again (about twice the visits per second), which
measured the cache, not the search. The default game is a 9-dan game (tygem, December 2011,
a month the shipped network never trained on) at moves 40, 120 and 200.

With --log-dir the engines' stderr is kept (a file per engine, appended round after round),
and the network server's line of each of ours (its calls and mean batch: what the device saw
during that engine's run) is printed after the table.

Both command lines are plain text and replaceable, e.g. on a GPU machine:
    leelaz bench analyze --ours "leelaz --gtp -w net.gz" \\
        --reference ".lzpack/leelaz --gtp -w net.gz -t 32 --batchsize 16"
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import click

from leelaz.gtp.client import GtpClient, GtpFailure, GtpTimeout, parse_head
from leelaz.tools import ToolError
from leelaz.tools.bench.common import (CONTEXT, engine_commands, load_line, log_files,
                                       network_file, say, table)
from leelaz.tools.options import weights_option

DEFAULT_GAME = str(Path(__file__).resolve().parent / "game-9d.sgf")
VISITS = re.compile(r"\bvisits (\d+)")
#: How long an engine may take to quit (ours ends its helpers and its network server, which
#: writes its line to stderr as it ends).
QUIT_SECONDS = 15.0
#: The start of the network server's stderr line (backends/remote.py).
SERVER_LINE = "Network server ("


def shipped_network() -> str | None:
    from leelaz.config import EngineConfig, find_weights

    return find_weights(EngineConfig())


def analyze_once(engine: GtpClient, game: str, move: int, seconds: float,
                 interval_cs: int, keep_line: bool = False) -> dict:
    """loadsgf at `move` (none without a game), lz-analyze for `seconds`; visits and
    visits/s of the last info line (and the line itself with `keep_line`)."""
    if game is not None:
        engine.ask(f"loadsgf {game} {move}", timeout=60)
    began = time.monotonic()
    engine.send(f"lz-analyze {interval_cs}")
    head = parse_head(engine.next_line(timeout=60))  # `=`, then info lines until the stop
    while head is None:
        head = parse_head(engine.next_line(timeout=60))
    if not head[0]:
        raise GtpFailure(f"{engine.name}: lz-analyze answered ? {head[2]}")
    last_visits, last_at, last_line = 0, began, ""
    ended = False  # a visit or playout limit ends the output with its blank line (LZ does)
    while time.monotonic() - began < seconds and not ended:
        line = _next_line(engine, began + seconds)
        if line is not None and line.startswith("info "):
            last_visits, last_at = sum(int(v) for v in VISITS.findall(line)), time.monotonic()
            last_line = line
        ended = line is not None and line.strip() == ""
    engine.send("protocol_version")  # any command stops the analysis
    while not ended:
        ended = engine.next_line(timeout=60).strip() == ""
    engine.read_reply(timeout=60)
    elapsed = max(last_at - began, 1e-9)
    got = {"visits": last_visits, "seconds": elapsed, "rate": last_visits / elapsed}
    if keep_line:
        got["line"] = last_line
    return got


def _next_line(engine: GtpClient, until: float) -> str | None:
    """The next line before `until`, or None when the time is up first."""
    try:
        return engine.next_line(timeout=max(0.0, until - time.monotonic()))
    except GtpTimeout:
        return None


def start_engine(name: str, argv: list[str], stderr: str | None = None) -> GtpClient:
    """The engine started and answering (start-up, tuning included, is not timed), its
    stderr appended to the file `stderr`, "capture"d, or discarded (None)."""
    try:
        engine = GtpClient(argv, name=name, stderr=stderr)
        engine.ask("name", timeout=600)  # start-up (tuning included) is not timed
    except GtpFailure as exc:
        raise ToolError(f"{name} ({' '.join(argv)}) did not start: {exc}") from None
    return engine


def warm_up(engine: GtpClient, seconds: float, interval_cs: int) -> None:
    """lz-analyze of the empty board for `seconds`, not timed: an engine whose helper search
    processes load their networks in the background has them searching by the end."""
    engine.ask("clear_board", timeout=60)
    analyze_once(engine, None, 0, seconds, interval_cs)


@click.command("analyze", context_settings=CONTEXT)
@weights_option("Network for the default command lines (default: the shipped one).",
                metavar="FILE|BxF")
@click.option("--game", default=DEFAULT_GAME, show_default=False,
              help="SGF file (default: a 9-dan game shipped with leelaz).")
@click.option("--moves", default="40,120,200", show_default=True,
              help="Move numbers to analyze, comma-separated.")
@click.option("--seconds", type=click.FloatRange(0, None, min_open=True), default=4.0,
              show_default=True, help="lz-analyze time per position.")
@click.option("--interval", type=click.IntRange(1, None), default=25, show_default=True,
              help="lz-analyze interval in centiseconds.")
@click.option("--rounds", type=click.IntRange(1, None), default=1, show_default=True,
              help="Times the engines alternate over the positions; the best round counts.")
@click.option("--warmup", type=click.FloatRange(0, None), default=0.0, show_default=True,
              help="Seconds of untimed lz-analyze on the empty board after each start "
                   "(helper search processes load meanwhile).")
@click.option("--ours", multiple=True, metavar="CMD",
              help="Our whole command line (default: this Python's -m leelaz --gtp "
                   "--noponder --cpu-only -w NET); repeatable.")
@click.option("--log-dir", default="", metavar="DIR",
              help="Keep the engines' stderr here (a file per engine) and print the "
                   "network server's line of each of ours.")
@click.option("--reference", multiple=True, metavar="CMD",
              help="The reference's whole command line (default: the installed Leela Zero "
                   "0.17 --gtp --noponder --cpu-only -w NET; 'none': ours only); "
                   "repeatable: the ratio is then to the best reference.")
@click.option("--quality", is_flag=True,
              help="Measure answers, not speed: at --positions positions of --game (a game or "
                   "a collection), each engine's top move and winrate after --seconds against "
                   "a --long-seconds search by --long-search.")
@click.option("--positions", type=click.IntRange(1, None), default=40, show_default=True,
              help="--quality: positions drawn from --game's main lines (moves 20-250).")
@click.option("--seed", type=click.IntRange(0, None), default=1, show_default=True,
              help="--quality: the draw of the positions.")
@click.option("--long-seconds", type=click.FloatRange(0, None, min_open=True), default=None,
              help="--quality: the long search's time per position [default: 8 x --seconds].")
@click.option("--long-search", default=None, metavar="CMD",
              help="--quality: the long search's whole command line [default: the installed "
                   "Leela Zero 0.17 --gtp --noponder --cpu-only -w NET].")
def command(weights, game, moves, seconds, interval, rounds, warmup, ours, log_dir,
            reference, quality, positions, seed, long_seconds, long_search) -> None:
    """lz-analyze visits/s on real positions: ours and Leela Zero 0.17, alternating."""
    if not os.path.isfile(game):
        raise ToolError(f"{game}: no such SGF file")
    if quality:
        return _quality(weights, game, seconds, interval, ours, log_dir, reference, positions,
                        seed, long_seconds, long_search)
    try:
        positions = [int(m) for m in moves.split(",") if m.strip()]
    except ValueError:
        raise ToolError(f"--moves {moves!r}: give move numbers like 40,120,200") from None
    net = network_file(weights) if weights else shipped_network()
    if net is None and not (ours and reference):
        raise ToolError("no network: give -w FILE")
    flags = ["--gtp", "--noponder", "--cpu-only", "-w", str(net)]
    commands = engine_commands(ours, reference, flags)
    game = os.path.abspath(game)
    say(f"{game} at moves {', '.join(map(str, positions))}; {seconds:g} s each; "
        f"{rounds} round(s); {load_line()}")
    logs = log_files(log_dir, [name for name, _ in commands])
    best: dict[tuple[str, int], float] = {}
    for r in range(rounds):
        engines = [(name, start_engine(name, argv, logs.get(name))) for name, argv in commands]
        try:
            if warmup:
                for _, engine in engines:
                    warm_up(engine, warmup, interval)
            for move in positions:
                for name, engine in engines:
                    got = analyze_once(engine, game, move, seconds, interval)
                    say(f"  round {r + 1} move {move} {name:8s} {got['visits']} visits in "
                        f"{got['seconds']:.2f} s = {got['rate']:,.0f} visits/s")
                    best[name, move] = max(best.get((name, move), 0.0), got["rate"])
        except GtpFailure as exc:
            raise ToolError(str(exc)) from None
        finally:
            for _, engine in engines:
                engine.close(QUIT_SECONDS)
    names = [name for name, _ in commands]
    say(_table(names, positions, best, len(ours) if len(ours) > 1 else 1))
    for name, path in logs.items():
        for line in _server_lines(path):
            say(f"{name}: {line}")


def _quality(weights, game, seconds, interval, ours, log_dir, reference, positions, seed,
             long_seconds, long_search) -> None:
    """--quality: tools/bench/quality.py, with this mode's engines and network."""
    from leelaz.tools.bench.common import split_command
    from leelaz.tools.bench.quality import default_long_search, run_quality

    net = network_file(weights) if weights else shipped_network()
    if net is None and not (ours and reference and long_search):
        raise ToolError("no network: give -w FILE")
    flags = ["--gtp", "--noponder", "--cpu-only", "-w", str(net)]
    commands = engine_commands(ours, reference, flags)
    long_argv = split_command(long_search) if long_search else default_long_search(flags)
    if long_argv is None:
        raise ToolError("no long search: install Leela Zero 0.17 or give --long-search CMD")
    logs = log_files(log_dir, [name for name, _ in commands] + ["long search"])
    run_quality(commands, long_argv, os.path.abspath(game), positions, seed, seconds,
                long_seconds or 8 * seconds, interval, logs, analyze_once=analyze_once,
                start_engine=start_engine, quit_seconds=QUIT_SECONDS)


def _server_lines(path: str) -> list[str]:
    """The network server's lines in an engine's stderr log (one per round it ran)."""
    try:
        with open(path, errors="replace") as f:
            return [line.strip() for line in f if line.startswith(SERVER_LINE)]
    except OSError:
        return []


def _table(names: list[str], positions: list[int], best: dict, ours: int = 1) -> str:
    """Visits/s per engine; with one of ours and references, the ratio of ours to the best
    reference (per move, and of the means)."""
    ratio = ours == 1 and len(names) > 1
    header = ["move"] + [f"{n} visits/s" for n in names] + (["ratio"] if ratio else [])
    rows = []
    for move in positions + ["mean"]:
        if move == "mean":
            rates = [sum(best[n, m] for m in positions) / len(positions) for n in names]
        else:
            rates = [best[n, move] for n in names]
        row = [move, *rates]
        if ratio:
            row.append(f"{rates[0] / max(max(rates[1:]), 1e-9):.2f}")
        rows.append(row)
    return table(header, rows)
