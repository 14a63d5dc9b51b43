"""Supervised training data from SGF collections: `dump_supervised` and a fast position iterator.

Owns: Leela Zero's rules for which games become training data (reference §5), the
`dump_supervised SGF OUT` pipeline (read, shuffle, replay, 32 games per chunk), and the
iterators the trainer uses. Imports: numpy, game (coords, sgf, sgf_replay, state), nn.features
(lazily), training.records, training.chunks.

Which games Leela Zero's dump_supervised drops (checked against the 0.17 binary):
- the game does not parse (this includes SZ other than 19 and GM other than 1, and a move or
  setup stone on an occupied point anywhere in the tree);
- the main line has no moves (the main line ends at the first node without a move of the
  colour whose turn it is: a `B` node where White is expected ends it);
- RE contains `Time`, or does not start with `B+` / `W+` (no RE, draws, `Void`, `b+r`);
- a main-line move is illegal on the replayed board (ko or suicide): LZ prints
  `Mainline move not found: <vertex>` and drops the whole game.
Komi and handicap are not checked. Tygem's `B+T`/`W+T` (time) and `B+F`/`W+F` (forfeit) results
do not contain `Time`, so dump_supervised keeps them, as LZ does.

Where we differ from LZ, on purpose: messages go to stderr (LZ writes some on stdout, inside the
GTP stream), an unreadable file is an error reply (LZ aborts), and no empty last chunk is
written (LZ aborts when the number of games is a multiple of 32).

What the trainer keeps (iter_games, iter_positions; unreliable="drop"): the same games,
except that time and forfeit results (RE containing `Time`, or `B+T`, `W+T`, `B+F`, `W+F`)
are dropped by default: the result says who ran out of time or left, not who was winning, so
it is a wrong value target. `unreliable="zero"` keeps their moves with result 0 instead (policy
training only), `unreliable="lz"` decides exactly as dump_supervised does.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from leelaz.game.coords import ALL_VERTICES, BLACK, EMPTY, NUM_VERTICES, PASS, WHITE, policy_slot
from leelaz.game.sgf import (SgfError, SgfGame, iter_file_games, parse_game, read_text,
                             split_games)
from leelaz.training.chunks import GAMES_PER_CHUNK, ChunkWriter
from leelaz.training.records import format_fields, one_hot, outcome_for

#: Progress line every this many games, as LZ does.
PROGRESS_EVERY = 1000


class SupervisedError(Exception):
    """The whole command fails (the SGF file cannot be read); the message says why."""


class SkipGame(Exception):
    """This game gives no training data. reason: a short key for the statistics; message:
    what LZ prints for it (only `Mainline move not found: V`), or None."""

    def __init__(self, reason: str, message: str | None = None):
        super().__init__(message or reason)
        self.reason = reason
        self.message = message


# ---------------------------------------------------------------------------------------------
# Results


def lz_winner(result: str | None) -> int | None:
    """The winner by Leela Zero's rule: None if RE is missing, contains `Time`, or does not
    start with `B+`/`W+` (case-sensitive, no leading space); else BLACK or WHITE."""
    if not result or "Time" in result:
        return None
    if result.startswith("B+"):
        return BLACK
    if result.startswith("W+"):
        return WHITE
    return None


def is_time_or_forfeit(result: str) -> bool:
    """A result decided by the clock or by leaving: `Time` anywhere, or tygem's `B+T`, `W+F`..."""
    r = result.strip()
    return "Time" in r or r[2:3].upper() in ("T", "F")


def trainer_result(result: str | None, unreliable: str = "drop") -> int | None:
    """Result for the trainer from Black's view: +1, -1, 0 (policy only), or None (drop).

    unreliable: what to do with time and forfeit results: "drop" the game, keep its moves with
    result "zero", or "lz": decide exactly as dump_supervised does (lz_winner).
    """
    if unreliable == "lz":
        winner = lz_winner(result)
    else:
        r = (result or "").strip()
        winner = BLACK if r.startswith("B+") else WHITE if r.startswith("W+") else None
        if winner is not None and is_time_or_forfeit(r):
            if unreliable == "drop":
                return None
            if unreliable == "zero":
                return 0
            raise ValueError(f"unreliable must be drop, zero or lz, not {unreliable!r}")
    if winner is None:
        return None
    return 1 if winner == BLACK else -1


