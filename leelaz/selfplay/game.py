"""One game, as autogtp plays it: genmove after genmove until a resignation, two passes or
more than 722 moves; then the SGF, the training chunk and the debug file's text.

Owns: `Player` (a search with its own Network on the shared backend), `GameInPlay` (a game
advanced a network call at a time), `FinishedGame` and `SelfplayStopped`. Imports: game.*,
nn.network, search.search, search.run, training.recorder.

Each move is what the GTP `genmove` handler does (gtp/search_commands.py) with `think()`, in
the search's own steps (search/run.py) so that the runner can put many games' leaves into
one network call: `start_move`, `prepare`, then batches of `collect` / the round's call /
`apply` until `after_batch` (think's own stopping rules) says stop, and `finish`, which
chooses the move. Then the position and the root's visits are recorded for training (every
search, the resigning one included, before the move is played) and the move is played. The
winner is the other colour after a resignation, else the sign of the Tromp-Taylor score
(komi 7.5: no draws). The chunk text is the recorder's `game_text(winner)`, the same
function `dump_training` writes, so the file is byte for byte what `dump_training <winner>
FILE` would give after this game.

The debug text is Leela Zero's `dump_debug` (Training::dump_debug): `2`, `<resign pct> <weights>`,
then per search `net_winrate root_winrate best_child_winrate best_child_visits`, all from the
side to move; the resign analysis reads it. With playout-cap randomisation (`plan`) only the
full searches are recorded in the chunk, but every search has its debug line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from leelaz.game.coords import BLACK, PASS, RESIGN, WHITE
from leelaz.game.sgf_replay import sgf_from_state, sgf_result
from leelaz.game.state import GameState
from leelaz.game.timecontrol import TimeControl
from leelaz.nn.network import Network
from leelaz.search.params import UNLIMITED
from leelaz.search.run import Progress, expand_together
from leelaz.search.search import UCTSearch
from leelaz.training.recorder import TrainingRecorder

KOMI = 7.5


class SelfplayStopped(Exception):
    """The run is stopping (its time is up, Ctrl-C): drop this game."""


@dataclass
class Player:
    """One side's engine: its search on its own Network (own cache, own symmetries)."""

    search: UCTSearch
    weights_path: str

    @classmethod
    def create(cls, weights, backend, weights_path: str, params, seed: int, cache_size: int,
               symmetric_lookups: bool) -> "Player":
        network = Network(weights, backend, cache_size=cache_size, seed=seed,
                          symmetric_lookups=symmetric_lookups)
        search = UCTSearch(network, params, rng=seed, log=lambda text: None)
        return cls(search, weights_path)

    @property
    def evaluations(self) -> int:
        return self.search.evaluator.evaluations


@dataclass
class FinishedGame:
    """A finished game's texts and figures."""

    sgf: str
    chunk: str  # the training records (empty for match games)
    debug: str  # dump_debug's text (empty for match games)
    winner: int
    result: str  # the SGF's RE
    moves: int  # moves played (the resignation not counted)
    playouts: int  # new visits made by the searches
    root_visits: int  # root visits the searches ended with (reused ones included)
    seconds: float
    records: int = 0
    extra: dict = field(default_factory=dict)


