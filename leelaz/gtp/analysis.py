"""lz-analyze / lz-genmove_analyze: the tag grammar and the `info move ...` line (src/GTP.cpp).

Owns: `AnalyzeTags` (+ `parse_analyze_tags`), `ordered_rows` and `format_info_line`.
Imports: game.coords, search.result.

Tags, in any order: a bare integer (interval in centiseconds), `interval N`, `minmoves N`,
`b|black|w|white` (side to analyze), and `avoid|allow COLOR MOVES UNTIL`, MOVES being a comma
list of vertices (pass/resign allowed) or rectangles `A1:C3` (colon at index 2 or 3, both
corners real points). UNTIL >= 1 means "for the next UNTIL moves": the restriction holds while
movenum <= UNTIL + current movenum - 1. `allow` and a non-pass/resign `avoid` for one colour
together are invalid. Anything else: ValueError, which the command answers with
`? cannot parse analyze tags`.

The info line: one entry per root child with visits (plus unvisited ones, in the children's
order, while fewer than minmoves are listed), sorted stably, best first (LCB when both moves
have more than 2 visits and more than 10% of the most visited move's, else visits, then
winrate), joined by single spaces on one line:
    info move D4 visits 80 winrate 4405 prior 1828 lcb 4379 order 0 pv D4 Q16 ...
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from leelaz.game.coords import (BLACK, PASS, RESIGN, WHITE, gtp_vertex, parse_gtp_vertex,
                                vertex, xy)
from leelaz.search.result import SearchResult

PARSE_ERROR = "cannot parse analyze tags"


@dataclass
class AnalyzeTags:
    """Parsed tags; satisfies search.search.MoveRestrictions."""

    who: int = BLACK  # side to analyze (default: the side to move)
    interval_cs: int = 0  # 0 = no info lines while searching
    min_moves: int = 0  # list at least this many moves (unvisited ones too)
    avoid: list[tuple[int, int, int]] = field(default_factory=list)  # (color, vertex, until)
    allow: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def has_move_restrictions(self) -> bool:
        return bool(self.avoid or self.allow)

    def is_allowed(self, color: int, v: int, move_num: int) -> bool:
        """False when an avoid entry covers (color, v, move_num), or an allow list is in
        force for colour and move number and v (not pass/resign) is not in it."""
        for c, mv, until in self.avoid:
            if c == color and mv == v and move_num <= until:
                return False
        if v != PASS and v != RESIGN:
            active = False
            for c, mv, until in self.allow:
                if c == color and move_num <= until:
                    active = True
                    if mv == v:
                        return True
            if active:
                return False
        return True


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(PARSE_ERROR) from None


def _parse_moves(text: str) -> list[int]:
    """Comma-separated vertices and rectangles -> vertices (ValueError on any bad one)."""
    moves = []
    for item in text.split(","):
        if ":" in item:
            sep = item.index(":")
            if sep not in (2, 3):
                raise ValueError(PARSE_ERROR)
            a, b = parse_gtp_vertex(item[:sep]), parse_gtp_vertex(item[sep + 1:])
            if a < 0 or b < 0:
                raise ValueError(PARSE_ERROR)
            (x1, y1), (x2, y2) = xy(a), xy(b)
            for x in range(min(x1, x2), max(x1, x2) + 1):
                for y in range(min(y1, y2), max(y1, y2) + 1):
                    moves.append(vertex(x, y))
        else:
            moves.append(parse_gtp_vertex(item))
    return moves


def _parse_color(text: str) -> int:
    if text in ("b", "black"):
        return BLACK
    if text in ("w", "white"):
        return WHITE
    raise ValueError(PARSE_ERROR)


def parse_analyze_tags(args, to_move: int, move_num: int) -> AnalyzeTags:
    """Tags from the argument tokens (lower case); `to_move` and `move_num` of the game."""
    tags = AnalyzeTags(who=to_move)
    tokens = list(args)
    i = 0
    avoid_stones = {BLACK: False, WHITE: False}
    allowing = {BLACK: False, WHITE: False}
    try:
        while i < len(tokens):
            tag = tokens[i]
            i += 1
            if tag[:1].isdigit():
                tags.interval_cs = _parse_int(tag)
            elif tag in ("avoid", "allow"):
                if i + 3 > len(tokens):
                    raise ValueError(PARSE_ERROR)
                color_text, moves_text, until_text = tokens[i:i + 3]
                i += 3
                moves = _parse_moves(moves_text)
                color = _parse_color(color_text)
                until = _parse_int(until_text)
                if until < 1:
                    raise ValueError(PARSE_ERROR)
                until += move_num - 1
                for mv in moves:
                    if tag == "avoid":
                        tags.avoid.append((color, mv, until))
                        if mv not in (PASS, RESIGN):
                            avoid_stones[color] = True
                    else:
                        tags.allow.append((color, mv, until))
                        allowing[color] = True
                if any(avoid_stones[c] and allowing[c] for c in (BLACK, WHITE)):
                    raise ValueError(PARSE_ERROR)
            elif tag in ("b", "black", "w", "white"):
                tags.who = _parse_color(tag)
            elif tag in ("interval", "minmoves"):
                if i >= len(tokens):
                    raise ValueError(PARSE_ERROR)
                value = _parse_int(tokens[i])
                i += 1
                if tag == "interval":
                    tags.interval_cs = value
                else:
                    tags.min_moves = value
            else:
                raise ValueError(PARSE_ERROR)
    except ValueError:
        raise ValueError(PARSE_ERROR) from None
    return tags


def _less(a, b) -> bool:
    """LZ's OutputAnalysisData order: is entry a worse than entry b?"""
    if a[5] and b[5] and a[4] != b[4]:
        return a[4] < b[4]
    if a[1] == b[1]:
        return a[2] < b[2]
    return a[1] < b[1]


def _cmp(a, b) -> int:
    return -1 if _less(a, b) else (1 if _less(b, a) else 0)


def ordered_rows(result: SearchResult, min_moves: int = 0) -> list[tuple]:
    """The entries of one report in lz-analyze's order (best first): (move, visits,
    winrate, prior, lcb, exceeded, pv) per listed child, winrate 0 when unvisited. The
    info line is made of them, and so are other reports of the same numbers (the JSON
    analysis mode)."""
    children = result.children
    if not children:
        return []
    max_visits = max(c.visits for c in children)
    rows = []
    for c in children:
        if c.visits == 0 and len(rows) >= min_moves:
            continue
        exceeded = c.visits > 2 and c.visits > max_visits * 0.10
        rows.append((c.move, c.visits, c.winrate if c.visits else 0.0, c.prior, c.lcb,
                     exceeded, c.pv))
    rows.sort(key=functools.cmp_to_key(_cmp), reverse=True)
    return rows


def format_info_line(result: SearchResult, min_moves: int = 0) -> str:
    """The whole `info move ...` line of one report, newline included ('' without children)."""
    rows = ordered_rows(result, min_moves)
    if not rows:
        return ""
    entries = []
    for order, (move, visits, winrate, prior, lcb, _, pv) in enumerate(rows):
        pv_text = " ".join(gtp_vertex(m) for m in pv)
        entries.append(f"info move {gtp_vertex(move)} visits {visits} "
                       f"winrate {int(winrate * 10000)} prior {int(prior * 10000)} "
                       f"lcb {int(max(0.0, lcb) * 10000)} order {order} pv {pv_text}")
    return " ".join(entries) + "\n"
