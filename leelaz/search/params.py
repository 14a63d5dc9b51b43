"""Search configuration: one frozen dataclass with Leela Zero 0.17's defaults.

Owns: `SearchParams`, its mapping from the command-line settings (`SearchParams.from_config`,
used by the engine and self-play alike) and the `UNLIMITED` sentinel. Imports: stdlib,
leelaz.batching and leelaz.memory (the batch policy's and the tree limit's defaults).

`from_config` maps the command-line flags (config.EngineConfig) into it; lz-setoption
replaces it with `dataclasses.replace(...)` and assigns `UCTSearch.params`. Nothing in
search/ reads globals. Flag names are given per field (as Leela Zero's src/Leela.cpp spells
them).
"""

from __future__ import annotations

from dataclasses import dataclass

from leelaz.batching import (MIN_PENDING_LEAVES, VISITS_PER_PENDING_LEAF, play_batch_size,
                             search_batch_size)
from leelaz.memory import DEFAULT_MAX_TREE_BYTES

#: Stand-in for "no limit" on playouts and visits (LZ uses INT_MAX / 2).
UNLIMITED = 2**62

TIMEMANAGE_MODES = ("auto", "on", "off", "fast", "no_pruning")


@dataclass(frozen=True)
class SearchParams:
    # --- PUCT selection (UCTNode::uct_select_child) ---
    c_puct: float = 0.5  # exploration constant (cfg_puct)
    log_puct: float = 0.015  # numerator = sqrt(Npar * ln(log_puct * Npar + log_const))
    log_const: float = 1.7
    fpu_reduction: float = 0.25  # first-play urgency: net value - r * sqrt(visited policy)
    fpu_root_reduction: float = 0.25  # same at the root; the search uses 0 when noise is on
    virtual_loss: int = 3  # virtual visits counted as losses per pending playout per node
    lcb_min_visit_ratio: float = 0.10  # LCB ordering needs visits > ratio * max child visits
    dynamic_fpu: bool = False  # FPU from the parent's running mean (dynamic komi, --tg-dyn-fpu)
    fixed_symmetry: int = -1  # --fixed-symmetry: 0..7 for every leaf evaluation, -1 random

    # --- limits (-p, -v, memory) ---
    max_playouts: int = UNLIMITED  # -p/--playouts; 0 on the command line means UNLIMITED
    max_visits: int = UNLIMITED  # -v/--visits; root visits, reused ones count
    max_tree_bytes: int = DEFAULT_MAX_TREE_BYTES  # tree limit, LZ's accounting (leelaz/memory.py)

    # --- time (--timemanage; the clock itself lives in the GameState's TimeControl) ---
    timemanage: str = "auto"  # auto|on|off|fast|no_pruning; auto = no_pruning with noise, else on
    lagbuffer_cs: int = 100  # -b/--lagbuffer: safety margin per move, centiseconds

    # --- self-play randomness (-n, -m, --randomvisits, --randomtemp) ---
    noise: bool = False  # Dirichlet noise on the root priors at every root preparation
    dirichlet_alpha: float = 0.03  # 0.03 * 361 / NUM_INTERSECTIONS
    dirichlet_epsilon: float = 0.25  # P <- (1 - eps) * P + eps * eta
    random_count: int = 0  # -m: sample the played move while the move number is below this
    random_visits: int = 1  # --randomvisits: only children with more visits are sampled
    random_temp: float = 1.0  # --randomtemp: weight = (visits / first visits) ** (1 / temp)
    #: KataGo's forced playouts at the root (self-play's full searches; 0 = off, as Leela
    #: Zero): a visited root child is selected while its visits are below
    #: sqrt(k * prior * total child visits) (search/node.py `forced_visits`).
    forced_playouts_k: float = 0.0

    # --- move choice (-d, -r) ---
    dumbpass: bool = False  # -d: pass is always a child; no pass heuristics at the end
    resign_pct: int = -1  # -r: -1 = 10% scaled for handicap, 0 = never, else x%

    # --- Python specifics ---
    batch_size: int = 8  # leaves collected under virtual loss per evaluate() call (LZ: threads)
    #: The same for a move on the clock (think); 0 = batch_size. Pondering uses batch_size.
    play_batch_size: int = 0
    #: Leaves waiting for the network at once are capped at root visits / this (0 = no cap),
    #: but never below min_pending_leaves: the ramp of leelaz/batching.py, which says why.
    visits_per_pending_leaf: int = VISITS_PER_PENDING_LEAF
    min_pending_leaves: int = MIN_PENDING_LEAVES
    ponder: bool = True  # think on the opponent's time (--noponder turns it off)
    quiet: bool = False  # -q: no stderr diagnostics from the search

    @classmethod
    def from_config(cls, cfg, batch_size: int | None = None) -> SearchParams:
        """SearchParams from the command-line settings (EngineConfig); the batch sizes default
        to batching.search_batch_size(cfg) and, on the clock, batching.play_batch_size(cfg)."""
        play = 0
        if batch_size is None:
            batch_size = search_batch_size(cfg)
            play = play_batch_size(cfg)
        return cls(
            max_playouts=cfg.playouts or UNLIMITED, max_visits=cfg.visits or UNLIMITED,
            timemanage=cfg.timemanage, lagbuffer_cs=cfg.lagbuffer, noise=cfg.noise,
            random_count=cfg.randomcnt, random_visits=cfg.randomvisits,
            random_temp=cfg.randomtemp, dumbpass=cfg.dumbpass, resign_pct=cfg.resignpct,
            ponder=cfg.ponder, quiet=cfg.quiet, batch_size=max(1, batch_size),
            play_batch_size=play)

    def effective_timemanage(self) -> str:
        """The mode in force: `auto` resolves to no_pruning with noise, otherwise on."""
        if self.timemanage == "auto":
            return "no_pruning" if self.noise else "on"
        return self.timemanage

    def root_fpu_reduction(self) -> float:
        """FPU reduction at the root: 0 with noise, as LZ sets cfg_fpu_root_reduction."""
        return 0.0 if self.noise else self.fpu_root_reduction
