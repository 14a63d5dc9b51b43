"""TrainingRecorder: one training step per search, written out with the winner at game end.

Owns: the in-memory buffer of (input planes, side to move, root child visit distribution) and
`dump_training COLOR FILE` semantics (src/Training.cpp): all buffered steps go, as one game, to
`FILE.0.gz`, each with outcome +1 if its side to move is the winner, else -1. The buffer is
not cleared by dumping; clear_board and boardsize clear it.
Imports: numpy, game.coords, training.records, training.chunks; nn.features lazily (the
default planes function), so tests can hand in their own.

The search never records itself (CONTRIBUTING): whoever runs a search (genmove, cleanup,
lz-genmove_analyze, place_free_handicap) calls `recorder.record(state, result)` with the state
*before* the chosen move is played. A result whose child visits sum to zero (a terminal root)
records nothing, as in Leela Zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from leelaz.game.coords import BLACK, NUM_INTERSECTIONS, POTENTIAL_MOVES, WHITE, policy_slot
from leelaz.training.chunks import chunk_path, write_gzip_atomic
from leelaz.training.records import RECORD_PLANES, format_fields, outcome_for


class EmptyTrainingBuffer(Exception):
    """dump_training with nothing recorded (Leela Zero aborts here; we refuse politely)."""


@dataclass
class TrainingStep:
    """One recorded search: the 16 written planes (packed bits), side to move, visit shares."""

    packed_planes: np.ndarray  # uint8 [16, 46], np.packbits of each 361-bit plane
    to_move: int
    probabilities: np.ndarray  # float32 [362]

    def planes(self) -> np.ndarray:
        """uint8 [16, 361] of 0/1."""
        return np.unpackbits(self.packed_planes, axis=1, count=NUM_INTERSECTIONS)


def visit_distribution(result: Any) -> np.ndarray:
    """Child visit counts of a search result as float64 [362] (slot = policy slot, pass 361).

    Accepted forms, so that the recorder does not depend on the search's internals:
    - an array or sequence of 362 visit counts (or shares);
    - a mapping {vertex: visits};
    - an object with `child_visits` (either of the above), or with `children`/`moves`: an
      iterable of items having `visits` and `move` (or `vertex`), vertices as in game.coords.
    """
    for name in ("child_visits", "visit_counts", "visits_by_move"):
        if hasattr(result, name):
            return visit_distribution(getattr(result, name))
    for name in ("children", "moves"):
        items = getattr(result, name, None)
        if items is not None and not callable(items):
            visits = np.zeros(POTENTIAL_MOVES)
            for item in items:
                move = getattr(item, "move", getattr(item, "vertex", None))
                visits[policy_slot(move)] += getattr(item, "visits")
            return visits
    if isinstance(result, dict):
        visits = np.zeros(POTENTIAL_MOVES)
        for move, n in result.items():
            visits[policy_slot(move)] += n
        return visits
    visits = np.asarray(result, dtype=np.float64).reshape(-1)
    if visits.shape[0] != POTENTIAL_MOVES:
        raise ValueError(f"visit distribution needs {POTENTIAL_MOVES} slots, got {visits.shape}")
    return visits


def shares(visits: np.ndarray) -> np.ndarray | None:
    """visits / sum(visits) in float32, as Leela Zero divides; None when the sum is zero."""
    total = float(np.sum(visits))
    if total <= 0:
        return None
    return (np.asarray(visits, dtype=np.float32) / np.float32(total)).astype(np.float32)


def _default_planes(state) -> np.ndarray:
    from leelaz.nn.features import input_planes  # training may import nn; lazily for tests
    return input_planes(state)


class TrainingRecorder:
    """The buffer of training steps of the current game (see the module docstring)."""

    def __init__(self, planes_fn: Callable[[Any], np.ndarray] | None = None):
        self._planes_fn = planes_fn or _default_planes
        self.steps: list[TrainingStep] = []

    def __len__(self) -> int:
        return len(self.steps)

    def clear(self) -> None:
        """Forget every step (clear_board, boardsize)."""
        self.steps = []

    def record(self, state, result: Any) -> bool:
        """Record the position `state` (before the move is played) and the search's child
        visit distribution; False (nothing recorded) when the visits sum to zero."""
        probs = shares(visit_distribution(result))
        if probs is None:
            return False
        planes = np.asarray(self._planes_fn(state)).reshape(-1, NUM_INTERSECTIONS)
        packed = np.packbits(planes[:RECORD_PLANES] != 0, axis=1)
        to_move = state.to_move
        if to_move not in (BLACK, WHITE):
            raise ValueError(f"side to move must be BLACK or WHITE, got {to_move!r}")
        self.steps.append(TrainingStep(packed, to_move, probs))
        return True

    def game_text(self, winner: int) -> str:
        """Every step as records, with outcomes from `winner` (BLACK or WHITE)."""
        return "".join(format_fields(s.planes(), s.to_move, s.probabilities,
                                     outcome_for(s.to_move, winner)) for s in self.steps)

    def dump(self, winner: int, prefix: str) -> str:
        """Write the buffer as one game to `prefix.0.gz` (atomically, overwriting); its path.

        Raises EmptyTrainingBuffer when nothing was recorded. The buffer is kept.
        """
        if winner not in (BLACK, WHITE):
            raise ValueError("winner must be BLACK or WHITE")
        if not self.steps:
            raise EmptyTrainingBuffer("no training data recorded")
        path = chunk_path(prefix, 0)
        write_gzip_atomic(path, self.game_text(winner))
        return path
