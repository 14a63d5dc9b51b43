"""`play_match`: the server's gating match between two networks, games batched in a process.

Owns: `play_match`, `MatchResult`, the shards of a match (`shard_of`, `shard_indices`), reading
a match folder back (`tally`). Imports: selfplay.*, game.sgf, game.coords, files,
backends.weights (a network is checked to load before a folder is bound to it).

Game `i` gives network A Black when i is even (colours alternate, as the server's tasks do);
both sides get the same seed (autogtp's match line) and the match settings (`lz-gate`: 1600
visits, resign 5 %, no noise, no random moves, dumb pass). The games are stepped together by
selfplay/runner.py; each side's searches run on its own network and its own round batches,
so in a round A's leaves of all games form one network call and B's another.

One match may be played by W processes at once (`shard=(s, W)`, the Zero loop's gating match
on its workers): shard s plays the games `shard_of(i, W) == s` of 0..max_games-1, pairs of
games dealt round robin, so every shard plays both colours equally often and no two
processes ever write the same game. Together they are exactly one match: before a shard
starts a game it re-reads the folder (every shard's finished games), and once the SPRT has
decided no shard starts another. With W = 1 this is the single-process match.

The SPRT reads the games in their index order (`sequential_decision`), not in the order they
finish: with many games in flight the first to finish are the short ones (a side resigning
early), a biased sample, and a test on them can decide what the whole match would not (on
the H100, 8 shards of 24 games stopped both gating matches of a run before their 250 games
with no decision left once the games in flight were in: 106-96 and 102-100). Read in index order, the decision and the game at which it falls do not depend on
timing or on the number of processes; games played past that point (in flight when it fell)
are kept and reported (`played`), but do not change it.

The folder holds `match.json` (the two networks and the settings; a resumed match must be the
same match; published once, so W processes starting together agree or fail), one SGF per
finished game (named as self-play games, selfplay/store.py) and `result.json`, rewritten
atomically after every game from the folder's tally, under a lock, so the last write of the
last shard to end holds every game: wins, losses, draws (for A), games, LLR, decision; its
`seconds` and `moves` are those of the process that wrote it (the whole match's with one
process). A resumed shard counts the SGFs already there and plays only its missing games.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass

from leelaz import files
from leelaz.game.coords import BLACK, WHITE
from leelaz.game.sgf import text_winner
from leelaz.selfplay import sprt as sprt_rule
from leelaz.selfplay.game import GameInPlay, Player
from leelaz.selfplay.runner import EngineSide, GameRunner, SelfplayError, warn
from leelaz.selfplay.settings import MATCH_DEFAULTS, SelfplaySettings
from leelaz.selfplay.store import GameStore, StoreError

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
    played: int = 0  # finished games in the folder (more than `games` past a decision)
    weights_a: str = ""
    weights_b: str = ""
    seconds: float = 0.0
    moves: int = 0

    def line(self) -> str:
        verdict = {sprt_rule.H1: "H1 (A is stronger)", sprt_rule.H0: "H0 (A is not stronger)",
                   None: "no decision"}[self.decision]
        return (f"A {self.wins} - {self.losses} B ({self.games} games, "
                f"{sprt_rule.elo_text(self.wins, self.games)}); "
                f"SPRT(0,35) LLR {self.llr:.3f}: {verdict}")


def play_match(weights_a: str, weights_b: str, out_dir: str, *, max_games: int,
               sprt: bool = True, visits: int = 1600, parallel: int = 8, seed=None,
               cpu_only=False, gpus=(), progress=True, max_moves: int | None = None,
               shard: tuple[int, int] = (0, 1), **engine_options) -> MatchResult:
    """Play A against B into `out_dir` until `max_games` games (or, with `sprt`, a decision).

    Games already in `out_dir` count. `shard=(s, W)`: this process plays shard s of a match
    that W processes play into `out_dir` together (see the module docstring); the result is
    the whole folder's. Raises SelfplayError for bad input."""
    if max_games < 1:
        raise SelfplayError(f"the game cap must be at least 1, not {max_games}")
    index, shards = shard
    if not 0 <= index < shards:
        raise SelfplayError(f"shard {index} of {shards} does not exist")
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
        if not os.path.exists(os.path.join(store.folder, "match.json")):
            for path in (weights_a, weights_b):  # before the folder is bound to them
                _check_loads(path)
        _check_same_match(store.folder, weights_a, weights_b, settings)
        return _run(settings, weights_a, weights_b, store, max_games, sprt, parallel, progress,
                    shard)
    except OSError as exc:  # a full disk or a read-only folder under result.json, match.json
        raise SelfplayError(f"cannot write the match to {store.folder}: "
                            f"{exc.strerror or exc}") from None
    finally:
        store.close()


