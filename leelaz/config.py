"""Start-up settings, as frozen dataclasses with Leela Zero 0.17's defaults (reference §2).

Owns: EngineConfig (everything the command line sets). Imports: stdlib only; anyone may import
it. The thread and batch-size resolution that Leela.cpp does after parsing lives with the rest
of the batch policy in batching.py.

Settings are passed in through constructors, never read from globals. Values that change at
run time (lz-setoption visits, playouts, lagbuffer, resign percentage, pondering) live in the
objects that own them (the search parameters), seeded from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

#: Where Leela Zero looks for a network when -w is not given.
DEFAULT_WEIGHTS = str(Path.home() / ".local" / "share" / "leela-zero" / "best-network")

TIMEMANAGE_CHOICES = ("auto", "on", "off", "fast", "no_pruning")
PRECISION_CHOICES = ("auto", "single", "half")


@dataclass(frozen=True)
class EngineConfig:
    """Every command-line setting. Defaults are Leela Zero 0.17's."""

    weights: str | None = None  # -w: network file; None = not given (try the defaults)
    gtp: bool = False  # -g: GTP mode (no licence blurb on stdout)
    quiet: bool = False  # -q: no diagnostic output on stderr (nor in the log)
    logfile: str | None = None  # -l: append input (>>line), replies and diagnostics here
    lagbuffer: int = 100  # -b: centiseconds kept in reserve from each move's time budget
    timemanage: str = "auto"  # auto|on|off|fast|no_pruning; auto = no_pruning with -n, else on
    ponder: bool = True  # False with --noponder: no thinking on the opponent's time
    resignpct: int = -1  # -r: resign below x% winrate; 0 never; -1 = 10% scaled for handicap
    playouts: int = 0  # -p: playouts per search call, 0 = unlimited (needs --noponder)
    visits: int = 0  # -v: stop when the root has this many visits, 0 = unlimited
    threads: int = 0  # -t: search threads as given, 0 = pick (see batching.resolve_threads)
    seed: int | None = None  # -s: main RNG seed (uint64); None = random, printed in SGF comment
    seed_given: bool = False  # whether -s was given (a random seed goes into the SGF comment)
    noise: bool = False  # -n: Dirichlet noise at the root (self-play)
    dumbpass: bool = False  # -d: no pass heuristics; pass is always a candidate
    randomcnt: int = 0  # -m: sample the move proportionally for root move numbers below this
    randomvisits: int = 1  # --randomvisits: moves with <= this many visits are never sampled
    randomtemp: float = 1.0  # --randomtemp: temperature of that sampling
    cpu_only: bool = False  # --cpu-only: no OpenCL device
    gpus: tuple[int, ...] = ()  # --gpu (repeatable): OpenCL device ids; () = autodetect
    full_tuner: bool = False  # --full-tuner: exhaustive OpenCL tuning (implies tune_only)
    tune_only: bool = False  # --tune-only: tune OpenCL, then exit
    batchsize: int = 0  # --batchsize: max NN batch, 0 = pick (see batching.resolve_threads)
    precision: str = "auto"  # --precision: single|half|auto
    precision_given: bool = False  # whether --precision was given (--full-tuner needs it)
    benchmark: bool = False  # --benchmark: search a fixed position, print stats, exit
    command_line: tuple[str, ...] = field(default=())  # argv after the program name, for
    #                                                    printsgf's "Leela Zero options" comment

    @property
    def effective_timemanage(self) -> str:
        """`auto` resolved: no_pruning with noise, else on."""
        if self.timemanage == "auto":
            return "no_pruning" if self.noise else "on"
        return self.timemanage

    @property
    def sgf_options(self) -> str:
        """The argv part of printsgf's comment: ` <arg>` per argument, then ` --seed N` when
        the seed was random (so the game can be replayed)."""
        text = "".join(" " + a for a in self.command_line)
        if not self.seed_given and self.seed is not None:
            text += f" --seed {self.seed}"
        return text

    @property
    def sgf_options_comment(self) -> str:
        """printsgf's C[] text: `Leela Zero options: <argv>[ --seed N]`."""
        return "Leela Zero options:" + self.sgf_options

    def with_(self, **changes) -> "EngineConfig":
        return replace(self, **changes)