# ---------------------------------------------------------------------------------------------
# One game: the start position and the main line, LZ's way


def start_and_moves(game: SgfGame):
    """(anchored start GameState, main-line moves [(colour, vertex)]) of a parsed game.

    Raises SkipGame("parse") where LZ's SGF loader fails (bad root, non-19 board, occupied
    points), SkipGame("no moves") for an empty main line.
    """
    from leelaz.game.sgf_replay import mainline_moves, state_from_sgf
    try:
        state = state_from_sgf(game)
        moves = mainline_moves(game)
    except (SgfError, ValueError) as err:
        raise SkipGame("parse", None) from err
    if not moves:
        raise SkipGame("no moves")
    return state, moves


def replay(state, moves) -> Iterator[tuple[object, int, int]]:
    """Play the main line from `state` (mutated), yielding (state before the move, colour,
    vertex) for each move. SkipGame("illegal", LZ's message) on a ko or suicide move,
    SkipGame("parse") on an occupied point (LZ's loader rejects those games silently)."""
    for color, vertex in moves:
        if vertex != PASS:
            if state.board.square[vertex] != EMPTY:  # occupied points fail LZ's loader
                raise SkipGame("parse")
            if not state.is_legal(color, vertex):
                raise SkipGame("illegal", f"Mainline move not found: {vertex}")
        yield state, color, vertex
        state.play(color, vertex)


def _planes(state) -> np.ndarray:
    from leelaz.nn.features import input_planes
    return input_planes(state)


def game_text(state, moves, winner: int) -> tuple[str, int]:
    """The records of one game (planes from input_planes, one-hot move, outcome): (text, n)."""
    parts = []
    for st, color, vertex in replay(state, moves):
        to_move = st.to_move
        if to_move != color:  # mainline_moves follows the turn, so this cannot happen
            raise SkipGame("parse")
        parts.append(format_fields(_planes(st), to_move, one_hot(policy_slot(vertex)),
                                   outcome_for(to_move, winner)))
    return "".join(parts), len(parts)


# ---------------------------------------------------------------------------------------------
# dump_supervised


@dataclass
class DumpStats:
    games_in_file: int = 0
    games_dumped: int = 0
    positions: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    chunks: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def read_games(sgf_path: str) -> list:
    """Every game of the file, each an SgfGame or the SgfError it raised."""
    try:
        return list(iter_file_games(sgf_path))
    except SgfError as err:
        raise SupervisedError(f"cannot read file: {err}") from None
    except OSError as err:
        raise SupervisedError(f"cannot read file {sgf_path}: {err.strerror}") from None


def dump_supervised(sgf_path: str, out_prefix: str, log: Callable[[str], None] = _stderr,
                    seed: int | None = None, games_per_chunk: int = GAMES_PER_CHUNK,
                    level: int = 9) -> DumpStats:
    """Leela Zero's `dump_supervised SGF OUT`: shuffled games, 32 per `OUT.N.gz` (see module
    docstring). Every message goes to `log`. Returns the statistics; the chunks are complete
    on return."""
    games = read_games(sgf_path)
    stats = DumpStats(games_in_file=len(games))
    log(f"Total games in file: {len(games)}")
    random.Random(seed).shuffle(games)
    log("Shuffling...done.")
    writer = ChunkWriter(out_prefix, games_per_chunk, level=level, log=log)
    for n, game in enumerate(games, 1):
        try:
            text, count = one_game(game)
        except SkipGame as skip:
            stats.skip(skip.reason)
            if skip.message:
                log(skip.message)
        else:
            writer.add_game(text, count)
        if n % PROGRESS_EVERY == 0:
            log(f"Game {n} of {len(games)}, {writer.positions} training positions")
    stats.chunks = writer.close()
    stats.games_dumped, stats.positions = writer.games, writer.positions
    log(f"Dumped {writer.positions} training positions.")
    return stats


