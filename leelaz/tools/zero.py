"""`leelaz zero DIR`: the Zero loop (self-play -> train -> gate -> promote) on a run folder.

    leelaz zero runs/z1 --size 6x64 -v 100 --games-per-gen 256 --generations 5
    leelaz zero runs/z1                     # the same run again: continues where it stopped
    leelaz zero runs/z1 --ray auto          # self-play and matches as Ray tasks
    leelaz zero runs/z1 --status            # the generation table and runs/z1/status.png
    leelaz zero runs/z1 --ladder            # promoted networks vs fixed references, Elo
    leelaz zero runs/z1 --repair            # set damaged records aside, rewrite `best`

Owns: the command line, its checks (each bad input is one `ERROR: ...` line on stderr and exit
status 1, before anything in DIR is changed; so is any error of the filesystem, such as a full
disk, and a job that failed for good), the options kept in DIR/settings.json, creating the
starting network, and wiring the run folder, the executor and the loop together. The loop
itself is leelaz.zero.loop.

Settings: the options given on the command line are stored in DIR/settings.json, and a later
run of DIR uses them for every option it does not give, so that "the same command" without
every flag is still the same run; an option given again with another value replaces the stored
one and is said aloud, one line each. Options left at their defaults are not stored (the
machine-sized defaults follow the machine).

Imports: click, leelaz.tools (ToolError), leelaz.zero.*, leelaz.install_hints,
leelaz.backends.random_weights (the seeded random starting network).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

import click
from click.core import ParameterSource

from leelaz.files import write_text_atomic
from leelaz.install_hints import torch_install_hint
from leelaz.tools import ToolError
from leelaz.tools.options import (backend_option, gpu_option, number, processes_by_default,
                                  quiet_option, weights_option)
from leelaz.zero.jobs import JobFailed
from leelaz.zero.local_executor import LocalExecutor, local_gpu_present
from leelaz.zero.loop import WINDOW_MIN, Settings, ZeroLoop, machine_defaults
from leelaz.zero.rundir import (RunDir, RunError, network_id, network_size,
                                 network_text)

DEFAULT_SIZE = "6x128"  # Leela Zero 0.17's default network size
#: The options kept in DIR/settings.json (how the run plays and trains; not what it is,
#: which run.json fixes, nor what this invocation does: --generations, --ray, --status...).
STORED = ("visits", "match_visits", "games_per_gen", "window", "window_min", "steps", "batch",
          "lr", "checkpoint_seconds", "lr_schedule", "reuse", "val_sgf", "gate", "match_games",
          "parallel", "max_moves", "full_share", "cheap_visits", "forced_k", "checked_resign",
          "dumbpass", "noise", "workers", "worker_cpus", "cpu_only", "gpu", "backend")
SETTINGS = "settings.json"


def parse_size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text or "")
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise RunError(f"--size {text!r}: give BLOCKSxFILTERS, e.g. 6x64")
    return int(match.group(1)), int(match.group(2))


def _check_schedule(ctx, param, value):
    from leelaz.training.train_config import parse_lr_schedule
    try:
        if value is not None:
            parse_lr_schedule(value)
    except ValueError as exc:
        raise ToolError(f"--lr-schedule {value!r}: {exc}") from None
    return value


def _check_reuse(ctx, param, value):
    try:
        if float(value) > 0:
            return float(value)
    except ValueError:
        pass
    raise ToolError(f"--reuse {value!r}: give a number > 0")


def _check_files(ctx, param, value):
    for path in value:
        if not os.path.isfile(path):
            raise ToolError(f"--val-sgf {path}: no such file")
    return tuple(os.path.abspath(p) for p in value)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _check_start(run: RunDir, size: str | None, weights: str | None,
                 start: str | None = None) -> tuple[int, int]:
    """The run's (blocks, filters), checking --size, -w and --start against each other and
    DIR."""
    wanted = parse_size(size) if size else None
    if weights is not None:
        from_file = network_size(weights)
        if wanted and wanted != from_file:
            raise RunError(f"-w {weights} is a {from_file[0]}x{from_file[1]} network, "
                           f"not --size {size}")
        wanted = from_file
    if run.exists():
        info = run.info()
        if wanted and wanted != (info.blocks, info.filters):
            raise RunError(f"{run.root} is a run of {info.size} networks, not "
                           f"{wanted[0]}x{wanted[1]}; use another DIR")
        if weights is not None and network_id(network_text(weights)) != info.start:
            raise RunError(f"{run.root} started from network {info.start[:12]}, not "
                           f"{weights}; leave out -w to continue it, or use another DIR")
        if weights is None and start is not None and \
                _random_start_id(info.blocks, info.filters, info.seed, start) != info.start:
            raise RunError(f"{run.root} did not start from the --start {start} network of "
                           f"seed {info.seed}; leave out --start to continue it, or use "
                           "another DIR")
        return info.blocks, info.filters
    return wanted or parse_size(DEFAULT_SIZE)


def _random_start_id(blocks: int, filters: int, seed: int, start: str) -> str:
    """The network id of the seeded random start that --start names."""
    from leelaz.backends.random_weights import random_tensors
    from leelaz.backends.weights_writer import weights_text

    tensors = random_tensors(blocks, filters, seed, uniform=start == "uniform")
    return network_id(weights_text(tensors, 1).encode())


def _create(run: RunDir, size: tuple[int, int], weights: str | None, seed: int,
            start: str = "random"):
    """Write the starting network and run.json (last)."""
    if weights is not None:
        return run.create(weights, *size, seed=seed)
    from leelaz.backends.random_weights import make_random_weights

    tmp = run.root / f".start-{os.getpid()}.gz"
    try:
        make_random_weights(str(tmp), size[0], size[1], seed, uniform=start == "uniform")
        return run.create(str(tmp), *size, seed=seed)
    finally:
        if tmp.exists():
            tmp.unlink()


def check_installed(opts: dict) -> None:
    """RunError with the install line when a part the run needs is missing: PyTorch (the
    trainer, unless only self-play is asked or --generations 0 asks for nothing to run; not
    with --ray HOST:PORT, whose trainer runs on the cluster) and Ray (with --ray), before
    anything starts."""
    if opts["ray"] is not None:
        from leelaz.zero.ray_executor import import_ray
        import_ray()
    if not opts.get("selfplay_only") and opts.get("generations") != 0 and \
            opts["ray"] in (None, "auto") and importlib.util.find_spec("torch") is None:
        raise RunError("leelaz zero trains its networks with PyTorch, which is not "
                       f"installed: {torch_install_hint()}")


def _long(param, value=True) -> str:
    """The long name of an option (of a flag, the half that gives `value`)."""
    names = param.opts if value or not param.secondary_opts else param.secondary_opts
    return max(names, key=len)


def apply_stored_settings(run: RunDir, opts: dict, given: set[str], params: dict,
                          say=None) -> dict:
    """opts with DIR/settings.json's values for the options not given; the given ones
    stored (a changed one said aloud). `params`: the command's click parameters by name,
    to check a stored value as if it had been typed."""
    say = say or _say
    path = run.root / SETTINGS
    stored: dict = {}
    if path.exists():
        try:
            raw = json.loads(path.read_text())
            if not isinstance(raw, dict):
                raise ValueError(f"it holds a {type(raw).__name__}")
            for name, value in raw.items():
                if name not in STORED:
                    continue
                param = params[name]
                if param.multiple:
                    if not isinstance(value, list):
                        raise ValueError(f"{name} is {value!r:.40}, not a list")
                    stored[name] = tuple(param.type.convert(v, param, None) for v in value)
                elif value is None or isinstance(value, (dict, list)):
                    raise ValueError(f"{name} is {value!r:.40}")
                else:
                    stored[name] = param.type.convert(value, param, None)
        except (OSError, ValueError, click.BadParameter) as exc:
            text = getattr(exc, "strerror", None) or (exc.format_message() if isinstance(
                exc, click.BadParameter) else str(exc))
            raise RunError(f"{path} is damaged ({text}); delete it (the defaults and the "
                           "options you give then apply)") from None
    merged, keep = dict(opts), dict(stored)
    for name in STORED:
        value = opts[name]
        if name in given:
            if name in stored and stored[name] != value:
                param = params[name]
                if param.is_flag and param.secondary_opts:
                    said = f"{_long(param, value)} (was {_long(param, stored[name])}"
                else:
                    said = f"{_long(param, value)} {_shown(value)} (was {_shown(stored[name])}"
                say(f"changed: {said} in {path})")
            keep[name] = value
        elif name in stored:
            merged[name] = stored[name]
    if keep != stored or (keep and not path.exists()):
        write_text_atomic(path, json.dumps({k: list(v) if isinstance(v, tuple) else v
                                            for k, v in sorted(keep.items())}, indent=1) + "\n")
    return merged


def _shown(value) -> str:
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) or "none"
    return str(value)


def run_zero(directory: str, opts: dict, given: set[str] = frozenset(),
             params: dict | None = None) -> int:
    run = RunDir(os.path.abspath(directory))
    if opts["status"]:
        return show_status(run)
    if opts.get("ladder"):  # the fixed ladder (leelaz.zero.ladder), not the loop
        from leelaz.zero.ladder import run_ladder
        from leelaz.zero.status import plot

        code = run_ladder(run, opts, _say)
        try:
            _say(f"ladder plot: {plot(run)}")
        except ImportError:
            _say("no plot: matplotlib is not installed (pip install 'leelaz[zero]')")
        return code
    if opts.get("repair"):
        return repair(run)
    _gate_rule(opts)  # a bad --gate is one line before DIR changes
    _check_selfplay_additions(opts)
    if opts.get("no_gate"):  # the older spelling of --gate none, stored as such
        opts["gate"], given = "none", set(given) | {"gate"}
    if opts.get("start") is not None and opts["weights"] is not None:
        raise RunError("give -w or --start, not both")
    size = _check_start(run, opts["size"], opts["weights"], opts.get("start"))
    if run.root.exists():  # a folder that cannot be a run, or a damaged record, first...
        run.check_usable()
        if run.exists():
            run.generations()
            run.best()
    check_installed(opts)  # ...then what to install, before DIR is made or touched
    run.check_usable()
    run.lock()
    if run.exists():  # every record checked before anything starts or is written
        run.generations()
        run.best()
    if params is not None:
        opts = apply_stored_settings(run, opts, set(given), params)
    opts["gate_rule"] = _gate_rule(opts)  # a bare rerun's stored --gate included
    opts["reuse"] = float(opts["reuse"])  # a stored one comes back as its text
    if opts["workers"] is None and opts["ray"] is None:  # one per NVIDIA GPU, as self-play
        opts["workers"] = processes_by_default(opts["cpu_only"], opts["gpu"],
                                               opts.get("backend") or "auto")
    executor = None
    try:
        if opts["ray"] is not None:
            from leelaz.zero.ray_executor import RayExecutor
            executor = RayExecutor(opts["ray"], workers=opts["workers"] or 1,
                                   worker_cpus=opts["worker_cpus"])
        else:
            executor = LocalExecutor(workers=opts["workers"] or 1)
        if run.exists():
            info = run.info()
            removed = run.remove_temporaries()
            run.log(f"resumed ({removed} temporary file(s) of killed writers removed)")
        else:
            info = _create(run, size, opts["weights"], opts["seed"], opts.get("start") or "random")
            run.log(f"created: {info.size}, starting network {info.start}")
        settings = _settings(opts, executor)
        _say(f"leelaz zero {run.root}: {info.size}, best {run.best()[:12]}, "
             f"{executor.describe()}; {settings.games_per_gen} games/generation at "
             f"{settings.visits} visits, window "
             f"{f'{settings.window} games' if settings.window else 'growing'}, "
             f"{settings.steps or f'{settings.reuse:g} x new positions / batch'} "
             f"steps of {settings.batch}, {opts['gate_rule'].describe()}")
        ZeroLoop(run, info, settings, executor, _say).run_until_done()
        _say(status_table(run))
        return 0
    finally:
        if executor is not None:
            executor.close()


def _check_selfplay_additions(opts: dict) -> None:
    """--full-share, --cheap-visits and --forced-playouts checked as selfplay checks them,
    before DIR changes (a stored value was checked when it was given)."""
    from leelaz.selfplay.selfplay import SelfplayError, check_additions

    try:
        check_additions(opts["full_share"], opts["cheap_visits"], opts["forced_k"], 0.0, 0,
                        opts["visits"])
    except SelfplayError as exc:
        raise RunError(str(exc)) from None


def _gate_rule(opts: dict):
    """--gate (and the older --no-gate, the same as --gate none), checked before DIR changes."""
    from leelaz.zero.gate import DEFAULT, GateError, parse

    try:
        rule = parse(opts.get("gate") or DEFAULT)
    except GateError as exc:
        raise RunError(str(exc)) from None
    if opts.get("no_gate"):
        if opts.get("gate") and rule.kind != "none":
            raise RunError(f"--no-gate and --gate {opts['gate']} disagree; give one of them")
        rule = parse("none")
    return rule


def _settings(opts: dict, executor) -> Settings:
    has_gpu = executor.has_gpu()
    if has_gpu is None:
        has_gpu = not opts["cpu_only"] and local_gpu_present()
    sized = machine_defaults(has_gpu)
    pick = {k: opts[k] if opts.get(k) is not None else v for k, v in sized.items()}
    window = opts["window"]  # None: counted in positions, growing with the run
    return Settings(visits=opts["visits"], match_visits=opts["match_visits"],
                    games_per_gen=pick["games_per_gen"], generations=opts["generations"],
                    window=window, window_min=opts["window_min"], steps=pick["steps"],
                    batch=pick["batch"],
                    lr=opts["lr"], checkpoint_seconds=opts["checkpoint_seconds"],
                    lr_schedule=opts["lr_schedule"], reuse=opts["reuse"],
                    val_sgf=tuple(opts["val_sgf"]),
                    gate=opts["gate_rule"].plays_match, gate_rule=opts["gate_rule"].text,
                    match_games=opts["match_games"],
                    parallel=pick["parallel"], max_moves=opts["max_moves"],
                    dumbpass=opts.get("dumbpass", True), noise=opts.get("noise", True),
                    workers=opts["workers"] or 1,
                    cpu_only=opts["cpu_only"], gpus=tuple(opts["gpu"]), on_cpu=not has_gpu,
                    network_backend=opts.get("backend") or "auto", progress=not opts["quiet"],
                    selfplay_only=opts["selfplay_only"],
                    full_share=opts["full_share"], cheap_visits=opts["cheap_visits"],
                    forced_k=opts["forced_k"], checked_resign=opts["checked_resign"])


def repair(run: RunDir) -> int:
    """--repair: set damaged generation records aside and rewrite a damaged `best`."""
    if not run.exists():
        raise RunError(f"{run.root} is not a leelaz zero run (no run.json)")
    run.check_links()
    run.lock()
    done = run.repair()
    for line in done:
        run.log("repair: " + line)
        _say(line)
    _say(("repaired" if done else "nothing to repair") +
         f"; run leelaz zero {run.root} to continue")
    return 0


def status_table(run: RunDir) -> str:
    from leelaz.zero.status import table
    return table(run)


def show_status(run: RunDir) -> int:
    from leelaz.zero.status import plot

    if not run.exists():
        raise RunError(f"{run.root} is not a leelaz zero run (no run.json)")
    print(status_table(run))
    try:
        print(f"Elo plot: {plot(run)}")
    except ImportError:
        _say("no plot: matplotlib is not installed (pip install 'leelaz[zero]')")
    except OSError as exc:
        _say(f"no plot: cannot write it in {run.root}: {exc.strerror or exc}")
    return 0


@click.command("zero", short_help="The Zero loop in DIR: self-play, train, gate, promote.",
               context_settings={"help_option_names": ["-h", "--help"],
                                         "max_content_width": 100})
@click.argument("directory", metavar="DIR")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=1601, show_default=True,
              help="Self-play visits per move (autogtp's).")
@click.option("--match-visits", type=click.IntRange(1, None), default=1600, show_default=True,
              help="Visits per move in gating matches (the LZ server's).")
@click.option("--games-per-gen", type=click.IntRange(1, None), default=None,
              help="New self-play games per generation [default: 256 with a GPU, else 32].")
@click.option("--generations", type=click.IntRange(0, None), default=None,
              help="Stop once the run has N generations [default: run until interrupted].")
@click.option("--window", type=click.IntRange(1, None), default=None,
              help="Train on the chunks of the newest N games [default: a window counted in "
                   "positions that grows with the run].")
@click.option("--window-min", type=str, callback=number(int, least=1), default=WINDOW_MIN,
              show_default=True, metavar="POSITIONS",
              help="Without --window: the window holds every position up to this many, then "
                   "grows with the run (KataGo's c). A small run lowers it so that its first, "
                   "random games leave the window sooner.")
@click.option("--steps", type=click.IntRange(1, None), default=None,
              help="Training steps per generation [default: --reuse x the generation's new "
                   "positions / --batch].")
@click.option("--reuse", callback=_check_reuse, default="4", show_default=True, metavar="N",
              help="Without --steps: times each position is drawn over its life in the window.")
@click.option("--batch", type=click.IntRange(1, None), default=None,
              help="Training batch size [default: 256 with a GPU, else 64].")
@click.option("--lr", type=click.FloatRange(0, None, min_open=True), default=None,
              help="The run's constant learning rate [default: 0.001].")
@click.option("--lr-schedule", callback=_check_schedule, default=None, metavar="LR[,STEP:LR...]",
              help="The run's learning rate by its total training steps (wins over --lr).")
@click.option("--val-sgf", multiple=True, callback=_check_files, metavar="FILE",
              help="Fixed validation games (e.g. 9-dan SGFs) reported each generation.")
@click.option("--checkpoint-seconds", type=click.FloatRange(0, None), default=None,
              help="How often the trainer saves its checkpoint [default: the trainer's].")
@click.option("--size", default=None, metavar="BLOCKSxFILTERS",
              help=f"Network size of a new run's random start [default: {DEFAULT_SIZE}].")
@click.option("--start", type=click.Choice(["random", "uniform"]), default=None,
              help="A new run's seeded random start: random heads (a peaked random policy), or "
                   "uniform (both heads' last layer zero: uniform policy, value 0.5, as Leela "
                   "Zero's all-zero start) [default: random].")
@weights_option("Start a new run from this network instead of a random one.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True,
              help="Seed of the random starting network and of the games.")
@click.option("--gate", default=None, metavar="RULE",
              help="Which candidates are promoted: 'lz' (Leela Zero's SPRT, Elo 0/35, at most "
                   "--match-games games), 'winrate:P:N' (a score of at least P over N games, "
                   "KataGo's gatekeeper) or 'none' (every candidate, minigo's practice) "
                   "[default: winrate:0.5:200: a small run's candidates gain a few Elo each, "
                   "which an SPRT against +35 rejects, so self-play would stay on an old "
                   "network; 50% of 200 games still stops a clearly worse one].")
@click.option("--no-gate", is_flag=True,
              help="Promote every candidate without a match (the same as --gate none).")
@click.option("--match-games", type=click.IntRange(1, None), default=400, show_default=True,
              help="Most games in an SPRT gating match (--gate lz; it usually stops earlier).")
@click.option("--parallel", type=click.IntRange(1, None), default=None,
              help="Games in flight per worker, leaves batched [default: 64 with a GPU, else 8].")
@click.option("--max-moves", type=click.IntRange(1, None), default=None,
              help="End a game after this many moves [default: 722, autogtp's].")
@click.option("--dumbpass/--no-dumbpass", default=True, show_default=True,
              help="Self-play and matches: pass only when the search picks it (autogtp's -d, "
                   "the server's matches), or Leela Zero's engine rules (never a pass that "
                   "loses on the board's score; pass out when it wins after the opponent's "
                   "pass). A generation keeps the value its phase started with.")
@click.option("-n/-N", "--noise/--no-noise", default=True, show_default=True,
              help="Self-play: Dirichlet noise at the root (autogtp's -n), or none; the "
                   "first moves are still drawn (-m 30). A generation keeps the value its "
                   "self-play started with.")
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="Self-play jobs at once (processes, or Ray tasks) [default: one per NVIDIA "
                   "GPU when no --gpu, --cpu-only or --backend opencl says where to run, "
                   "else 1; with --ray 1].")
@click.option("--worker-cpus", type=click.FloatRange(0, None), default=1.0, show_default=True,
              help="CPUs a Ray worker reserves.")
@click.option("--ray", default=None, metavar="auto|ADDRESS",
              help="Run self-play and matches on Ray: 'auto' (this machine's cluster, else a "
                   "private one) or a cluster's HOST:PORT.")
@click.option("--cpu-only/--no-cpu-only", default=False,
              help="Self-play and matches without OpenCL [default: --no-cpu-only].")
@gpu_option("OpenCL device(s) for self-play and matches (repeatable).")
@backend_option("Self-play and matches: ")
@click.option("--full-share", type=str, metavar="SHARE",
              callback=number(float, above=0, most=1), default=1.0,
              show_default=True,
              help="Self-play: playout-cap randomisation (KataGo): this share of the moves gets "
                   "the full -v search with noise and is recorded; the others get "
                   "--cheap-visits without noise and are not recorded (e.g. 0.25). 1 = every "
                   "move, as Leela Zero.")
@click.option("--cheap-visits", type=str, metavar="N",
              callback=number(int, least=0), default=0, show_default=True,
              help="Self-play: visits of a cheap search under --full-share (0 = -v / 8).")
@click.option("--forced-playouts", "forced_k", type=str, metavar="K",
              callback=number(float, least=0), default=0.0,
              show_default=True,
              help="Self-play: forced playouts at the root of full searches, pruned from the "
                   "recorded target again (KataGo, K = 2). 0 = off.")
@click.option("--checked-resign", is_flag=True,
              help="Self-play: resign only once the run's no-resign games (the last four "
                   "generations') show under 5% false resignations at the threshold; until "
                   "then play every game out.")
@click.option("--selfplay-only", is_flag=True,
              help="Play the current generation's self-play games, then stop (throughput "
                   "measurements; the next run trains on them).")
@quiet_option()
@click.option("--ladder", is_flag=True,
              help="Play the fixed ladder and exit: every promoted network against the start, "
                   "frozen snapshots and GNU Go levels 1 and 10, at --ladder-visits, no noise, "
                   "colours alternating; one Elo scale (GNU Go level 10 = 0) in --status.")
@click.option("--ladder-visits", type=str, metavar="N",
              callback=number(int, least=1), default=800, show_default=True,
              help="Ladder: visits per move of the networks.")
@click.option("--ladder-random-moves", type=str, metavar="M",
              callback=number(int, least=0), default=10,
              show_default=True,
              help="Ladder: the networks' first M moves drawn in proportion to visits (-m), "
                   "so that a pair's games differ.")
@click.option("--ladder-games", type=str, metavar="N",
              callback=number(int, least=1), default=40, show_default=True,
              help="Ladder: games per pair (network, reference).")
@click.option("--ladder-every", type=str, metavar="K",
              callback=number(int, least=1), default=4, show_default=True,
              help="Ladder: freeze every K-th promoted network as a reference.")
@click.option("--ladder-jobs", type=str, metavar="N",
              callback=number(int, least=1), default=4, show_default=True,
              help="Ladder: pairs of networks played at once (a process each), and games "
                   "against GNU Go at once (a leelaz GTP engine each).")
@click.option("--gnugo", default=None, metavar="COMMAND",
              help="Ladder: GNU Go's command [default: gnugo on PATH or in /usr/games; "
                   "absent, its rungs are skipped].")
@click.option("--gnugo-levels", default="1,10", show_default=True, metavar="L,L",
              help="Ladder: the GNU Go levels played.")
@click.option("--status", is_flag=True,
              help="Print the generation table, write DIR/status.png (Elo plot) and exit.")
@click.option("--repair", is_flag=True,
              help="Set damaged generation records aside (their generations are played "
                   "again, their games kept), rewrite a damaged DIR/best from the records, "
                   "and exit.")
@click.pass_context
def command(ctx: click.Context, directory: str, **opts) -> int:
    """Self-play, train, gate and promote networks in DIR, resuming whatever is there.

    The options given are kept in DIR/settings.json: a later run of DIR without them uses
    them again."""
    given = {name for name in STORED
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}
    params = {p.name: p for p in ctx.command.params}
    try:
        return run_zero(directory, opts, given, params)
    except MemoryError:
        what = f"--size {opts['size']}" if opts.get("size") else "this run"
        raise ToolError(f"{what}: not enough memory (a smaller network, or fewer "
                        "--parallel games, fits)") from None
    except OSError as exc:  # a full disk, a read-only folder, a vanished file
        where = exc.filename or directory
        raise ToolError(f"{where}: {exc.strerror or exc}") from None
    except (RunError, JobFailed) as exc:
        first, _, rest = str(exc).partition("\n")
        if rest and RunDir(directory).exists():  # the details (a traceback) go to the log
            try:
                RunDir(directory).log("error: " + str(exc))
            except OSError:
                pass
        raise ToolError(first) from None
    except KeyboardInterrupt:
        click.echo("leelaz zero: interrupted; run the same command to continue", err=True)
        raise click.exceptions.Exit(130) from None
