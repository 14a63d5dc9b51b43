"""Start-up settings, as frozen dataclasses with Leela Zero 0.17's defaults (src/GTP.cpp).

Owns: EngineConfig (everything the command line sets), DynKomiParams (the dynamic-komi
fork's flags, resolved and checked by resolve_dyn_komi) and where the network is found without
-w (`find_weights`, `shipped_weights`: the engine's and the verbs' rule). Imports: stdlib
only; anyone may import it. The thread and batch-size resolution that Leela.cpp does after
parsing lives with the rest of the batch policy in batching.py.

Settings are passed in through constructors, never read from globals. Values that change at
run time (lz-setoption visits, playouts, lagbuffer, resign percentage, pondering) live in the
objects that own them (the search parameters), seeded from here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

#: Where Leela Zero looks for a network when -w is not given.
DEFAULT_WEIGHTS = str(Path.home() / ".local" / "share" / "leela-zero" / "best-network")

TIMEMANAGE_CHOICES = ("auto", "on", "off", "fast", "no_pruning")
PRECISION_CHOICES = ("auto", "single", "half")
#: --backend (a leelaz extension): opencl = Leela Zero's choice (OpenCL, NumPy with
#: --cpu-only); torch = PyTorch (cuDNN on CUDA), the `torch` extra; auto = the engine's search
#: on PyTorch where torch sees CUDA (nn/loading.choose), else opencl's.
BACKEND_CHOICES = ("auto", "opencl", "torch")
#: --backend's help, as the verbs that take it say it (each with its own prefix).
BACKEND_HELP = ("auto: PyTorch where it sees CUDA (no --gpu, no --cpu-only), else OpenCL "
                "(NumPy with --cpu-only); opencl: Leela Zero's OpenCL; torch: PyTorch on CUDA "
                "--gpu ID.")


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
    network_backend: str = "auto"  # --backend (leelaz's): auto (as Leela Zero) or torch (CUDA ids)
    search_processes: int = 0  # --search-processes (leelaz's): trees searched at once; 0 auto
    full_tuner: bool = False  # --full-tuner: exhaustive OpenCL tuning (implies tune_only)
    tune_only: bool = False  # --tune-only: tune OpenCL, then exit
    batchsize: int = 0  # --batchsize: max NN batch, 0 = pick (see batching.resolve_threads)
    precision: str = "auto"  # --precision: single|half|auto
    precision_given: bool = False  # whether --precision was given (--full-tuner needs it)
    benchmark: bool = False  # --benchmark: search a fixed position, print stats, exit
    dyn_komi: "DynKomiParams" = field(default_factory=lambda: DynKomiParams())  # fork's flags
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


#: The largest float32 (FLT_MAX): the fork's "no cap" for --max-komi / --min-komi.
FLT_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class DynKomiParams:
    """The dynamic-komi fork's settings (alreadydone/lz komi+tensorbatch; docs/dynamic-komi.md
    §1), resolved: presets applied, then the explicit flags. With `enabled` False and
    `target_given` False the engine is plain Leela Zero 0.17 (standard colour planes)."""

    handicap: bool = False  # --handicap: the handicap preset (band .12/.06/.03, never resign)
    nonslack: bool = False  # --nonslack: the nonslack preset (band .9/.1/.1, snap-back to T)
    target_komi: float = 7.5  # --target-komi T: start komi for scoring and the network
    target_given: bool = False  # --target-komi was given: the network sees T even in no mode
    max_wr: float = 0.12  # --max-wr: top of White's winrate band
    min_wr: float = 0.06  # --min-wr: bottom of the band
    wr_margin: float = 0.03  # --wr-margin: targets are min+m and max-m
    max_komi: float = FLT_MAX  # --max-komi: cap on every trial komi
    min_komi: float = -FLT_MAX  # --min-komi: floor on every trial komi
    adj_positions: int = 200  # --adj-positions A (at least 8): positions collected per colour
    adj_pct: float = 4.0  # --adj-pct P: the percentage of A kept nearest the mean
    num_adj: int = 0  # --num-adj: in-search adjustments per genmove/lz-analyze (1 in modes)
    pos: bool = False  # --pos: discard values from the "neg" extrapolation region
    neg: bool = False  # --neg: discard values from the "pos" extrapolation region
    pos_neg_given: bool = False  # --pos or --neg came from the user (the start-up test honours it)
    fixed_symmetry: int = -1  # --fixed-symmetry: 0..7 fixed, -1 random
    sure_backup: bool = True  # --tg-sure-backup toggles: repeat until a valid value backs up
    orig_policy: bool = True  # --tg-orig-policy toggles: steps stop at +-7.5 before invalid
    dyn_fpu: bool = False  # --tg-dyn-fpu toggles (on in modes): FPU from the running mean
    auto_pn: bool = True  # --tg-auto-pn toggles: dyn_komi_test at start-up sets --pos/--neg

    @property
    def enabled(self) -> bool:
        """Dynamic komi is on (either mode)."""
        return self.handicap or self.nonslack

    @property
    def komi_in_planes(self) -> bool:
        """The colour planes carry a komi (a mode, or --target-komi given)."""
        return self.enabled or self.target_given

    @property
    def kept_positions(self) -> int:
        """N = ceil(A * P / 100): the records per colour kept for trial evaluations."""
        return max(1, math.ceil(self.adj_positions * self.adj_pct / 100.0 - 1e-9))

    def with_(self, **changes) -> "DynKomiParams":
        return replace(self, **changes)


def resolve_dyn_komi(flags: dict) -> DynKomiParams:
    """The fork's flags (None = not given; toggles counted) -> DynKomiParams, as Leela.cpp of
    the fork applies them: the presets first, then every explicit flag over them. Raises
    ValueError with a one-line reason for a value it must refuse (the fork accepts them and
    misbehaves; docs/dynamic-komi.md §1 and §9 list the fixes taken here).

    Keys: handicap, nonslack (bool); target_komi, max_wr, min_wr, wr_margin, max_komi,
    min_komi, adj_pct (float or None); adj_positions, num_adj, fixed_symmetry (int or None);
    pos, neg (bool); tg_sure_backup, tg_orig_policy, tg_dyn_fpu, tg_auto_pn (bool: toggle)."""
    handicap, nonslack = bool(flags.get("handicap")), bool(flags.get("nonslack"))
    p = DynKomiParams(handicap=handicap, nonslack=nonslack)
    if handicap or nonslack:
        band = (0.9, 0.1, 0.1) if nonslack else (0.12, 0.06, 0.03)  # nonslack wins if both
        p = p.with_(max_wr=band[0], min_wr=band[1], wr_margin=band[2], num_adj=1,
                    dyn_fpu=True)
    for name in ("target_komi", "max_wr", "min_wr", "wr_margin", "max_komi", "min_komi",
                 "adj_pct"):
        value = flags.get(name)
        if value is None:
            continue
        if not math.isfinite(value):
            raise ValueError(f"--{name.replace('_', '-')} must be a finite number, not {value}")
        p = p.with_(**{name: float(value)})
    if flags.get("target_komi") is not None:
        p = p.with_(target_given=True)
    if flags.get("adj_positions") is not None:
        p = p.with_(adj_positions=max(8, int(flags["adj_positions"])))  # the fork's minimum
    if flags.get("num_adj") is not None:
        p = p.with_(num_adj=int(flags["num_adj"]))
    if flags.get("fixed_symmetry") is not None:
        s = int(flags["fixed_symmetry"])
        p = p.with_(fixed_symmetry=s if 0 <= s <= 7 else -1)
    p = p.with_(pos=bool(flags.get("pos")), neg=bool(flags.get("neg")),
                pos_neg_given=bool(flags.get("pos") or flags.get("neg")),
                sure_backup=p.sure_backup != bool(flags.get("tg_sure_backup")),
                orig_policy=p.orig_policy != bool(flags.get("tg_orig_policy")),
                dyn_fpu=p.dyn_fpu != bool(flags.get("tg_dyn_fpu")),
                auto_pn=p.auto_pn != bool(flags.get("tg_auto_pn")))
    _check_dyn_komi(p)
    return p


def _check_dyn_komi(p: DynKomiParams) -> None:
    """Refuse settings the adjustment cannot work with (one line each)."""
    for name in ("max_wr", "min_wr", "wr_margin"):
        if not 0.0 <= getattr(p, name) <= 1.0:
            raise ValueError(f"--{name.replace('_', '-')} must be between 0 and 1, "
                             f"not {getattr(p, name)}")
    if p.max_wr < p.min_wr:
        raise ValueError(f"--max-wr ({p.max_wr}) is below --min-wr ({p.min_wr})")
    if p.max_komi < p.min_komi:
        raise ValueError(f"--max-komi ({p.max_komi}) is below --min-komi ({p.min_komi})")
    if not p.min_komi <= p.target_komi <= p.max_komi:
        raise ValueError(f"--target-komi {p.target_komi} is outside "
                         f"[--min-komi, --max-komi]")
    if not 0.0 < p.adj_pct <= 100.0:
        raise ValueError(f"--adj-pct must be in (0, 100], not {p.adj_pct}")
    if p.num_adj < 0:
        raise ValueError(f"--num-adj must be 0 or more, not {p.num_adj}")
    if p.pos and p.neg:
        raise ValueError("Cannot set both --pos and --neg.")


def find_weights(cfg: EngineConfig) -> str | None:
    """The network to load: -w, else Leela Zero's default path if it is a file, else the one
    shipped in the package (shipped_weights), else None; the engine's --help says so
    (cli._default_network_rule)."""
    if cfg.weights is not None:
        return cfg.weights
    if os.path.isfile(DEFAULT_WEIGHTS):
        return DEFAULT_WEIGHTS
    return shipped_weights()


def shipped_weights() -> str | None:
    """The network shipped with leelaz: the first *.gz by name in the checkout's weights/
    folder, else in the installed package's (where a wheel puts weights/: leelaz.weights)."""
    folders = [Path(__file__).resolve().parent.parent / "weights"]  # a checkout
    try:
        import leelaz.weights as pkg  # an installed package: weights/ becomes leelaz.weights

        folders += [Path(p) for p in pkg.__path__]
    except ImportError:
        pass
    for folder in folders:
        nets = sorted(folder.glob("*.gz")) if folder.is_dir() else []
        if nets:
            return str(nets[0])
    return None
