"""One game, as autogtp plays it: genmove after genmove until a resignation, two passes or
more than 722 moves; then the SGF, the training chunk and the debug file's text.

Owns: `Player` (a search with its own Network on the shared backend), `play_game` and
`FinishedGame`. Imports: numpy, game.*, nn.network, search.search, training.recorder,
selfplay.coalesce, selfplay.settings.

Each move is what the GTP `genmove` handler does (gtp/search_commands.py): search, record the
position and the root's visits for training (every search, the resigning one included, before
the move is played), play the move. The winner is the other colour after a resignation, else
the sign of the Tromp-Taylor score (komi 7.5: no draws). The chunk text is the recorder's
`game_text(winner)`, the same function `dump_training` writes, so the file is byte for byte
what `dump_training <winner> FILE` would give after this game.

The debug text is Leela Zero's `dump_debug` (zero-loop.md §2.2): `2`, `<resign pct> <weights>`,
then per recorded search `net_winrate root_winrate best_child_winrate best_child_visits`, all
from the side to move; the resign analysis reads it.
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
from leelaz.search.search import UCTSearch
from leelaz.selfplay.coalesce import MemberBackend, SelfplayStopped
from leelaz.training.recorder import TrainingRecorder

KOMI = 7.5


@dataclass
class Player:
    """One side's engine: its search, and the member backend it is batched through."""

    search: UCTSearch
    member: MemberBackend
    weights_path: str

    @classmethod
    def create(cls, weights, member: MemberBackend, weights_path: str, params, seed: int,
               cache_size: int, symmetric_lookups: bool) -> "Player":
        network = Network(weights, member, cache_size=cache_size, seed=seed,
                          symmetric_lookups=symmetric_lookups)
        search = UCTSearch(network, params, rng=seed, log=lambda text: None)
        return cls(search, member, weights_path)

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


def play_game(players: dict[int, Player], *, seed: int, options: str, max_moves: int,
              record: bool, resign_pct: int, should_stop=None, on_move=None) -> FinishedGame:
    """Play one game; `players[BLACK]` and `players[WHITE]` may be the same Player.

    `options` goes into the SGF comment; `should_stop()` is checked between moves (raises
    SelfplayStopped); `on_move(playouts, root_visits)` after each move (progress figures)."""
    began = time.monotonic()
    state = GameState(komi=KOMI)
    state.time_control = TimeControl.from_time_settings(0, 1, 0)  # autogtp's: no clock
    recorder = TrainingRecorder() if record else None
    debug = [f"2\n{resign_pct} {players[BLACK].weights_path}\n"] if record else []
    playouts = root_visits = 0
    for player in {id(p): p for p in players.values()}.values():
        player.search.reset()
    while True:
        if should_stop is not None and should_stop():
            raise SelfplayStopped("stopped")
        color = state.to_move
        player = players[color]
        with player.member.searching():
            result = player.search.think(state, color, time_limit_cs=UNLIMITED,
                                         use_clock=False)
        move = result.move
        if move not in (PASS, RESIGN) and not state.is_legal(color, move):
            move = PASS  # as genmove: never an illegal move
        if recorder is not None and recorder.record(state, result):
            debug.append(f"{result.net_winrate:g} {result.root_winrate:g} "
                         f"{result.best_child_winrate:g} {result.best_child_visits}\n")
        playouts += result.playouts
        root_visits += result.root_visits
        state.play(color, move)
        if on_move is not None:
            on_move(result.playouts, result.root_visits)
        if move == RESIGN or state.passes >= 2 or state.move_num > max_moves:
            break
    winner = _winner(state)
    sgf = sgf_from_state(state, weights_path=players[BLACK].weights_path, options=options,
                         date=time.strftime("%Y-%m-%d"))
    if players[BLACK] is not players[WHITE]:
        sgf = _name_white(sgf, players[WHITE].weights_path)
    chunk = recorder.game_text(winner) if recorder is not None and len(recorder) else ""
    return FinishedGame(sgf=sgf, chunk=chunk, debug="".join(debug) if chunk else "",
                        winner=winner, result=sgf_result(state), moves=state.move_num,
                        playouts=playouts, root_visits=root_visits,
                        seconds=time.monotonic() - began,
                        records=len(recorder) if recorder is not None else 0)


def _winner(state: GameState) -> int:
    if state.resigned is not None:
        return WHITE if state.resigned == BLACK else BLACK
    return BLACK if state.final_score() > 0 else WHITE


def _name_white(sgf: str, weights_path: str) -> str:
    """A match SGF names the white engine too (printsgf writes PW[Human])."""
    from leelaz.game.sgf import engine_player_name
    return sgf.replace("PW[Human]", f"PW[{engine_player_name(weights_path)}]", 1)
