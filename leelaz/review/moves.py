"""What a review says about each move: the winrate before and after it from the mover's
side, the winrate it lost, the move the engine preferred and its line; each side's largest
drops.

Owns: `MoveReview`, `review_moves`, `largest_drops`, `percent`. Imports: game.coords,
review.games, review.analyse (types only).

A move's "before" is the winrate of the position it was played in (the best move's winrate,
as lz-analyze's first `info` entry shows it), its "after" that of the position it made,
both turned to the mover's side; the drop is before - after, in winrate (0..1), never in
points: Leela Zero networks have no score head. A drop can be negative (the search found
more after the move than before it).
"""

from __future__ import annotations

from dataclasses import dataclass

from leelaz.game.coords import BLACK, gtp_vertex
from leelaz.review.analyse import Analysis
from leelaz.review.games import Move, ReviewGame


@dataclass
class MoveReview:
    """One move of the main line, judged."""

    move: Move
    before: float  # the mover's winrate before the move
    after: float  # the mover's winrate after it
    preferred: int | None  # the engine's best move in the position before
    pv: list[int]  # its line (starting with `preferred`)
    visits: int  # root visits of the position before

    @property
    def drop(self) -> float:
        return self.before - self.after

    @property
    def color(self) -> int:
        return self.move.color

    @property
    def played_text(self) -> str:
        return gtp_vertex(self.move.vertex)

    @property
    def preferred_text(self) -> str:
        return gtp_vertex(self.preferred) if self.preferred is not None else "-"

    def as_dict(self) -> dict:
        return {"move": self.move.number, "color": "BW"[self.color],
                "played": self.played_text, "preferred": self.preferred_text,
                "pv": [gtp_vertex(v) for v in self.pv], "visits": self.visits,
                "winrate_before": self.before, "winrate_after": self.after,
                "winrate_lost": self.drop}


def black_winrates(analyses: list[Analysis]) -> list[float]:
    """Black's winrate in each position (the graph's line)."""
    return [a.winrate_for(BLACK) for a in analyses]


def review_moves(game: ReviewGame, analyses: list[Analysis]) -> list[MoveReview]:
    """Each move of `game` judged from the analyses of its positions (position k is after
    move k; position 0 is the start)."""
    out = []
    for k, move in enumerate(game.moves, 1):
        before, after = analyses[k - 1], analyses[k]
        out.append(MoveReview(move, before.winrate_for(move.color),
                              after.winrate_for(move.color), before.best, before.pv,
                              before.visits))
    return out


def largest_drops(moves: list[MoveReview], color: int, count: int) -> list[MoveReview]:
    """`color`'s `count` moves that lost the most winrate (only moves that lost some),
    largest first, the earlier move first among equals."""
    lost = [m for m in moves if m.color == color and m.drop > 0]
    return sorted(lost, key=lambda m: (-m.drop, m.move.number))[:count]


def percent(x: float) -> str:
    """A winrate as the report writes it: `45.2%`."""
    return f"{100.0 * x:.1f}%"
