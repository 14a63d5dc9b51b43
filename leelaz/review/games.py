"""The games `leelaz review` is given: SGF files, or a folder of them, read into positions.

Owns: `ReviewGame` (a parsed game, its main line as positions and moves, where its output
goes), `InputProblem`, `collect_games`. Imports: game.coords, game.sgf, game.sgf_replay,
game.state.

A game's positions are the start position (root setup, handicap stones, side to move, as
`loadsgf` builds it: game/sgf_replay.py `start_state`) and the position after each move of
the main line, so a game of n moves has n + 1 positions; each move's node is remembered so the
annotations go back to the node that holds it. A game that cannot be replayed (a bad point, a
move on an occupied point, a board other than 19x19) is an `SgfError` naming the file, the
game and the node; a folder's other games go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from leelaz.game.coords import EMPTY, PASS, parse_sgf_vertex
from leelaz.game.sgf import SgfError, SgfGame, iter_file_games
from leelaz.game.sgf_replay import start_state
from leelaz.game.state import GameState

SGF_SUFFIXES = (".sgf", ".sgf.gz")


class InputProblem(Exception):
    """Nothing to review: a missing path, a folder without SGF files (one line)."""


@dataclass
class Move:
    """One move of the main line: the index of its node in `SgfGame.mainline()`, its colour
    and vertex, and its number (1 for the first move of the game)."""

    node: int
    color: int
    vertex: int
    number: int


@dataclass
class ReviewGame:
    """A game to review: the parsed tree, its positions (start, then after each move) and
    moves, the position index each main-line node shows, and its output files' stem."""

    game: SgfGame
    source: Path
    stem: str
    positions: list[GameState] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    node_position: list[int] = field(default_factory=list)  # main-line node -> position

    @property
    def label(self) -> str:
        return self.stem


def replay(game: SgfGame, source: Path, stem: str) -> ReviewGame:
    """The positions and moves of `game`'s main line; SgfError when it cannot be replayed."""
    state = start_state(game)
    review = ReviewGame(game, source, stem, positions=[state.copy()])
    nodes = game.mainline()
    review.node_position.append(0)
    for i in range(1, len(nodes)):
        found = nodes[i].move()
        if found is not None:
            color, text = found
            try:
                v = parse_sgf_vertex(text.strip())
            except ValueError:
                raise game.error(f"node {i}: bad point [{text}]") from None
            if v != PASS and state.board.square[v] != EMPTY:
                raise game.error(f"node {i}: {'BW'[color]}[{text}] is on an occupied point")
            state.play(color, v)
            review.moves.append(Move(i, color, v, len(review.moves) + 1))
            review.positions.append(state.copy())
        review.node_position.append(len(review.positions) - 1)
    return review


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".sgf.gz", ".sgf", ".gz"):
        if name.lower().endswith(suffix):
            return name[:-len(suffix)]
    return name


def sgf_files(path: Path) -> list[Path]:
    """`path` itself, or the SGF files (.sgf, .sgf.gz) directly inside a folder, sorted."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.is_file() and p.name.lower().endswith(SGF_SUFFIXES))
        if not files:
            raise InputProblem(f"{path}: no SGF files (*.sgf, *.sgf.gz) in this folder")
        return files
    if not path.exists():
        raise InputProblem(f"{path}: no such file or folder")
    return [path]


def collect_games(paths: list[Path], say) -> tuple[list[ReviewGame], int]:
    """The games of `paths` (files or folders) ready to review, and how many games or files
    failed; `say(line)` gets one line for each failure. Raises InputProblem when a path
    names nothing to review."""
    games: list[ReviewGame] = []
    failed = 0
    stems: set[str] = set()
    for path in paths:
        for file in sgf_files(path):
            try:
                items = iter_file_games(file)
            except SgfError as exc:
                say(f"ERROR: {exc}")
                failed += 1
                continue
            if not items:
                say(f"ERROR: {file}: not an SGF file (no game found)")
                failed += 1
                continue
            for n, item in enumerate(items):
                if isinstance(item, SgfError):
                    say(f"ERROR: {item}")
                    failed += 1
                    continue
                stem = _stem(file) if len(items) == 1 else f"{_stem(file)}-{n + 1}"
                while stem in stems:  # the same name in two folders
                    stem += "_"
                try:
                    review = replay(item, file, stem)
                except SgfError as exc:
                    say(f"ERROR: {exc}")
                    failed += 1
                    continue
                stems.add(stem)
                games.append(review)
    return games, failed
