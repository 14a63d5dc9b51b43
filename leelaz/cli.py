"""The `leelaz` command line and the composition root (Leela Zero's src/Leela.cpp).

Owns: parsing and validating Leela Zero 0.17's flags into an EngineConfig, the start-up
messages, the log file, and `build_engine`, the one place that wires game state, network,
search and the GTP command groups together. Imports: anything (the only such module).

Differences from Leela Zero, on purpose:
- Without -g, Leela Zero's console mode: the licence text, then before each command the
  position on stderr and a `Leela: ` prompt on stdout (commands are still GTP). The licence
  text names leelaz, not Leela Zero.
- The first stderr line (unless -q) names leelaz, its version and the weights file loaded, as
  an absolute path (identity_line): the C++ program answers `name` and `version` alike, and a
  user must be able to tell which engine a GUI started and on which network. `--version`
  prints the version and the command a GUI should run.
- `--help` lists the verbs first, then the flags under Leela Zero's headings, leelaz's own and
  the dynamic-komi fork's under theirs.
- With no -w and no default network (neither Leela Zero's default path nor a network shipped
  in the package's weights/ folder), the engine still starts and serves the commands that need
  no network, and says so on stderr. With -w FILE, a missing or bad file is an error (exit 1).
- Bad values are refused when parsing (choices, ranges), before anything is loaded.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import replace

import click

from leelaz.install_hints import torch_install_hint

from leelaz.batching import resolve_threads
from leelaz.config import (BACKEND_CHOICES, BACKEND_HELP, DEFAULT_WEIGHTS, PRECISION_CHOICES,
                           TIMEMANAGE_CHOICES, EngineConfig, find_weights, resolve_dyn_komi,
                           shipped_weights)
from leelaz import GTP_VERSION, __version__
from leelaz.tools import VERBS, is_verb, run_verb, verb_summary

UINT64_MAX = 2**64 - 1

LICENCE = f"""\
leelaz {__version__} (Leela Zero {GTP_VERSION} in Python).
This program comes with ABSOLUTELY NO WARRANTY.
This is free software, and you are welcome to redistribute it under the terms of the
GNU General Public License, version 3 or later.

