"""The annotated SGF of a review: the original game with the engine's verdict on each move.

Owns: `annotate`. Imports: game.coords, game.sgf, review.moves, review.games.

What is added, and nothing else changes (every original property, comment and variation is
kept; the main line stays the first child everywhere):
- on each main-line node, Sabaki's `SBKV`: Black's winrate in percent of the position at
  that node (Sabaki's winrate graph reads the value of every node of the current line as
  Black's winrate, 0..100, and writes it with two decimals; an SBKV already there is
  replaced);
- on each move's node, a comment (after the original one, if any): the mover's winrate
  before and after, the winrate lost, the engine's preferred move with its line and visits;
  a move that lost more than the variation threshold is called a mistake, by winrate lost
  (never points: the networks have no score head);
- where a move lost more than the threshold and the engine preferred another move, that
  move's line as a variation beside the played move.
"""

from __future__ import annotations

from leelaz.game.coords import PASS, gtp_vertex, sgf_vertex
from leelaz.game.sgf import SgfGame, SgfNode
from leelaz.review.games import ReviewGame
from leelaz.review.moves import MoveReview, percent

SIDE = ("Black", "White")


def _sgf_point(v: int) -> str:
    return "" if v == PASS else sgf_vertex(v)


def _add_comment(node: SgfNode, text: str) -> None:
    old = node.get("C")
    node.props["C"] = [f"{old.rstrip()}\n\n{text}" if old and old.strip() else text]


def move_comment(m: MoveReview, variation_drop: float) -> str:
    """The comment on a move's node."""
    side = SIDE[m.color]
    lost = m.drop
    verdict = (f"winrate lost {percent(lost)}" if lost >= 0
               else f"winrate gained {percent(-lost)}")
    if lost > variation_drop:
        verdict = f"Mistake: {verdict}"
    lines = [f"leelaz review, move {m.move.number}: {side} {m.played_text}",
             f"{side}'s winrate {percent(m.before)} before, {percent(m.after)} after; "
             f"{verdict}"]
    if m.preferred is None:
        lines.append("leelaz had no move to search here.")
    elif m.preferred == m.move.vertex:
        lines.append(f"leelaz prefers the same move ({m.visits} visits), line: "
                     + " ".join(_gtp(m.pv)))
    else:
        lines.append(f"leelaz prefers {m.preferred_text} ({m.visits} visits), line: "
                     + " ".join(_gtp(m.pv)))
    return "\n".join(lines)


def _gtp(vertices) -> list[str]:
    return [gtp_vertex(v) for v in vertices]


def _variation(m: MoveReview) -> SgfNode:
    """The preferred line as a chain of nodes, colours alternating from the mover's."""
    first = SgfNode()
    node, color = first, m.color
    for i, v in enumerate(m.pv):
        if i:
            child = SgfNode()
            node.children.append(child)
            node = child
        node.props["BW"[color]] = [_sgf_point(v)]
        color = 1 - color
    first.props["C"] = [f"leelaz's line instead of {SIDE[m.color]} {m.played_text} "
                        f"(move {m.move.number}): {SIDE[m.color]}'s winrate "
                        f"{percent(m.before)}, {m.visits} visits"]
    return first


def annotate(review: ReviewGame, black_winrates: list[float], moves: list[MoveReview],
             variation_drop: float) -> SgfGame:
    """`review.game` with the annotations (changed in place, and returned)."""
    nodes = review.game.mainline()
    for i, node in enumerate(nodes):
        node.props["SBKV"] = [f"{100.0 * black_winrates[review.node_position[i]]:.2f}"]
    for m in moves:
        node = nodes[m.move.node]
        _add_comment(node, move_comment(m, variation_drop))
        if (m.drop > variation_drop and m.preferred is not None
                and m.preferred != m.move.vertex and m.pv):
            parent = nodes[m.move.node - 1]
            parent.children.append(_variation(m))
    return review.game

