"""`play_match`: the server's gating match between two networks, games batched in one process.

Owns: `play_match`, `MatchResult`, reading a match folder back (`tally`). Imports: selfplay.*,
game.sgf, game.coords.

Game `i` gives network A Black when i is even (colours alternate, as the server's tasks do);
both sides get the same seed (autogtp's match line) and the match settings (`lz-gate`: 1600
visits, resign 5 %, no noise, no random moves, dumb pass). The games are stepped together by
selfplay/runner.py; each side's searches run on its own network and its own round batches,
so in a round A's leaves of all games form one network call and B's another.

The folder holds `match.json` (the two networks and the settings; a resumed match must be the
same match), one SGF per finished game (named as self-play games, selfplay/store.py) and
`result.json`, rewritten atomically after every game: wins, losses, draws (for A), games,
LLR, decision. A resumed match counts the SGFs already there. With `sprt`, no new game starts
once the SPRT decides; games in flight finish and count (dropping them would favour the
faster results).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass

from leelaz import files
from leelaz.game.coords import BLACK, WHITE
from leelaz.selfplay import sprt as sprt_rule
from leelaz.selfplay.game import GameInPlay, Player
from leelaz.selfplay.runner import EngineSide, GameRunner, SelfplayError, warn
from leelaz.selfplay.settings import MATCH_DEFAULTS, SelfplaySettings
from leelaz.selfplay.store import GameStore, StoreError

_RE = re.compile(r"RE\[([BW])\+")
_INDEX = re.compile(r"^(\d{6,})-")


@dataclass
class MatchResult:
    """The match so far, from A's side."""

    wins: int
    losses: int
    draws: int
    games: int
    llr: float
    decision: str | None  # "H1" (A is stronger), "H0", or None (no decision yet)
    elo: float
    weights_a: str = ""
    weights_b: str = ""
    seconds: float = 0.0
    moves: int = 0

    def line(self) -> str:
        verdict = {sprt_rule.H1: "H1 (A is stronger)", sprt_rule.H0: "H0 (A is not stronger)",
                   None: "no decision"}[self.decision]
        return (f"A {self.wins} - {self.losses} B ({self.games} games, Elo {self.elo:+.0f}); "
                f"SPRT(0,35) LLR {self.llr:.3f}: {verdict}")


def play_match(weights_a: str, weights_b: str, out_dir: str, *, max_games: int,
               sprt: bool = True, visits: int = 1600, parallel: int = 8, seed=None,
               cpu_only=False, gpus=(), progress=True, max_moves: int | None = None,
               **engine_options) -> MatchResult:
    """Play A against B into `out_dir` until `max_games` games (or, with `sprt`, a decision).

    Games already in `out_dir` count. Raises SelfplayError for bad input."""
    if max_games < 1:
        raise SelfplayError(f"the game cap must be at least 1, not {max_games}")
    settings = SelfplaySettings.build(MATCH_DEFAULTS, seed=seed, cpu_only=cpu_only, gpus=gpus,
                                      weights=weights_a, visits=visits, no_resign_share=0.0,
                                      **({"max_moves": max_moves} if max_moves else {}),
                                      **engine_options)
    for path in (weights_a, weights_b):
        if not os.path.isfile(path):
            raise SelfplayError(f"weights file not found: {path}")
    try:
        store = GameStore(out_dir)
    except StoreError as exc:
        raise SelfplayError(str(exc)) from None
    try:
        _check_same_match(store.folder, weights_a, weights_b, settings)
        return _run(settings, weights_a, weights_b, store, max_games, sprt, parallel, progress)
    finally:
        store.close()