"""


class UsageProblem(Exception):
    """A command-line error: printed as `ERROR: ...`, exit status 1."""


# ---- parsing ------------------------------------------------------------------------------

def _command() -> click.Command:
    """The engine's command line: Leela Zero 0.17's flags under its --help's headings, then
    leelaz's own flags, then the dynamic-komi fork's. The headings only shape --help; parsing
    sees one flat list of options, as Leela Zero's boost::program_options does."""
    int_ = click.IntRange(0, None)
    generic = [
        _Option(["-g", "--gtp"], is_flag=True, help="Enable GTP mode (what GUIs use)."),
        _Option(["-t", "--threads"], type=int_, default=0, metavar="N",
                show_default=True, help="Number of threads to use (0 = pick one)."),
        _Option(["-p", "--playouts"], type=int_, default=None, metavar="N",
                help="Limit the playouts per move (0 = no limit). Requires --noponder."),
        _Option(["-v", "--visits"], type=int_, default=None, metavar="N",
                help="Limit the visits per move (0 = no limit)."),
        _Option(["-b", "--lagbuffer"], type=int_, default=100, metavar="CS",
                show_default=True, help="Safety margin for time usage in centiseconds."),
        _Option(["-r", "--resignpct"], type=click.IntRange(-1, 100), default=None,
                metavar="PCT",
                help="Resign when winrate is less than x%. -1 uses 10% scaled for "
                     "handicap, 0 never resigns.  [default: -1; 0 with --handicap]"),
        _Option(["-w", "--weights"], default=None, metavar="FILE",
                help="File with network weights. " + _default_network_rule()),
        _Option(["-l", "--logfile"], default=None, metavar="FILE",
                help="File to log input/output to."),
        _Option(["-q", "--quiet"], is_flag=True, help="Disable all diagnostic output."),
        _Option(["--timemanage"], type=click.Choice(TIMEMANAGE_CHOICES), default="auto",
                show_default=True,
                help="Time management: auto = no_pruning with -n, otherwise on; on = stop "
                     "when the best move can't change; fast = also play faster; "
                     "no_pruning = for self-play."),
        _Option(["--noponder"], is_flag=True, help="Disable thinking on opponent's time."),
        _Option(["--benchmark"], is_flag=True,
                help="Test network and exit. Default args: -v3200 --noponder -m0 -t1 -s1."),
        _Option(["--cpu-only"], is_flag=True, help="Do not use OpenCL device(s)."),
    ]
    opencl = [
        _Option(["--gpu"], type=int_, multiple=True, metavar="ID",
                help="ID of the OpenCL device(s) to use (repeatable)."),
        _Option(["--full-tuner"], is_flag=True,
                help="Try harder to find an optimal OpenCL tuning (needs --precision)."),
        _Option(["--tune-only"], is_flag=True, help="Tune OpenCL only and then exit."),
        _Option(["--batchsize"], type=int_, default=0, metavar="N",
                show_default=True, help="Max batch size (0 = pick one)."),
        _Option(["--precision"], type=click.Choice(PRECISION_CHOICES), default=None,
                help="Floating-point precision (single/half/auto) [default: auto]."),
    ]
    selfplay = [
        _Option(["-n", "--noise"], is_flag=True,
                help="Enable policy network randomization."),
        _Option(["-s", "--seed"], type=click.IntRange(0, UINT64_MAX), default=None,
                metavar="N", help="Random number generation seed."),
        _Option(["-d", "--dumbpass"], is_flag=True,
                help="Don't use heuristics for smarter passing."),
        _Option(["-m", "--randomcnt"], type=int_, default=0, metavar="N",
                show_default=True, help="Play more randomly the first x moves."),
        _Option(["--randomvisits"], type=int_, default=1, metavar="N",
                show_default=True,
                help="Don't play random moves if they have <= x visits."),
        _Option(["--randomtemp"], type=click.FloatRange(0, None, min_open=True),
                default=1.0, show_default=True, metavar="T",
                help="Temperature to use for random move selection."),
    ]
    own = [
        _Option(["--backend"], type=click.Choice(BACKEND_CHOICES), default="auto",
                show_default=True,
                help="The network's backend. " + BACKEND_HELP + " PyTorch, where missing: "
                     + torch_install_hint() + "."),
        _Option(["--search-processes"], type=click.IntRange(0, 64), default=0,
                metavar="N",
                help="Analysis (lz-analyze, pondering) searches each position in N "
                     "processes at once, their root statistics merged; genmove is one "
                     "tree. 0 (default) = one per two cores up to 8 on a GPU, 1 on the "
                     "CPU or with -v/-p; 1 = one tree, as Leela Zero."),
        _Option(["--version"], is_flag=True, expose_value=False, is_eager=True,
                callback=_print_version,
                help="Print leelaz's version and the command a GUI should run, then exit."),
    ]
    sections = [("Generic options (Leela Zero 0.17's)", generic),
                ("OpenCL device options", opencl),
                ("Self-play options", selfplay),
                ("leelaz's own options", own),
                ("Dynamic komi (the dynamic-komi fork's flags, docs/dynamic-komi.md)",
                 _dyn_komi_options())]
    return EngineCommand(
        "leelaz", sections=sections,
        params=[p for _, group in sections for p in group]
        + [click.Argument(["stray"], nargs=-1, metavar="")],
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
        help="Leela Zero 0.17 in Python: a Go engine speaking GTP, with the tools to make "
             "and test its networks. A GUI (Sabaki, Lizzie) runs it as `leelaz -g`; in a "
             "terminal, `leelaz` alone reads the same commands after a `Leela: ` prompt.",
        callback=lambda **kw: kw)


def _default_network_rule() -> str:
    """Where the engine finds its network without -w, as find_weights applies it."""
    shipped = shipped_weights()
    return (f"Without -w: {DEFAULT_WEIGHTS} (Leela Zero's default) if that file exists, "
            "else the network shipped with leelaz"
            + (f" ({os.path.basename(shipped)})" if shipped else "") + ".")


class _Option(click.Option):
    """An engine flag whose help leaves out click's `[x>=0]` range notes: the text says what
    a value means, and a bad one is refused with the range when parsing."""

    def get_help_extra(self, ctx: click.Context):
        extra = super().get_help_extra(ctx)
        extra.pop("range", None)
        return extra


