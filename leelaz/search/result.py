"""What a search hands back: the chosen move and a snapshot of the root's children.

Owns: `MoveInfo`, `SearchResult`. Imports: stdlib only.

The same snapshot type serves three readers: the GTP layer (genmove reply, lz-analyze `info`
lines through gtp/analysis.py, gomill-explain_last_move), the training recorder (visit
distribution, root and best-child winrates) and tests. Winrates are from the side to move at
the root (`color`), as Leela Zero prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MoveInfo:
    """One root child, as seen at the moment of the snapshot."""

    move: int  # vertex or PASS
    visits: int  # N
    winrate: float  # Q for the root's side to move, without virtual loss; 0.0 when N = 0
    prior: float  # P after renormalisation (and noise, if any)
    lcb: float  # raw lower confidence bound (-1e6 + N below 2 visits)
    pv: list[int] = field(default_factory=list)  # the move, then the best-child chain


@dataclass
class SearchResult:
    """A finished search (or a progress snapshot, where `move` is None)."""

    color: int  # side to move at the root
    move_num: int  # root move number
    move: int | None = None  # chosen vertex, PASS or RESIGN; None in progress snapshots
    root_visits: int = 0
    root_winrate: float = 0.5  # root Q for `color` (0.5 before any visit)
    net_winrate: float = 0.5  # the network's value of the root for `color`
    playouts: int = 0  # playouts run by this search call (reused visits excluded)
    nodes: int = 0  # tree size in LZ's count (every child created, inflated or not)
    elapsed: float = 0.0  # seconds
    children: list[MoveInfo] = field(default_factory=list)  # root children in their order
    best_child_winrate: float = 0.5  # Q of the best child for `color` (training records)
    best_child_visits: int = 0

    @property
    def pv(self) -> list[int]:
        """The best line from the root: the best child's PV (empty without visits)."""
        best = self.best()
        return list(best.pv) if best is not None and best.visits > 0 else []

    def best(self) -> MoveInfo | None:
        """The best child by Leela Zero's order (LCB when both have more than
        max(2, 10% of the most visits) visits, else visits, then prior or winrate); the first
        of equals. After a finished search this is `children[0]`."""
        if not self.children:
            return None
        threshold = max(2.0, 0.10 * max(c.visits for c in self.children))
        best = self.children[0]
        for c in self.children[1:]:
            if _worse(best, c, threshold):
                best = c
        return best


def _worse(a: MoveInfo, b: MoveInfo, threshold: float) -> bool:
    """LZ's NodeComp on snapshots: is `a` worse than `b`?"""
    if a.visits > threshold and b.visits > threshold and a.lcb != b.lcb:
        return a.lcb < b.lcb
    if a.visits != b.visits:
        return a.visits < b.visits
    if a.visits == 0:
        return a.prior < b.prior
    return a.winrate < b.winrate
