"""Who won, from an SGF result (RE) text: the rules, all in one place.

Owns: `lz_winner` (Leela Zero's rule, what dump_supervised and the engine use), `result_kind`
(the trainer's reading, which also says how the game ended) and `is_time_or_forfeit`.
Imports: game.coords.

Two readings on purpose: Leela Zero's is exact (case-sensitive `B+`/`W+` at the start, any
`Time` disqualifies), and the oracle tests hold dump_supervised to it; the trainer's is lenient
about case and spaces and keeps the ending (resignation, score, time, forfeit), so that it can
drop games decided by the clock, which Leela Zero would keep.
"""

from __future__ import annotations

from leelaz.game.coords import BLACK, WHITE, Color

#: result_kind's winners, from Black's side.
BLACK_WINS, WHITE_WINS, NO_RESULT = 1, -1, 0


def lz_winner(result: str | None) -> Color | None:
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


def result_kind(result: str) -> tuple[int, str]:
    """(winner, kind) from an RE value: winner BLACK_WINS/WHITE_WINS/NO_RESULT; kind is 'R'
    (resignation), 'S' (score), 'T' (time), 'F' (forfeit) or '?'."""
    r = result.strip().upper()
    winner = BLACK_WINS if r.startswith("B+") else WHITE_WINS if r.startswith("W+") else NO_RESULT
    if winner == NO_RESULT:
        return NO_RESULT, "?"
    tail = r[2:]
    if tail[:1] in ("R", "T", "F"):
        return winner, tail[0]
    if tail[:1].isdigit():
        return winner, "S"
    return winner, "?"
