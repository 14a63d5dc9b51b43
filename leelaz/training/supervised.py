"""Supervised training data from SGF collections: `dump_supervised` and a fast position iterator.

Owns: Leela Zero's rules for which games become training data (src/Training.cpp), the
`dump_supervised SGF OUT` pipeline (read, shuffle, replay, 32 games per chunk), and the
iterators the trainer uses. Imports: numpy, game (coords, outcome, sgf, sgf_replay, state),
nn.features, training.records, training.chunks, training.data_files (lazily).

Which games Leela Zero's dump_supervised drops (checked against the 0.17 binary):
- the game does not parse (this includes SZ other than 19 and GM other than 1, and a move or
  setup stone on the other colour's stone anywhere in the main line; LZ also checks
  variations, we do not);
- the main line has no moves. The main line follows the turn from the start position's side
  to move: each node flips the turn, and only a move of the colour whose turn it is counts
  (a comment node or a `B` node where White is due is skipped, and so are the nodes after it
  until the colours agree again);
- RE contains `Time`, or does not start with `B+` / `W+` (no RE, draws, `Void`, `b+r`,
  ` B+R`);
- a main-line move is illegal on the replayed board (ko, suicide, or a point the mover
  already holds): LZ prints `Mainline move not found: <vertex>` and drops the whole game
  (its positions are counted in LZ's `Dumped N` line but not written; we count written ones).
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

from leelaz.game.coords import (ALL_VERTICES, BLACK, EMPTY, INVAL, NUM_VERTICES, WHITE,
                                policy_slot)
from leelaz.game.sgf import (SgfError, SgfGame, iter_file_games, parse_game, read_text,
                             split_games)
from leelaz.game.outcome import is_time_or_forfeit, lz_winner
from leelaz.nn.features import HISTORY, INPUT_PLANES, planes_from_colours
from leelaz.training.chunks import GAMES_PER_CHUNK, ChunkWriter
from leelaz.training.records import format_fields, format_one_hot_records, one_hot, outcome_for

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
# One game, LZ's way
#
# Leela Zero pairs two sequences that agree in ordinary games but not in broken ones:
# - the positions: its SGF loader's replay of the main line, every move node played with its
#   own colour (sgf_replay.state_from_sgf; nodes without a move add no position);
# - the labels: the main line's moves filtered by turn (sgf_replay.mainline_moves).
# Record k is position k with label k and the position's side to move; there are
# min(labels, positions) records. So after a comment node or a `B` node where White is due,
# the labels and the side to move come from the turn rule while the boards keep every stone.


def lz_game(game: SgfGame):
    """(loader's final GameState, turn-filtered labels [(colour, vertex)]) of a parsed game.

    SkipGame("parse") where LZ's SGF loader fails (bad root, non-19 board, a bad point, a
    stone on the other colour's stone), SkipGame("no moves") for an empty main line.
    """
    from leelaz.game.sgf_replay import mainline_moves, state_from_sgf
    try:
        full = state_from_sgf(game, 0)
        labels = mainline_moves(game)
    except (SgfError, ValueError) as err:
        raise SkipGame("parse", None) from err
    if not labels:
        raise SkipGame("no moves")
    return full, labels


def _not_found(vertex: int) -> SkipGame:
    return SkipGame("illegal", f"Mainline move not found: {vertex}")


def positions(game: SgfGame) -> Iterator[tuple[object, int]]:
    """(GameState at position k, label vertex k) for each record of the game, replayed from
    the anchored start. SkipGame("illegal", LZ's message) when a label is not a legal move of
    the side to move (ko, suicide, occupied); the caller drops the whole game then."""
    from leelaz.game.sgf_replay import start_state
    full, labels = lz_game(game)
    played = full.moves()
    count = min(len(labels), len(played) + 1)
    state = start_state(game)
    for k in range(count):
        label = labels[k][1]
        if not state.is_legal(state.to_move, label):
            raise _not_found(label)
        yield state, label
        if k + 1 < count:
            state.play(*played[k])


def _planes(state) -> np.ndarray:
    from leelaz.nn.features import input_planes
    return input_planes(state)


def game_text(game: SgfGame, winner: int) -> tuple[str, int]:
    """The records of one game, position by position through GameState and input_planes:
    (text, n). The reference for one_game's fast path (tests check they agree)."""
    parts = []
    for state, label in positions(game):
        to_move = state.to_move
        parts.append(format_fields(_planes(state), to_move, one_hot(policy_slot(label)),
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
                    level: int = 9,
                    progress: Callable[[int], None] | None = None) -> DumpStats:
    """Leela Zero's `dump_supervised SGF OUT`: shuffled games, 32 per `OUT.N.gz` (see module
    docstring). Every message goes to `log`; `progress(1)` is called after each game (for a
    progress bar). Returns the statistics; the chunks are complete on return."""
    games = read_games(sgf_path)
    _remove_stale_temporaries(out_prefix, log)
    earlier = _existing_chunks(out_prefix)
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
        if progress is not None:
            progress(1)
        if n % PROGRESS_EVERY == 0:
            log(f"Game {n} of {len(games)}, {writer.positions} training positions")
    stats.chunks = writer.close()
    stats.games_dumped, stats.positions = writer.games, writer.positions
    log(f"Dumped {writer.positions} training positions.")
    left = sorted(set(earlier) - set(stats.chunks), key=_chunk_number)
    if left:
        log(f"{len(left)} chunk file(s) from an earlier run remain beside this run's "
            f"{len(stats.chunks)}: {_span(left)}; they are not part of this dump.")
    return stats


def _remove_stale_temporaries(out_prefix: str, log: Callable[[str], None]) -> None:
    """A dump killed mid-write (SIGKILL) leaves atomic_open's hidden temporary chunk files;
    they hold half a chunk, so they are removed, with a line saying so."""
    import glob
    import os

    from leelaz.files import stale_temporaries
    stale = stale_temporaries(glob.escape(out_prefix) + ".*.gz")
    removed = []
    for path in stale:
        try:
            os.unlink(path)
            removed.append(os.path.basename(path))
        except OSError:
            pass
    if removed:
        log(f"Removed {len(removed)} partial chunk file(s) left by an interrupted run: "
            + ", ".join(removed))


def _existing_chunks(out_prefix: str) -> list[str]:
    import glob
    import re
    pattern = re.compile(re.escape(out_prefix) + r"\.\d+\.gz")
    return [p for p in glob.glob(glob.escape(out_prefix) + ".*.gz") if pattern.fullmatch(p)]


def _chunk_number(path: str) -> int:
    return int(path.rsplit(".", 2)[-2])


def _span(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else f"{paths[0]} ... {paths[-1]}"


def one_game(game) -> tuple[str, int]:
    """Records of one parsed game (or the SgfError it raised), by LZ's rules; SkipGame if none."""
    if isinstance(game, Exception):
        raise SkipGame("parse")
    winner = lz_winner(game.root.get("RE"))
    if winner is None:
        lz_game(game)  # a parse failure or an empty main line counts first, as in LZ
        raise SkipGame("result")
    g = game_arrays(game, 1 if winner == BLACK else -1)
    return format_one_hot_records(g.planes(), g.to_move, g.slots, g.result), len(g)


# ---------------------------------------------------------------------------------------------
# The trainer's iterator. Hot path: GameState.play per move; the planes of a whole game are
# then built at once with NumPy from the boards (one row per position), which gives exactly
# input_planes(state) (checked by tests/test_supervised_oracle.py) at a fraction of the cost.

#: Mailbox vertex of each intersection index, to cut a board row out of Board.square.
_ROW_VERTICES = np.array(ALL_VERTICES, dtype=np.intp)


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
        """uint8 [T, 18, 361] input planes (gather_features); packed: [T, 18, 46] packbits."""
        return history_planes(self.boards, self.to_move, packed)


def history_planes(boards: np.ndarray, to_move: np.ndarray, packed: bool = False) -> np.ndarray:
    """Input planes of consecutive positions of one game from its board rows.

    Position t sees rows t, t-1, ..., t-7 (older than the game's start: zero) in
    nn/features.py's layout (planes_from_colours).
    """
    count = len(to_move)
    hist = np.arange(count)[:, None] - np.arange(HISTORY)[None, :]  # [T, 8]
    colours = np.where((hist >= 0)[:, :, None], boards[np.maximum(hist, 0)], INVAL)
    out = np.empty((count, INPUT_PLANES, boards.shape[1]), np.uint8)
    planes_from_colours(colours.astype(np.uint8), to_move.astype(np.uint8), out)
    return np.packbits(out, axis=2) if packed else out


def game_arrays(game: SgfGame, black_result: int) -> GameArrays:
    """LZ's positions and labels of a game (see lz_game) as arrays; SkipGame when dropped.
    One replay (the loader's): its boards are used directly. Hot path."""
    full, labels = lz_game(game)
    boards = full.history[:len(labels)]
    slots, stm = [], []
    for board, (_, label) in zip(boards, labels):
        if not board.is_legal(board.to_move, label):
            raise _not_found(label)
        slots.append(policy_slot(label))
        stm.append(board.to_move)
    squares = np.frombuffer(b"".join([bytes(b.square) for b in boards]), np.uint8)
    squares = squares.reshape(-1, NUM_VERTICES)
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
    return game_arrays(game, result)


def _game_texts(path: str) -> list[str]:
    """The games of a file as texts. One-game-per-line collections (tygem) are split at line
    ends, which is much faster than split_games' scan and gives the same games."""
    text = read_text(path)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # Every line a whole game: starts with `(;`, ends with `)`, parentheses balanced (a line
    # holding a variation would leave its game's first line unbalanced).
    if lines and all(ln.startswith("(;") and ln[-1] == ")" and ln.count("(") == ln.count(")")
                     for ln in lines):
        return lines
    return split_games(text)


def iter_games(paths: Iterable[str], unreliable: str = "drop", part: int = 0, parts: int = 1,
               stats: DumpStats | None = None) -> Iterator[GameArrays]:
    """GameArrays of every kept game of the collections, in file order.

    part/parts: only games whose number within their file is part modulo parts (for workers).
    stats, if given, counts the skipped games by reason. A file that cannot be read is a
    TrainingError naming it (training.data_files.reading).
    """
    from leelaz.training.data_files import reading
    for path in paths:
        with reading(path):
            texts = _game_texts(path)
        for i, text in enumerate(texts):
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
    Black to move (what training/dataset.py replays itself), its moves as the loader plays
    them (own colours, alternating). No legality check here."""
    for i, text in enumerate(_game_texts(path)):
        try:
            game = parse_game(text, f"{path}: game {i + 1}")
            full, _ = lz_game(game)
        except (SgfError, SkipGame):
            continue
        start = full.history[0]
        moves = full.moves()
        if start.to_move != BLACK or any(start.square[v] != EMPTY for v in ALL_VERTICES):
            continue
        if any(color != k % 2 for k, (color, _) in enumerate(moves)):
            continue
        yield [policy_slot(v) for _, v in moves], game.root.get("RE") or ""