class EngineCommand(click.Command):
    """The engine's click command with a --help for newcomers: the two usages, the verbs with
    a line each, then the flags under their headings (`sections`: (title, options))."""

    def __init__(self, *args, sections: list[tuple[str, list[click.Option]]], **kwargs):
        super().__init__(*args, **kwargs)
        self.sections = sections

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("leelaz", "[OPTIONS]          the Go engine (GTP)")
        formatter.write_usage("leelaz", "VERB [ARGS]...     a tool: leelaz VERB --help",
                              prefix="       ")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Verbs"):
            formatter.write_dl([(name, verb_summary(name)) for name in VERBS])
        help_option = self.get_help_option(ctx)
        for title, options in self.sections:
            rows = [opt.get_help_record(ctx) for opt in options]
            if title.startswith("Generic") and help_option is not None:
                rows.insert(0, help_option.get_help_record(ctx))
            with formatter.section(title):
                formatter.write_dl([row for row in rows if row is not None])


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    """--version: the program, its version (the package's, leelaz.__version__), the GTP
    identity it answers, and the absolute command line that started it, for a GUI's engine
    setting (a venv's bin/leelaz is not on a desktop's PATH)."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"leelaz {__version__}\n"
               f"Speaks the GTP of Leela Zero {GTP_VERSION} (name: Leela Zero, "
               f"version: {GTP_VERSION}) and takes its flags.\n"
               f"Command for a GUI: {own_command()}")
    ctx.exit(0)


def own_command() -> str:
    """The absolute command that runs this program: the console script's path (not resolved:
    a venv's python is a link out of the venv), or this Python with -m leelaz."""
    script = sys.argv[0] if sys.argv else ""
    if script and os.path.basename(script) == "leelaz" and os.path.isfile(script):
        return os.path.abspath(script)
    return f"{sys.executable} -m leelaz"


def _dyn_komi_options() -> list[click.Option]:
    """The dynamic-komi fork's flags (docs/dynamic-komi.md §1), spelt as the fork spells
    them. None/False = not given; config.resolve_dyn_komi applies presets and validates."""
    def flag(name, text):
        return _Option([name], is_flag=True, help=text)

    def value(name, kind, text):
        return _Option([name], type=kind, default=None, help=text)

    return [
        flag("--handicap", "Dynamic komi for handicap games (band .12/.06/.03, -r 0); add "
                           "--target-komi 0."),
        flag("--nonslack", "Dynamic komi that keeps playing hard when ahead (band .9/.1/.1)."),
        value("--target-komi", float, "Komi for scoring and the network at the start, and "
                                      "the snap-back target.  [default: 7.5]"),
        value("--max-wr", float, "Top of White's winrate band (dynamic komi)."),
        value("--min-wr", float, "Bottom of White's winrate band (dynamic komi)."),
        value("--wr-margin", float, "Margin inside the band that adjustments aim for."),
        value("--max-komi", float, "Largest komi an adjustment may try."),
        value("--min-komi", float, "Smallest komi an adjustment may try."),
        value("--adj-positions", int, "Positions collected per colour (at least 8).  "
                                      "[default: 200]"),
        value("--adj-pct", float, "Percentage of the collected positions used.  [default: 4]"),
        value("--num-adj", int, "Komi adjustments per search.  [default: 1 in the modes]"),
        flag("--pos", "Use White's values only at komi <= 7.5 (and Black's at >= -7.5)."),
        flag("--neg", "The mirror image of --pos."),
        value("--fixed-symmetry", int, "Symmetry 0..7 for search expansions (else random)."),
        flag("--tg-sure-backup", "Toggle sure backup (on by default)."),
        flag("--tg-orig-policy", "Toggle keeping the original policy (on by default)."),
        flag("--tg-dyn-fpu", "Toggle dynamic FPU (on in the modes)."),
        flag("--tg-auto-pn", "Toggle the start-up dyn_komi_test that sets --pos/--neg."),
    ]


DYN_KOMI_KEYS = ("handicap", "nonslack", "target_komi", "max_wr", "min_wr", "wr_margin",
                 "max_komi", "min_komi", "adj_positions", "adj_pct", "num_adj", "pos", "neg",
                 "fixed_symmetry", "tg_sure_backup", "tg_orig_policy", "tg_dyn_fpu",
                 "tg_auto_pn")


