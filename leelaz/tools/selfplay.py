"""`leelaz selfplay`: the verb's command line (autogtp's job, many games per process).

Owns: the click command `command` (registered in leelaz/tools/__init__.py). Imports: click,
tools (ToolError), selfplay.*, cli (the default network).

The engine's flags keep their names and meaning; only the defaults are autogtp's self-play
line (`-v 1601 -n -m 30 -r 5 -d --noponder`, 10 % of games with `-r 0`). `-n` and `-d` are on
by default, so they also have negative forms (`--no-noise`, `--no-dumbpass`). Bad input
(weights, folder, `--games 0`, a full disk) gives one `ERROR:` line and exit status 1, and
leaves no partial file; Ctrl-C drops the games in flight and exits 130.
"""

from __future__ import annotations

import click

from leelaz.config import PRECISION_CHOICES
from leelaz.selfplay.runner import SelfplayError
from leelaz.selfplay.settings import MAX_MOVES, NO_RESIGN_SHARE
from leelaz.tools import ToolError
from leelaz.tools.options import (backend_option, cpu_only_option, gpu_option, number,
                                   processes_by_default, quiet_option, weights_option)

UINT64_MAX = 2**64 - 1


class Interrupted(ToolError):
    """Ctrl-C: one line, exit status 130 (the games in flight were dropped)."""

    exit_code = 130


@click.command("selfplay", context_settings={"help_option_names": ["-h", "--help"],
                                             "max_content_width": 100})
@click.option("--games", type=int, default=None, help="[required] Finished games wanted in "
              "--out (earlier runs count).")
@click.option("--parallel", type=click.IntRange(1, None), default=8, show_default=True,
              help="Games in flight in each process; their leaves go to the network together.")
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="Processes, each playing --parallel games (one GPU context each) "
                   "[default: one per NVIDIA GPU when no --gpu, --cpu-only or --backend "
                   "opencl says where to run, else 1].")
@click.option("--network-server", is_flag=True,
              help="With --workers on one GPU: the workers send their batches to one "
                   "network process instead of each holding its own GPU context.")
@click.option("--out", "out_dir", default=None, metavar="DIR",
              help="[required] Folder for the games: an SGF, a training chunk and a debug "
                   "file each (one run at a time).")
@weights_option("Network weights [default: as the engine finds them].")
@click.option("-v", "--visits", type=click.IntRange(0, None), default=1601, show_default=True,
              help="Visits per move (0 = no limit). On a CPU 1601 is many seconds a move: "
                   "try -v 100 for a first run.")
@click.option("-p", "--playouts", type=click.IntRange(0, None), default=0, show_default=True,
              help="Playouts per move (0 = no limit).")
@click.option("-r", "--resignpct", type=click.IntRange(-1, 100), default=5, show_default=True,
              help="Resign below this winrate in percent (0 = never; -1 = 10 scaled for "
                   "handicap). --no-resign-share of the games play out with 0.")
@click.option("-m", "--randomcnt", type=click.IntRange(0, None), default=30, show_default=True,
              help="The first this many moves of each game are drawn in proportion to their "
                   "visits (0 = always the most visited).")
@click.option("-n/-N", "--noise/--no-noise", default=True, show_default=True,
              help="Dirichlet noise on the root's priors.")
@click.option("-d/-D", "--dumbpass/--no-dumbpass", default=True, show_default=True,
              help="No heuristics for smarter passing: the search's own choice stands, as "
                   "in Leela Zero's self-play.")
@click.option("--randomvisits", type=click.IntRange(0, None), default=1, show_default=True,
              help="-m's draw leaves out moves with this many visits or fewer.")
@click.option("--randomtemp", type=click.FloatRange(0, None, min_open=True), default=1.0,
              show_default=True, help="Temperature of -m's draw.")
@click.option("-t", "--threads", type=click.IntRange(0, None), default=0,
              help="Leaves each game collects per evaluation (0 = autogtp's 6).")
@click.option("--batchsize", type=click.IntRange(0, None), default=0,
              help="Most rows in one network call (0 = all the games' leaves together).")
@click.option("--precision", type=click.Choice(PRECISION_CHOICES), default="auto",
              show_default=True, help="Floating-point precision on an OpenCL device.")
@cpu_only_option()
@gpu_option()
@backend_option()
@click.option("-s", "--seed", type=click.IntRange(0, UINT64_MAX), default=None,
              help="Run seed: game i's seed derives from it (a rerun replays the games).")
@click.option("--noponder", is_flag=True, help="Accepted for autogtp's command line; "
              "self-play never ponders.")