def one_game(game) -> tuple[str, int]:
    """Records of one parsed game (or the SgfError it raised), by LZ's rules; SkipGame if none."""
    if isinstance(game, Exception):
        raise SkipGame("parse")
    state, moves = start_and_moves(game)
    winner = lz_winner(game.root.get("RE"))
    if winner is None:
        raise SkipGame("result")
    return game_text(state, moves, winner)


# ---------------------------------------------------------------------------------------------
# The trainer's iterator. Hot path: GameState.play per move; the planes of a whole game are
# then built at once with NumPy from the boards (one row per position), which gives exactly
# input_planes(state) (checked by tests/test_supervised_oracle.py) at a fraction of the cost.

#: Mailbox vertex of each intersection index, to cut a board row out of Board.square.
_ROW_VERTICES = np.array(ALL_VERTICES, dtype=np.intp)
HISTORY = 8


@dataclass
class GameArrays:
    """Every position of one game. Row t is the board before move t (colour per index)."""

    boards: np.ndarray  # uint8 [T, 361]: BLACK 0, WHITE 1, EMPTY 2
    slots: np.ndarray  # int16 [T]: policy slot of the move played (pass 361)
    to_move: np.ndarray  # uint8 [T]: BLACK 0 / WHITE 1
    result: np.ndarray  # int8 [T]: +1 if the side to move won, -1 if it lost, 0 unknown

    def __len__(self) -> int:
        return len(self.slots)

    def planes(self, packed: bool = False) -> np.ndarray:
        """uint8 [T, 18, 361] input planes (reference §4.3); packed: [T, 18, 46] packbits."""
        return history_planes(self.boards, self.to_move, packed)


def history_planes(boards: np.ndarray, to_move: np.ndarray, packed: bool = False) -> np.ndarray:
    """Input planes of consecutive positions of one game from its board rows.

    Position t sees rows t, t-1, ..., t-7 (older than the game's start: zero), split by the
    side to move at t; planes 16/17 are all ones for Black/White to move.
    """
    count = len(to_move)
    hist = np.arange(count)[:, None] - np.arange(HISTORY)[None, :]  # [T, 8]
    valid = (hist >= 0)[:, :, None]
    rows = boards[np.maximum(hist, 0)]  # [T, 8, 361]
    stm = to_move.astype(np.uint8)[:, None, None]
    out = np.empty((count, 18, boards.shape[1]), np.uint8)
    out[:, :HISTORY] = (rows == stm) & valid
    out[:, HISTORY:16] = (rows == (1 - stm)) & valid
    out[:, 16] = (to_move == BLACK)[:, None]
    out[:, 17] = (to_move == WHITE)[:, None]
    return np.packbits(out, axis=2) if packed else out


def game_arrays(state, moves, black_result: int) -> GameArrays:
    """Replay a main line (LZ's legality rules, SkipGame on an illegal move) into arrays."""
    rows, slots, stm = [], [], []
    for st, color, vertex in replay(state, moves):
        rows.append(bytes(st.board.square))
        slots.append(policy_slot(vertex))
        stm.append(color)
    squares = np.frombuffer(b"".join(rows), np.uint8).reshape(-1, NUM_VERTICES)
    to_move = np.array(stm, np.uint8)
    sign = np.where(to_move == BLACK, 1, -1).astype(np.int8)
    return GameArrays(squares[:, _ROW_VERTICES], np.array(slots, np.int16), to_move,
                      sign * np.int8(black_result))