def parse_args(argv: list[str]) -> EngineConfig | None:
    """argv (without the program name) -> EngineConfig; None after --help.

    Raises UsageProblem for anything Leela Zero would refuse.
    """
    cmd = _command()
    try:
        kw = cmd.main(args=list(argv), prog_name="leelaz", standalone_mode=False)
    except click.exceptions.Exit:
        return None
    except click.ClickException as exc:
        raise UsageProblem(exc.format_message()) from None
    if kw is None or isinstance(kw, int):  # --help printed
        return None
    return _to_config(kw, tuple(argv))


def _to_config(kw: dict, argv: tuple[str, ...]) -> EngineConfig:
    if kw["stray"]:
        raise UsageProblem(f"Unrecognized argument: {kw['stray'][0]}")
    ponder = not kw["noponder"]
    playouts, visits = kw["playouts"] or 0, kw["visits"] or 0
    if kw["playouts"] is not None and ponder:  # also with --benchmark, as the binary does
        raise UsageProblem("Nonsensical options: Playouts are restricted but thinking on the "
                           "opponent's time is still allowed. Add --noponder if you want a "
                           "weakened engine.")
    if kw["full_tuner"] and kw["precision"] in (None, "auto"):
        raise UsageProblem("--full-tuner needs an explicit precision: add --precision single "
                           "or --precision half.")
    try:
        dyn = resolve_dyn_komi({key: kw[key] for key in DYN_KOMI_KEYS})
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    resignpct = kw["resignpct"]
    if resignpct is None:  # --handicap never resigns unless -r says otherwise
        resignpct = 0 if dyn.handicap else -1
    cfg = EngineConfig(
        weights=kw["weights"], gtp=kw["gtp"], quiet=kw["quiet"], logfile=kw["logfile"],
        lagbuffer=kw["lagbuffer"], timemanage=kw["timemanage"], ponder=ponder,
        resignpct=resignpct, playouts=playouts, visits=visits, threads=kw["threads"],
        seed=kw["seed"], seed_given=kw["seed"] is not None, noise=kw["noise"],
        dumbpass=kw["dumbpass"], randomcnt=kw["randomcnt"], randomvisits=kw["randomvisits"],
        randomtemp=kw["randomtemp"], cpu_only=kw["cpu_only"], gpus=tuple(kw["gpu"]),
        network_backend=kw["backend"], full_tuner=kw["full_tuner"],
        search_processes=kw["search_processes"],
        tune_only=kw["tune_only"] or kw["full_tuner"],
        batchsize=kw["batchsize"], precision=kw["precision"] or "auto",
        precision_given=kw["precision"] is not None, benchmark=kw["benchmark"],
        dyn_komi=dyn, command_line=argv)
    if cfg.benchmark:  # what Leela Zero's parse_commandline sets for --benchmark
        # Its --help also lists -t1, but the binary does not apply it: the thread count
        # stays the engine's default (10 threads, batches of 5, on a GPU), so ours does too.
        cfg = cfg.with_(quiet=True, ponder=False, noise=False, randomcnt=0, seed=1,
                        seed_given=True, timemanage="off",
                        visits=visits or (0 if playouts else 3200))
    if cfg.seed is None:
        cfg = cfg.with_(seed=int.from_bytes(os.urandom(8), "little"))
    return cfg


# ---- start-up -----------------------------------------------------------------------------

class Diagnostics:
    """Start-up messages: stderr and the log, unless quiet (Leela Zero's myprintf).

    Neither may stop the start: a closed stderr is given up silently, a log that fails (a
    full disk) is closed with one line on stderr and `self.log` becomes None, which the
    caller then hands to the engine."""

    def __init__(self, cfg: EngineConfig, err, log):
        self.cfg, self.err, self.log = cfg, err, log

    def __call__(self, text: str) -> None:
        if self.cfg.quiet:
            return
        self._to_stderr(text)
        if self.log is not None:
            try:
                self.log.write(text)
                self.log.flush()
            except (OSError, ValueError) as exc:
                log, self.log = self.log, None
                self._to_stderr(f"Cannot write the log file {getattr(log, 'name', '')} "
                                f"({getattr(exc, 'strerror', None) or _one_line(exc)}); "
                                "logging stopped.\n")

    def _to_stderr(self, text: str) -> None:
        if self.err is None:
            return
        try:
            self.err.write(text)
            self.err.flush()
        except (OSError, ValueError):
            self.err = None