def _check_loads(path: str) -> None:
    """SelfplayError naming the file unless it loads as a network: match.json binds the
    folder to the files' sha256, so it is published only for networks that load (a file
    fixed after a failed start is then still this folder's match)."""
    from leelaz.backends.weights import WeightsError, load_weights

    try:
        load_weights(path)
    except (OSError, WeightsError, ValueError, EOFError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise SelfplayError(f"cannot load weights {path}: {text}") from None


def _run(settings, weights_a, weights_b, store, max_games, sprt, parallel, progress, shard):
    folder = _FolderTally(store.folder)
    began = time.monotonic()
    outcomes = folder.read_outcomes()
    todo = [i for i in shard_indices(*shard, max_games) if i not in outcomes]
    decided = sprt and sequential_decision(outcomes)[2] is not None
    if not todo or len(outcomes) >= max_games or decided:
        return _publish(folder, weights_a, weights_b, sprt)
    parallel = max(1, min(parallel, len(todo)))
    cfg = settings.engine
    rows = parallel * settings.leaves_per_batch
    side_a = EngineSide(weights_a, cpu_only=cfg.cpu_only, gpus=cfg.gpus,
                        precision=cfg.precision, batch_rows=rows, max_batch=cfg.batchsize,
                        network_backend=cfg.network_backend)
    side_b = EngineSide(weights_b, cpu_only=cfg.cpu_only, gpus=cfg.gpus,
                        precision=cfg.precision, batch_rows=rows, max_batch=cfg.batchsize,
                        network_backend=cfg.network_backend)
    in_flight = [0]
    params = settings.search_params()
    lookups = not cfg.noise and cfg.randomcnt == 0

    def next_job():
        """This shard's next missing game, unless the match (all shards) is over: read when
        a slot frees, so a decision by any shard stops every shard's new games."""
        if not todo:
            return None
        outcomes = folder.read_outcomes()
        if sprt and sequential_decision(outcomes)[2] is not None:
            return None
        while todo and todo[0] in outcomes:  # only an earlier try of this shard still running
            todo.pop(0)
        if not todo or len(outcomes) + in_flight[0] >= max_games:
            return None
        in_flight[0] += 1
        return todo.pop(0)

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
        in_flight[0] -= 1
        a_won = (game.winner == BLACK) == a_is_black(index)
        now = _publish(folder, weights_a, weights_b, sprt)
        if progress:
            warn(f"game {now.games}: {game_line(a_won, game.winner, game.result)}; "
                 f"{now.line()}")
        if sprt and now.decision is not None:
            runner.finish_soft()

    runner = GameRunner(parallel, next_job, new_game, commit, [side_a, side_b])
    stats = runner.run()
    return _publish(folder, weights_a, weights_b, sprt, seconds=time.monotonic() - began,
                    moves=stats.moves)


def game_line(a_won: bool, winner: int, result: str) -> str:
    """`network B won with White (W+104.5)`: the network, its colour, then the SGF result,
    whose letter is the colour (never the network)."""
    colour = "Black" if winner == BLACK else "White"
    return f"network {'A' if a_won else 'B'} won with {colour} ({result})"


def a_is_black(index: int) -> bool:
    """Colours alternate: A has Black in even-numbered games."""
    return index % 2 == 0


def shard_of(index: int, shards: int) -> int:
    """The shard that plays game `index`: pairs of games (A Black, then A White) are dealt to
    the shards in turn, so each shard plays both colours equally often."""
    return (index // 2) % shards


def shard_indices(shard: int, shards: int, max_games: int) -> list[int]:
    """Shard `shard` of `shards`'s games of 0..max_games-1, in order."""
    return [i for i in range(max_games) if shard_of(i, shards) == shard]


def tally(folder: str) -> tuple[int, int]:
    """(A's wins, A's losses) over the finished games in a match folder."""
    outcomes = _FolderTally(folder).read_outcomes()
    return _count(outcomes.values())


def sequential_decision(outcomes: dict[int, bool | None]) -> tuple[int, int, str | None]:
    """(A's wins, A's losses, decision) of the SPRT read along games 0, 1, 2, ... in index
    order, up to the first game not finished yet: the first decision met, with the count at
    that game, else the count of that prefix and None. Games without a result are skipped."""
    wins = losses = 0
    index = 0
    while index in outcomes:
        a_won = outcomes[index]
        index += 1
        if a_won is None:
            continue
        wins, losses = wins + a_won, losses + (not a_won)
        decision = sprt_rule.decide(wins, losses)
        if decision is not None:
            return wins, losses, decision
    return wins, losses, None


def _count(a_won_values) -> tuple[int, int]:
    values = list(a_won_values)
    return sum(1 for v in values if v is True), sum(1 for v in values if v is False)


class _FolderTally:
    """The finished games of a match folder, read again on each call: a finished SGF never
    changes (it appears by rename), so each is parsed once and a call costs a listing."""

    def __init__(self, folder: str):
        self.folder = folder
        self._seen: dict[str, tuple[int, bool | None]] = {}  # name -> (index, A won)

    def read_outcomes(self) -> dict[int, bool | None]:
        """Finished game index -> A won (None: no result); an index counts once."""
        names = sorted(n for n in os.listdir(self.folder)
                       if n.endswith(".sgf") and _INDEX.match(n))
        outcome: dict[int, bool | None] = {}
        for name in names:
            if name not in self._seen:
                self._seen[name] = self._parse(name)
            index, a_won = self._seen[name]
            outcome.setdefault(index, a_won)
        return outcome

    def _parse(self, name: str) -> tuple[int, bool | None]:
        index = int(_INDEX.match(name).group(1))
        with open(os.path.join(self.folder, name), encoding="utf-8") as f:
            winner = text_winner(f.read())
        if winner is None:
            return index, None
        return index, (winner == "B") == a_is_black(index)


def _publish(folder: _FolderTally, weights_a, weights_b, sprt: bool, seconds: float = 0.0,
             moves: int = 0) -> MatchResult:
    """The folder's result (every shard's games), written to result.json. Under the folder's
    lock: the writes follow the reads in order, so the last one holds every game.

    With the SPRT, a decision stands with the games up to it (`sequential_decision`);
    without one (or without the SPRT) the result is every finished game's."""
    with open(os.path.join(folder.folder, ".result.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        outcomes = folder.read_outcomes()
        wins, losses, decision = sequential_decision(outcomes) if sprt else (0, 0, None)
        if decision is None:
            wins, losses = _count(outcomes.values())
        result = _result(wins, losses, weights_a, weights_b)
        if sprt:
            result.decision = decision  # a total past a game still in flight decides nothing
        result.played = len(outcomes)
        result.seconds, result.moves = seconds, moves
        _write_result(folder.folder, result)
    return result


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
    text = json.dumps(identity, indent=2, sort_keys=True) + "\n"
    if not files.create_text_atomic(path, text):  # another shard published it first
        _check_same_match(folder, weights_a, weights_b, settings)