class GameInPlay:
    """One game, advanced by the runner one network call at a time (`advance`).

    `players[BLACK]` and `players[WHITE]` may be the same Player. `options` goes into the SGF
    comment; `should_stop()` is asked before each move (SelfplayStopped drops the game);
    `on_move(playouts, root_visits)` is called after each move (progress figures)."""

    def __init__(self, players: dict[int, Player], *, options: str, max_moves: int,
                 record: bool, resign_pct: int, should_stop=None, on_move=None,
                 komi: float = KOMI, plan=None, prune_k: float = 0.0):
        """Self-play's additions (selfplay/targets.py): `komi` the game's; `plan(move_num)`
        -> (SearchParams, recorded) sets each move's search (playout-cap randomisation: a
        cheap search is not recorded); `prune_k` > 0 takes the forced playouts out of each
        recorded target. Without them the game is Leela Zero's."""
        self.began = time.monotonic()
        self.players = players
        self.options = options
        self.max_moves = max_moves
        self.should_stop = should_stop
        self.on_move = on_move
        self.plan = plan
        self.prune_k = prune_k
        self._recorded = True  # the move under way is recorded
        self.state = GameState(komi=komi)
        self.state.time_control = TimeControl.from_time_settings(0, 1, 0)  # autogtp's: no clock
        self.recorder = TrainingRecorder() if record else None
        self.debug = [f"2\n{resign_pct} {players[BLACK].weights_path}\n"] if record else []
        self.playouts = self.root_visits = 0
        self._run = None  # the search of the move under way
        self._limits = None  # its limits, until it begins its batches
        self._searching = False  # its batches have begun (the root has moves)
        self._waiting = None  # what waits for the round's call: its root or a LeafBatch
        for player in {id(p): p for p in players.values()}.values():
            player.search.reset()

    @staticmethod
    def expand_waiting(games) -> None:
        """Expand the leaves that the games' searches wait to expand, all in one call
        (search.run.expand_together), before the games `advance` in turn: hot path, once
        per round. Each game's network is its own, so taking its answer before the games
        before it have advanced changes nothing."""
        pairs = [(game._run, game._waiting) for game in games
                 if game._searching and game._waiting is not None]
        if pairs:
            expand_together(pairs)

    def advance(self) -> FinishedGame | None:
        """The game's part of a round: take the evaluations of the last round's call, then
        search on until positions wait for the next call (None) or the game ends (the
        finished game). Hot path: once per game and network call."""
        waiting, self._waiting = self._waiting, None
        run = self._run
        if waiting is not None:
            if self._searching:
                run.apply(waiting)
                if not run.after_batch(waiting.done + len(waiting.leaves)) \
                        and self._play_move():
                    return self._finished()
            else:  # the root's evaluation, now in the Network's cache for prepare()
                waiting.result()
                self._prepare()
        while True:
            run = self._run
            if run is None:
                if self.should_stop is not None and self.should_stop():
                    raise SelfplayStopped("stopped")
                if self._start_move():
                    return None
                continue
            if not self._searching:  # nothing to search: think() goes straight to finish
                if self._play_move():
                    return self._finished()
                continue
            batch = run.collect(run.next_batch_size())
            if batch.leaves:
                run.submit(batch)
                self._waiting = batch
                return None
            if not run.after_batch(batch.done) and self._play_move():
                return self._finished()

    def _start_move(self) -> bool:
        """think()'s start for the side to move; True when its root waits for the call."""
        state = self.state
        search = self.players[state.to_move].search
        if self.plan is not None:
            search.params, self._recorded = self.plan(state.move_num)
        self._run, self._limits = search.start_move(state, state.to_move,
                                                    time_limit_cs=UNLIMITED)
        if self._run.root_needs_evaluation():
            self._waiting = search.evaluator.submit([self._run.root_state])
            return True
        self._prepare()
        return False

    def _prepare(self) -> None:
        run = self._run
        run.prepare()
        self._searching = run.root.has_children()
        if self._searching:
            run.begin(self._limits, Progress())

    def _play_move(self) -> bool:
        """think()'s end (the move choice), then genmove's: record, play. True when the game
        is over."""
        state, run = self.state, self._run
        color = state.to_move
        result = self.players[color].search.finish(run)
        self._run, self._searching = None, False
        move = result.move
        if move not in (PASS, RESIGN) and not state.is_legal(color, move):
            move = PASS  # as genmove: never an illegal move
        if self.recorder is not None:
            # The debug file has a line per search (the resign analysis counts moves by its
            # lines), the chunk a record per recorded search: the same lines unless
            # playout-cap randomisation leaves cheap searches out of the chunk.
            if self._recorded:
                searched = self.recorder.record(state, self._target(result))
            else:
                searched = any(c.visits for c in result.children)
            if searched:
                self.debug.append(f"{result.net_winrate:g} {result.root_winrate:g} "
                                  f"{result.best_child_winrate:g} {result.best_child_visits}\n")
        self.playouts += result.playouts
        self.root_visits += result.root_visits
        state.play(color, move)
        if self.on_move is not None:
            self.on_move(result.playouts, result.root_visits)
        return move == RESIGN or state.passes >= 2 or state.move_num > self.max_moves

    def _target(self, result):
        """What the chunk records of a search: its visits, less the forced playouts."""
        if self.prune_k > 0:
            from leelaz.selfplay.targets import prune_forced
            return prune_forced(result, self.prune_k)
        return result

    def _finished(self) -> FinishedGame:
        state, players, recorder = self.state, self.players, self.recorder
        winner = _winner(state)
        sgf = sgf_from_state(state, weights_path=players[BLACK].weights_path,
                             options=self.options, date=time.strftime("%Y-%m-%d"))
        if players[BLACK] is not players[WHITE]:
            sgf = _name_white(sgf, players[WHITE].weights_path)
        chunk = recorder.game_text(winner) if recorder is not None and len(recorder) else ""
        return FinishedGame(sgf=sgf, chunk=chunk, debug="".join(self.debug) if chunk else "",
                            winner=winner, result=sgf_result(state), moves=state.move_num,
                            playouts=self.playouts, root_visits=self.root_visits,
                            seconds=time.monotonic() - self.began,
                            records=len(recorder) if recorder is not None else 0)


def _winner(state: GameState) -> int:
    if state.resigned is not None:
        return WHITE if state.resigned == BLACK else BLACK
    return BLACK if state.final_score() > 0 else WHITE


def _name_white(sgf: str, weights_path: str) -> str:
    """A match SGF names the white engine too (printsgf writes PW[Human])."""
    from leelaz.game.sgf import engine_player_name
    return sgf.replace("PW[Human]", f"PW[{engine_player_name(weights_path)}]", 1)