def open_log(path: str, stderr):
    """-l FILE, appended to as Leela Zero does; None (with one line) when it cannot be
    opened. A FIFO with no reader is not waited for (opening it would block the start)."""
    try:
        log = open(path, "a", encoding="utf-8", errors="backslashreplace",
                   opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK, 0o666))
    except OSError as exc:
        reason = "a FIFO with no reader" if exc.errno == errno.ENXIO else exc.strerror
        _safe_write(stderr, f"Cannot open the log file {path} ({reason}); not logging.\n")
        return None
    os.set_blocking(log.fileno(), True)
    return log


def _safe_write(stream, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass


def identity_line(path: str | None, weights) -> str:
    """The engine's first stderr line: which program this is (the C++ Leela Zero answers
    `name` and `version` alike) and which network file it loaded, as an absolute path."""
    if path is None:
        return f"leelaz {__version__}: no network weights"
    shape = f" ({weights.blocks} blocks x {weights.filters} filters)" if weights else ""
    return f"leelaz {__version__}: weights {os.path.abspath(path)}{shape}"


def _numpy_version() -> str:
    import numpy
    return numpy.__version__


def _one_line(exc: BaseException) -> str:
    return " ".join((str(exc) or type(exc).__name__).split())


# ======== COMPOSITION ROOT: everything is wired together here, and only here. =============
def build_engine(cfg: EngineConfig, out=None, err=None, log=None, network=None,
                 weights_path: str | None = None, plan=None):
    """GameState + network + command groups -> a ready GtpEngine.

    The network (or None) is put on the session (gtp/session.py) before the command groups
    register, so their register(engine) can pick it up; each group fills in the session's
    fields it owns (the search and its hooks, the training buffer). `plan` (nn/loading.py's
    LoadPlan the network was opened with) is what helper search processes open; None: no
    helpers.
    """
    from leelaz.gtp import (board_commands, dynkomi_commands, network_commands, search_commands,
                            training_commands)
    from leelaz.gtp.engine import GtpEngine

    engine = GtpEngine(state=None, out=out, err=err, config=cfg, log=log)
    engine.session.network = network
    engine.session.weights_path = weights_path if network is not None else None  # printsgf PB
    engine.session.load_plan = plan if network is not None else None  # for helpers
    for group in (board_commands, network_commands, search_commands, training_commands,
                  dynkomi_commands):
        group.register(engine)
    return engine
# ==========================================================================================


def run(argv: list[str], stdin=None, stdout=None, stderr=None) -> int:
    """The whole program: parse, start up, serve GTP; returns the exit status."""
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    if is_verb(argv):  # `leelaz match ...`: only an exact verb name as the first argument
        return run_verb(argv)
    try:
        cfg = parse_args(argv)
    except UsageProblem as exc:
        stderr.write(f"ERROR: {exc}\nTry 'leelaz --help' for the options.\n")
        return 1
    if cfg is None:
        return 0
    log = None
    if cfg.logfile:
        log = open_log(cfg.logfile, stderr)  # "Logging to" follows the identity line
    try:
        return _start(cfg, stdin, stdout, stderr, log)
    finally:
        if log is not None:
            try:
                log.close()
            except OSError:
                pass


def _start(cfg: EngineConfig, stdin, stdout, stderr, log) -> int:
    say = Diagnostics(cfg, stderr, log)
    if not cfg.gtp and not cfg.benchmark:
        stdout.write(LICENCE)
        stdout.flush()
    path = find_weights(cfg)
    if cfg.weights is not None and not os.path.isfile(cfg.weights):
        stderr.write(f"Could not open weights file: {cfg.weights}\n")
        return 1
    from leelaz.nn import loading
    try:
        weights = loading.read_weights(path)
    except (OSError, ValueError) as exc:
        stderr.write(f"ERROR: {exc}\n")
        return 1
    say(identity_line(path, weights) + "\n")
    if log is not None and not cfg.quiet:
        _safe_write(stderr, f"Logging to {cfg.logfile}.\n")
    background = loading.opens_in_background(cfg)
    plan = loading.choose(cfg, weights, import_torch=not background)
    if plan.cpu_search:
        cfg = cfg.with_(cpu_only=True)
    try:
        threads, batch = resolve_threads(cfg)
    except ValueError as exc:
        stderr.write(f"ERROR: {exc}\n")
        return 1
    if not cfg.cpu_only:
        say(f"Using OpenCL batch size of {batch}\n")
    say(f"Using {threads} thread(s).\n")
    say(f"RNG seed: {cfg.seed}\n")
    say(f"BLAS Core: NumPy {_numpy_version()}.\n")  # GoReviewPartner waits for this line
    if weights is not None:
        from leelaz.backends.weights import weights_summary
        say(weights_summary(weights) + "\n")
    network = None
    if path is None:
        say("No network weights found (no -w, nothing at "
            f"{DEFAULT_WEIGHTS}, none shipped): only commands that need no network "
            "are available.\n")
    else:
        from leelaz.backends.base import BackendUnavailable

        def say_line(line: str) -> None:  # the plan's lines come without their newline
            say(line + "\n")

        if background and plan.backend == "torch" and plan.automatic:
            # GTP is answered while torch starts; the first search waits for it
            network = loading.open_in_background(cfg, plan, weights, log=say_line)
        else:
            try:
                network = plan.open_network(path, weights=weights, log=say_line)
            except BackendUnavailable as exc:
                if not plan.automatic:  # asked for by name: --backend torch
                    stderr.write(f"ERROR: {_one_line(exc)}\n")
                    return 1
                # PyTorch was the automatic choice (a CUDA GPU) and failed: OpenCL's, as
                # without it; the line above says so, the choice's own line is not added.
                say(loading.fallback_line(exc) + "\n")
                plan = replace(loading.choose(cfg, weights, torch=False), lines=())
                if plan.cpu_search:
                    cfg = cfg.with_(cpu_only=True)
                network = plan.open_network(path, weights=weights, log=say_line)
    if (network is not None and not getattr(network.backend, "expected_on_gpu", False)
            and network.backend.name == "numpy" and not cfg.cpu_only):
        # OpenCL failed after all (the line before says why): search as with --cpu-only,
        # and so do the helpers.
        cfg = cfg.with_(cpu_only=True)
        plan = replace(plan, backend="numpy", cpu_search=True)
        say(f"Using {resolve_threads(cfg)[0]} thread(s).\n")
    log = say.log  # None if it failed during the start
    if cfg.benchmark:
        return benchmark(cfg, network, stdout, stderr, log, path, plan)
    if cfg.tune_only:
        return 0  # the OpenCL backend tuned itself (and cached the result) while loading
    engine = build_engine(cfg, out=stdout, err=stderr, log=log, network=network,
                          weights_path=path, plan=plan)
    engine.console = not cfg.gtp  # Leela Zero's console mode (the program only, not every
    #                               engine built in-process from a default EngineConfig)
    problem = getattr(engine, "startup_problem", None)  # e.g. dyn_komi_test says unusable
    if problem:
        stderr.write(f"ERROR: {problem}\n")
        return 1
    try:
        return engine.run(stdin)
    finally:
        loading.wait_for_background(network)  # a quit while PyTorch still opens


#: The position Leela Zero's --benchmark searches (Leela.cpp benchmark()): White to move.
BENCHMARK_MOVES = (("b", "r16"), ("w", "d4"), ("b", "c3"))


def benchmark(cfg: EngineConfig, network, stdout, stderr, log, path: str | None,
              plan=None) -> int:
    """--benchmark: one search for White after b R16, w D4, b C3 with an infinite clock
    (time_settings 0 1 0), printing the search's own stderr lines, then exit 0.

    The start-up lines were silenced (cfg.quiet, as LZ sets cfg_quiet while loading); the
    search itself talks again, as LZ turns quiet off before benchmark(). Ponder, noise, -m,
    the seed and timemanage off come from _to_config.
    """
    from leelaz.game.coords import WHITE, parse_color, parse_gtp_vertex
    from leelaz.game.timecontrol import TimeControl

    if network is None:
        stderr.write("ERROR: --benchmark needs a network (-w FILE).\n")
        return 1
    engine = build_engine(cfg.with_(quiet=False), out=stdout, err=stderr, log=log,
                          network=network, weights_path=path, plan=plan)
    state = engine.session.state
    state.time_control = TimeControl.from_time_settings(0, 1, 0)  # infinite
    for color, move in BENCHMARK_MOVES:
        state.play(parse_color(color), parse_gtp_vertex(move))
    state.set_to_move(WHITE)
    engine.session.search.think(state, WHITE)
    return 0


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`leelaz`, `python -m leelaz`)."""
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        code = run(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        code = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            # The client closed it: don't let the interpreter's final flush complain.
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError):
                pass
    sys.exit(code)
