"""A review's report: the summary line, the Markdown report and the same data as JSON.

Owns: `GameReport` (everything the outputs say about one game), `summary_line`,
`markdown`, `as_json`. Imports: json, game.coords, review.moves, review.games.

Each side's largest drops are listed with the move number, the played move, the engine's
preferred move, the mover's winrate before and after and the winrate lost. Winrates only:
Leela Zero networks have no score head, so nothing is said in points.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from leelaz.game.coords import BLACK, WHITE, gtp_vertex
from leelaz.review.games import ReviewGame
from leelaz.review.moves import MoveReview, largest_drops, percent

SIDE = ("Black", "White")


@dataclass
class GameReport:
    """One reviewed game's figures, as all the outputs give them."""

    review: ReviewGame
    black_winrates: list[float]  # per position (0 = start)
    moves: list[MoveReview]
    visits: int | None  # per position (None with --seconds)
    seconds: float | None
    seed: int
    network: str
    top: int
    analyses: list = None  # review.analyse.Analysis per position
    tree_kept: bool = True  # each position's search began from the position before's tree

    def drops(self, color: int) -> list[MoveReview]:
        return largest_drops(self.moves, color, self.top)

    @property
    def players(self) -> tuple[str, str]:
        root = self.review.game.root
        return root.get("PB") or "Black", root.get("PW") or "White"


def _drop_text(m: MoveReview) -> str:
    return (f"move {m.move.number} {m.played_text} (leelaz {m.preferred_text}) "
            f"winrate lost {percent(m.drop)}")


def summary_line(report: GameReport) -> str:
    """One line per game: moves, search, each side's largest drop."""
    budget = (f"{report.visits} visits" if report.visits is not None
              else f"{report.seconds:g} s")
    parts = [f"{report.review.label}: {len(report.moves)} moves, {budget} a position"]
    for color in (BLACK, WHITE):
        drops = report.drops(color)
        parts.append(f"{SIDE[color]}'s largest drop: "
                     + (_drop_text(drops[0]) if drops else "none"))
    return "; ".join(parts)


def markdown(report: GameReport, plot_name: str | None) -> str:
    """The Markdown report (`plot_name`: the PNG beside it, or None)."""
    black, white = report.players
    root = report.review.game.root
    result = root.get("RE")
    lines = [f"# Review: {black} (Black) – {white} (White)", ""]
    facts = [f"File: `{report.review.source}`", f"Moves: {len(report.moves)}",
             "Search: " + (f"{report.visits} visits a position" if report.visits is not None
                           else f"{report.seconds:g} seconds a position")
             + (", the tree kept from each position to the next (the visits kept counted)"
                if report.tree_kept else ", each position from a fresh tree"),
             f"Network: `{report.network}`, seed {report.seed}"]
    if result:
        facts.insert(1, f"Result: {result}")
    if root.get("HA"):
        facts.insert(1, f"Handicap: {root.get('HA')}")
    lines += [f"- {fact}" for fact in facts] + ["", summary_line(report), ""]
    if plot_name:
        lines += [f"![Black's winrate]({plot_name})", ""]
    for color in (BLACK, WHITE):
        drops = report.drops(color)
        lines += [f"## {SIDE[color]}'s largest drops", ""]
        if not drops:
            lines += ["No move lost winrate.", ""]
            continue
        lines += ["| Move | Played | leelaz | Winrate before | Winrate after | Winrate lost |",
                  "|---:|:---:|:---:|---:|---:|---:|"]
        for m in drops:
            lines.append(f"| {m.move.number} | {m.played_text} | {m.preferred_text} | "
                         f"{percent(m.before)} | {percent(m.after)} | {percent(m.drop)} |")
        lines.append("")
    lines.append("Winrates are the mover's, as the engine's best move in each position "
                 "gives them (lz-analyze's first move); no score is estimated.")
    return "\n".join(lines) + "\n"


def as_json(report: GameReport) -> str:
    """The same data as JSON: the game, the settings, Black's winrate per position, each
    position's search (side to move, its winrate, root visits, best move and line), every
    move, and each side's largest drops."""
    black, white = report.players
    data = {
        "file": str(report.review.source), "game": report.review.label,
        "black": black, "white": white, "result": report.review.game.root.get("RE"),
        "visits": report.visits, "seconds": report.seconds, "seed": report.seed,
        "tree": "kept" if report.tree_kept else "fresh",
        "network": report.network,
        "black_winrate": report.black_winrates,
        "positions": [{"to_move": "BW"[a.to_move], "winrate": a.winrate, "visits": a.visits,
                       "best": gtp_vertex(a.best) if a.best is not None else None,
                       "pv": [gtp_vertex(v) for v in a.pv]}
                      for a in report.analyses or ()],
        "moves": [m.as_dict() for m in report.moves],
        "largest_drops": {"B": [m.as_dict() for m in report.drops(BLACK)],
                          "W": [m.as_dict() for m in report.drops(WHITE)]},
        "summary": summary_line(report),
        "score": None, "score_note": "Leela Zero networks have no score output: winrates only.",
    }
    return json.dumps(data, indent=1) + "\n"
