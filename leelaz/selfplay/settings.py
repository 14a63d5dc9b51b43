"""Self-play and match settings: Leela Zero's autogtp defaults, in the engine's own flag names.

Owns: `SelfplaySettings`, the per-game seed and the no-resign draw, and the `leelaz`-style
option text written into each SGF. Imports: stdlib, config, search.params (the one
EngineConfig -> SearchParams mapping, `SearchParams.from_config`).

autogtp's self-play line is `leelaz -p 0 -v 1601 -r 5 -m 30 -t 6 --batchsize 5 -d -n
--noponder -s SEED` with 10 % of the tasks at `-r 0`; a match gives both engines `-v 1600 -r 5
-m 0 -d --noponder` (no `-n`) and the same seed (autogtp/Management.cpp). Every
engine option is overridable with the `EngineConfig` field of its flag (`visits`, `resignpct`,
`noise`, `randomcnt`, `dumbpass`, `threads`, ...).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field

from leelaz.config import EngineConfig
from leelaz.search.params import SearchParams

#: autogtp's self-play options (leela-zero-server's server.js, /get-task, since 2019).
SELFPLAY_DEFAULTS = dict(visits=1601, noise=True, randomcnt=30, resignpct=5, dumbpass=True,
                         ponder=False, quiet=True)
#: The server's match options (server.js, /request-match): the `lz-gate` preset.
MATCH_DEFAULTS = dict(visits=1600, noise=False, randomcnt=0, resignpct=5, dumbpass=True,
                      ponder=False, quiet=True)
#: Share of self-play games played out without resigning (server since 2018-09).
NO_RESIGN_SHARE = 0.1
#: autogtp stops a game after more than this many moves (autogtp/Game.cpp).
MAX_MOVES = 722
#: A cheap search's visits are a full one's divided by this (KataGo's 600 of 100 .. 1/6-1/8).
CHEAP_DIVISOR = 8
#: Leaves in flight per game when -t is not given: autogtp's `-t 6`.
AUTOGTP_THREADS = 6
#: Engine options accepted as keyword arguments (EngineConfig fields a search uses).
ENGINE_OPTIONS = ("visits", "playouts", "resignpct", "noise", "randomcnt", "randomvisits",
                  "randomtemp", "dumbpass", "threads", "batchsize", "precision", "timemanage",
                  "full_tuner", "network_backend")


@dataclass(frozen=True)
class SelfplaySettings:
    """Everything that decides how the games are played (not where they go)."""

    engine: EngineConfig  # the engine flags, as `leelaz` would have them
    no_resign_share: float = NO_RESIGN_SHARE  # games drawn to be played out with -r 0
    max_moves: int = MAX_MOVES  # a game ends after more than this many moves
    seed: int | None = None  # run seed: per-game seeds derive from it (None = random)
    cache_entries: int = 0  # NN cache per game; 0 = enough for one move's search, x 8
    extra: dict = field(default_factory=dict)  # settings shown in the SGF comment
    # KataGo's additions (selfplay/targets.py); the defaults are Leela Zero's self-play
    full_share: float = 1.0  # playout-cap randomisation: share of moves searched fully
    cheap_visits: int = 0  # the other moves' visits (0 = a full search's / CHEAP_DIVISOR)
    forced_k: float = 0.0  # forced playouts and target pruning at full searches (KataGo: 2)
    komi_spread: float = 0.0  # komi randomisation: standard deviation in points (0 = 7.5)

    @classmethod
    def build(cls, defaults: dict, *, seed=None, cpu_only=False, gpus=(), weights="",
              no_resign_share: float = NO_RESIGN_SHARE, max_moves: int = MAX_MOVES,
              full_share: float = 1.0, cheap_visits: int = 0, forced_k: float = 0.0,
              komi_spread: float = 0.0, **engine_options) -> "SelfplaySettings":
        unknown = set(engine_options) - set(ENGINE_OPTIONS)
        if unknown:
            raise TypeError(f"unknown engine option(s): {', '.join(sorted(unknown))}")
        options = {**defaults, **{k: v for k, v in engine_options.items() if v is not None}}
        cfg = EngineConfig(weights=weights, cpu_only=cpu_only, gpus=tuple(gpus), seed=seed,
                           seed_given=seed is not None, **options)
        return cls(engine=cfg, no_resign_share=no_resign_share, max_moves=max_moves,
                   seed=seed, full_share=full_share, cheap_visits=cheap_visits,
                   forced_k=forced_k, komi_spread=komi_spread)

    # ---- the search ---------------------------------------------------------------------
    @property
    def leaves_per_batch(self) -> int:
        """Leaves each game's search collects per evaluation (LZ's threads; autogtp's 6)."""
        return max(1, self.engine.threads or AUTOGTP_THREADS)

    def search_params(self, no_resign: bool = False) -> SearchParams:
        """A full search's parameters: the engine's, with forced playouts when asked for."""
        cfg = self.engine.with_(resignpct=0) if no_resign else self.engine
        params = SearchParams.from_config(cfg, self.leaves_per_batch)
        if self.forced_k > 0:
            params = dataclasses.replace(params, forced_playouts_k=self.forced_k)
        return params

    @property
    def capped(self) -> bool:
        """Playout-cap randomisation is on: some moves get a cheap search."""
        return self.full_share < 1.0

    def cheap_limit(self) -> int:
        """A cheap search's visits: --cheap-visits, else a full search's / CHEAP_DIVISOR."""
        if self.cheap_visits:
            return self.cheap_visits
        full = self.engine.visits or self.engine.playouts
        return max(1, full // CHEAP_DIVISOR)

    def cheap_params(self, full: SearchParams) -> SearchParams:
        """A cheap search (playout-cap randomisation): no noise, no forced playouts, the
        cheap visit limit, and the full search's time management (self-play's no_pruning
        stays, though `auto` would resolve to `on` without noise)."""
        limit = self.cheap_limit()
        return dataclasses.replace(
            full, noise=False, forced_playouts_k=0.0, timemanage=full.effective_timemanage(),
            max_visits=min(full.max_visits, limit), max_playouts=min(full.max_playouts, limit))

    def cache_size(self) -> int:
        if self.cache_entries:
            return self.cache_entries
        visits = self.engine.visits or self.engine.playouts or 1600
        return max(4096, 8 * visits)

    # ---- per game ------------------------------------------------------------------------
    def game_seed(self, index: int) -> int:
        """The seed of game `index`: from the run seed when given (so a rerun replays the
        same games), else random. 64 bits, never 0 (autogtp drops `-s 0`)."""
        if self.seed is None:
            return int.from_bytes(os.urandom(8), "little") or 1
        digest = hashlib.sha256(f"{self.seed}:{index}".encode()).digest()
        return int.from_bytes(digest[:8], "little") or 1

    def no_resign(self, game_seed: int) -> bool:
        """Whether this game is one of the played-out share (drawn from its seed)."""
        draw = hashlib.sha256(f"no-resign:{game_seed}".encode()).digest()
        return int.from_bytes(draw[:4], "little") / 2**32 < self.no_resign_share

    def option_text(self, game_seed: int, no_resign: bool) -> str:
        """The game's settings as `leelaz` flags (the SGF's `Leela Zero options:` comment)."""
        cfg = self.engine
        parts = []
        if cfg.playouts:
            parts.append(f"-p {cfg.playouts}")
        if cfg.visits:
            parts.append(f"-v {cfg.visits}")
        parts.append(f"-r {0 if no_resign else cfg.resignpct}")
        parts.append(f"-m {cfg.randomcnt}")
        parts.append(f"-t {self.leaves_per_batch}")
        if cfg.dumbpass:
            parts.append("-d")
        if cfg.noise:
            parts.append("-n")
        if cfg.randomvisits != 1:
            parts.append(f"--randomvisits {cfg.randomvisits}")
        if cfg.randomtemp != 1.0:
            parts.append(f"--randomtemp {cfg.randomtemp:g}")
        parts.append("--noponder")
        parts.append(f"-s {game_seed}")
        if self.capped:  # not engine flags: `leelaz selfplay`'s, for whoever reads the SGF
            parts.append(f"--full-share {self.full_share:g} --cheap-visits {self.cheap_limit()}")
        if self.forced_k > 0:
            parts.append(f"--forced-playouts {self.forced_k:g}")
        if self.komi_spread > 0:
            parts.append(f"--komi-spread {self.komi_spread:g}")
        return " " + " ".join(parts)

    def with_engine(self, **changes) -> "SelfplaySettings":
        return dataclasses.replace(self, engine=self.engine.with_(**changes))