def trainer_game(game, unreliable: str = "drop") -> GameArrays:
    """One parsed game (or its SgfError) -> arrays by the trainer's rules (module docstring);
    SkipGame if dropped."""
    if isinstance(game, Exception):
        raise SkipGame("parse")
    result = trainer_result(game.root.get("RE"), unreliable)
    if result is None:
        raise SkipGame("result")
    state, moves = start_and_moves(game)
    return game_arrays(state, moves, result)


def _game_texts(path: str) -> list[str]:
    """The games of a file as texts. One-game-per-line collections (tygem) are split at line
    ends, which is much faster than split_games' scan and gives the same games."""
    text = read_text(path)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and all(ln[0] == "(" and ln[-1] == ")" and ln.count("(") == 1 for ln in lines):
        return lines
    return split_games(text)


def iter_games(paths: Iterable[str], unreliable: str = "drop", part: int = 0, parts: int = 1,
               stats: DumpStats | None = None) -> Iterator[GameArrays]:
    """GameArrays of every kept game of the collections, in file order.

    part/parts: only games whose number within their file is part modulo parts (for workers).
    stats, if given, counts the skipped games by reason.
    """
    for path in paths:
        for i, text in enumerate(_game_texts(path)):
            if i % parts != part:
                continue
            try:
                game = parse_game(text, f"{path}: game {i + 1}")
            except SgfError as err:
                game = err
            try:
                arrays = trainer_game(game, unreliable)
            except SkipGame as skip:
                if stats is not None:
                    stats.skip(skip.reason)
                continue
            if stats is not None:
                stats.games_dumped += 1
                stats.positions += len(arrays)
            yield arrays


def _worker(job) -> tuple[list[GameArrays], DumpStats]:
    path, part, parts, unreliable = job
    stats = DumpStats()
    games = list(iter_games([path], unreliable, part, parts, stats))
    return games, stats


def iter_games_parallel(paths: Iterable[str], workers: int, unreliable: str = "drop",
                        parts_per_file: int = 16,
                        stats: DumpStats | None = None) -> Iterator[GameArrays]:
    """iter_games over a process pool: each file is cut into parts_per_file interleaved parts
    (one task each), results come back in task order."""
    import multiprocessing as mp
    jobs = [(p, k, parts_per_file, unreliable) for p in paths for k in range(parts_per_file)]
    with mp.get_context("spawn" if sys.platform == "darwin" else "fork").Pool(workers) as pool:
        for games, part_stats in pool.imap(_worker, jobs):
            if stats is not None:
                stats.games_dumped += part_stats.games_dumped
                stats.positions += part_stats.positions
                for k, v in part_stats.skipped.items():
                    stats.skipped[k] = stats.skipped.get(k, 0) + v
            yield from games


def iter_positions(paths: Iterable[str], packed: bool = False, unreliable: str = "drop",
                   workers: int = 1) -> Iterator[tuple[np.ndarray, int, int, int]]:
    """(planes uint8 [18, 361] (or [18, 46] packed), policy slot, side to move, result) for
    every position of every kept game; result is +1/-1 from the side to move's view (0 for
    unreliable="zero" games). For throughput use iter_games and GameArrays.planes instead."""
    games = (iter_games_parallel(paths, workers, unreliable) if workers > 1
             else iter_games(paths, unreliable))
    for g in games:
        planes = g.planes(packed)
        for t in range(len(g)):
            yield planes[t], int(g.slots[t]), int(g.to_move[t]), int(g.result[t])


def sgf_games(path: str) -> Iterator[tuple[list[int], str]]:
    """(policy slots, RE text) of each game that parses and starts from the empty board with
    Black to move (what training/dataset.py replays itself). No legality check here."""
    for i, text in enumerate(_game_texts(path)):
        try:
            game = parse_game(text, f"{path}: game {i + 1}")
            state, moves = start_and_moves(game)
        except (SgfError, SkipGame):
            continue
        empty = all(state.board.square[v] == EMPTY for v in ALL_VERTICES)
        if not empty or moves[0][0] != BLACK:
            continue
        yield [policy_slot(v) for _, v in moves], game.root.get("RE") or ""