@click.option("--no-resign-share", type=click.FloatRange(0, 1), default=NO_RESIGN_SHARE,
              show_default=True, help="Share of games played out with -r 0.")
@click.option("--max-moves", type=click.IntRange(1, None), default=MAX_MOVES,
              show_default=True, help="End a game after more than this many moves.")
@click.option("--seconds", type=click.FloatRange(0, None, min_open=True), default=None,
              help="Stop after this long (games in flight are dropped).")
@quiet_option("No progress bar and no estimate of the run's time at its start.")
@click.option("--full-share", default="1",
              callback=number(float), metavar="SHARE", show_default=True,
              help="Playout-cap randomisation (KataGo): this share of the moves gets the full "
                   "search, with noise, and is recorded; the others get --cheap-visits without "
                   "noise and are not recorded (e.g. 0.25). 1 = every move, as Leela Zero.")
@click.option("--cheap-visits", default="0", callback=number(int), metavar="N",
              help="Visits of a cheap search under --full-share (0 = the full search's / 8).")
@click.option("--forced-playouts", "forced_k", default="0",
              callback=number(float), metavar="K", show_default=True,
              help="Forced playouts at the root of full searches with policy-target pruning "
                   "(KataGo, K = 2): each visited child gets at least sqrt(K x prior x visits) "
                   "visits, taken out of the recorded target again. 0 = off.")
@click.option("--komi-spread", default="0",
              callback=number(float), metavar="POINTS", show_default=True,
              help="Komi randomisation: each game's komi is 7.5 plus a whole number of points "
                   "drawn with this standard deviation. 0 = 7.5 always.")
@click.option("--checked-resign", is_flag=True,
              help="Resign only once the no-resign games (in --out and --resign-evidence) show "
                   "under 5% false resignations at -r over at least 20 games; until then play "
                   "every game out.")
@click.option("--resign-evidence", multiple=True, metavar="DIR",
              help="--checked-resign: earlier self-play folders whose no-resign games count "
                   "too (repeatable).")
@click.option("--resign-report", "resign_report", default=None, metavar="DIR",
              help="Play nothing: print the false-resignation rate per threshold of DIR's "
                   "no-resign games.")
def command(games, parallel, workers, network_server, out_dir, weights, visits, playouts,
            resignpct, randomcnt, noise, dumbpass, randomvisits, randomtemp, threads, batchsize,
            precision, cpu_only, gpu, backend, seed, noponder, no_resign_share, max_moves, seconds,
            quiet, full_share, cheap_visits, forced_k, komi_spread, checked_resign,
            resign_evidence, resign_report) -> int:
    """Play self-play games with Leela Zero's self-play settings; write an SGF and a training
    chunk per game."""
    if resign_report is not None:
        from leelaz.selfplay.resign import report
        try:
            click.echo(report(resign_report), nl=False)
        except OSError as exc:
            raise ToolError(f"cannot read {resign_report}: "
                                     f"{exc.strerror or exc}") from None
        return 0
    if games is None or out_dir is None:
        raise ToolError("--games N and --out DIR are required")
    if games < 1:
        raise ToolError(f"--games must be at least 1, not {games}")
    additions = dict(full_share=full_share, cheap_visits=cheap_visits, forced_k=forced_k,
                     komi_spread=komi_spread,
                     checked_resign=checked_resign, resign_evidence=tuple(resign_evidence))
    if weights is None:
        from leelaz.config import EngineConfig, find_weights
        weights = find_weights(EngineConfig())
        if weights is None:
            raise ToolError("no network: give -w FILE")
    from leelaz.selfplay.selfplay import play_selfplay
    if workers is None:
        workers = processes_by_default(cpu_only, gpu, backend)
    try:
        summary = play_selfplay(weights, out_dir, games, visits=visits, parallel=parallel,
                                workers=workers, network_server=network_server, seed=seed,
                                cpu_only=cpu_only, gpus=tuple(gpu),
                                progress=not quiet, seconds=seconds,
                                no_resign_share=no_resign_share, max_moves=max_moves,
                                playouts=playouts, resignpct=resignpct, randomcnt=randomcnt,
                                noise=noise, dumbpass=dumbpass, randomvisits=randomvisits,
                                randomtemp=randomtemp, threads=threads, batchsize=batchsize,
                                precision=precision, network_backend=backend, **additions)
    except SelfplayError as exc:
        raise ToolError(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted("interrupted: the games in flight were dropped; finished games "
                          "are kept") from None
    click.echo(summary.line())
    return 0