def _run(settings, weights_a, weights_b, store, max_games, sprt, parallel, progress):
    wins, losses = tally(store.folder)
    began = time.monotonic()
    result = _result(wins, losses, weights_a, weights_b)
    decided = sprt and result.decision is not None
    wanted = max_games - result.games
    if wanted <= 0 or decided:
        _write_result(store.folder, result)
        return result
    parallel = max(1, min(parallel, wanted))
    cfg = settings.engine
    rows = parallel * settings.leaves_per_batch
    side_a = EngineSide(weights_a, cpu_only=cfg.cpu_only, gpus=cfg.gpus,
                        precision=cfg.precision, batch_rows=rows, max_batch=cfg.batchsize)
    side_b = EngineSide(weights_b, cpu_only=cfg.cpu_only, gpus=cfg.gpus,
                        precision=cfg.precision, batch_rows=rows, max_batch=cfg.batchsize)
    score = {"wins": wins, "losses": losses, "handed": 0, "moves": 0}
    params = settings.search_params()
    lookups = not cfg.noise and cfg.randomcnt == 0

    def next_job():
        if score["handed"] >= wanted:
            return None
        score["handed"] += 1
        return store.next_index()

    def new_game(index, group, runner):
        seed = settings.game_seed(index)
        a = Player.create(side_a.weights, side_a.backend_for(group), weights_a, params, seed,
                          settings.cache_size(), lookups)
        b = Player.create(side_b.weights, side_b.backend_for(group), weights_b, params, seed,
                          settings.cache_size(), lookups)
        players = {BLACK: a, WHITE: b} if a_is_black(index) else {BLACK: b, WHITE: a}
        return GameInPlay(players, options=settings.option_text(seed, False),
                          max_moves=settings.max_moves, record=False,
                          resign_pct=params.resign_pct, should_stop=runner.stopping,
                          on_move=runner.on_move)

    def commit(index, game):
        try:
            store.commit(index, sgf=game.sgf)
        except OSError as exc:
            raise SelfplayError(f"cannot write games to {store.folder}: "
                                f"{exc.strerror or exc}") from None
        a_won = (game.winner == BLACK) == a_is_black(index)
        score["wins" if a_won else "losses"] += 1
        score["moves"] += game.moves
        now = _result(score["wins"], score["losses"], weights_a, weights_b)
        _write_result(store.folder, now)
        if progress:
            warn(f"game {now.games}: {'A' if a_won else 'B'} won ({game.result}); "
                 f"{now.line()}")
        if sprt and now.decision is not None:
            runner.finish_soft()

    runner = GameRunner(parallel, next_job, new_game, commit, [side_a, side_b])
    stats = runner.run()
    final = _result(score["wins"], score["losses"], weights_a, weights_b)
    final.seconds = time.monotonic() - began
    final.moves = stats.moves
    _write_result(store.folder, final)
    return final


def a_is_black(index: int) -> bool:
    """Colours alternate: A has Black in even-numbered games."""
    return index % 2 == 0


def tally(folder: str) -> tuple[int, int]:
    """(A's wins, A's losses) over the finished games in a match folder."""
    wins = losses = 0
    for name in sorted(os.listdir(folder)):
        m = _INDEX.match(name)
        if not m or not name.endswith(".sgf"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            found = _RE.search(f.read())
        if found is None:
            continue
        black_won = found.group(1) == "B"
        if black_won == a_is_black(int(m.group(1))):
            wins += 1
        else:
            losses += 1
    return wins, losses


def _result(wins, losses, weights_a, weights_b) -> MatchResult:
    games = wins + losses
    return MatchResult(wins=wins, losses=losses, draws=0, games=games,
                       llr=sprt_rule.llr(wins, losses), decision=sprt_rule.decide(wins, losses),
                       elo=sprt_rule.elo(wins, games), weights_a=weights_a, weights_b=weights_b)


def _write_result(folder: str, result: MatchResult) -> None:
    data = asdict(result)
    if data["elo"] in (float("inf"), -float("inf")):
        data["elo"] = None  # a shutout: JSON has no infinity
    files.write_text_atomic(os.path.join(folder, "result.json"),
                            json.dumps(data, indent=2, sort_keys=True) + "\n")


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as exc:
        raise SelfplayError(f"cannot read weights {path}: {exc.strerror or exc}") from None


def _check_same_match(folder: str, weights_a: str, weights_b: str, settings) -> None:
    """Write match.json, or check that the folder's match is this one."""
    cfg = settings.engine
    identity = {"a_sha256": _digest(weights_a), "b_sha256": _digest(weights_b),
                "visits": cfg.visits, "playouts": cfg.playouts, "resignpct": cfg.resignpct,
                "noise": cfg.noise, "randomcnt": cfg.randomcnt, "seed": settings.seed}
    path = os.path.join(folder, "match.json")
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = None
        if old != identity:
            raise SelfplayError(f"{folder} holds another match (networks or settings differ); "
                                "use a new folder")
        return
    files.write_text_atomic(path, json.dumps(identity, indent=2, sort_keys=True) + "\n")
