"""Match statistics, the one place for them: the SPRTs, Elo and the score's interval.

Owns: the Leela Zero server's gating rule (`llr`, `decide`, the H1/H0 values), Wald's SPRT of
`leelaz match --sprt` (`wald_llr`, `wald_decided`), their bounds (`bounds`), Elo of a score
(`elo`, `elo_text`, `elo_with_draws`) and the score interval they rest on
(`score_interval`). The gating match, `leelaz match` and `leelaz zero --status` all print
from here, so one record reads the same everywhere. Imports: stdlib only.

Two SPRTs, both on a win/loss record (Go has no draws), H0 Elo 0 against H1 Elo 35,
alpha = beta = 0.05, the same bounds:
- `llr`, the server's normal approximation, which gating uses with the server's extra rules;
- `wald_llr`, Wald's exact binomial log-likelihood ratio, which `leelaz match --sprt` stops on.

Read from leela-zero-server's classes/utilities.js (LLR, SPRTold, SPRT): H0 Elo 0,
H1 Elo 35, alpha = beta = 0.05, no draws (each game is a win or a loss of the candidate).

    LLR = (s1 - s0)(2 s - s0 - s1) / (2 s (1 - s) / N)      s = W / N, W or L of 0 counted as 1
    s0 = 1 / (1 + 10^(-elo0/400)) = 0.5, s1 = 1 / (1 + 10^(-elo1/400)) = 0.550199
    bounds: ln(beta / (1 - alpha)) = -2.944, ln((1 - beta) / alpha) = +2.944

Decisions, checked in this order (the server's order):
    1. H1 if N >= 400 and W / N >= 0.55;
    2. H0 if 220 wins of 400 can no longer be reached "at +3 sigma":
       0.55 R + 3 sqrt(R) / 2 <= 220 - W, R = 400 - N games left;
    3. H1 if LLR > upper bound and N > 100;
    4. H0 if LLR < lower bound (no minimum number of games);
    5. otherwise no decision (None).
"""

from __future__ import annotations

import math

H1 = "H1"  # the candidate is stronger: promote it
H0 = "H0"  # it is not
ELO0, ELO1 = 0.0, 35.0
ALPHA = BETA = 0.05
#: The server's match length (number_to_play) and its pass rate.
MATCH_GAMES = 400
PASS_RATE = 0.55
#: The LLR may pass a candidate only after more than this many games.
MIN_GAMES_TO_PASS = 100


def win_probability(elo: float) -> float:
    """The logistic score of an Elo difference."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def bounds(alpha: float = ALPHA, beta: float = BETA) -> tuple[float, float]:
    """(lower, upper) LLR bounds: ln(beta / (1 - alpha)), ln((1 - beta) / alpha)."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def wald_llr(wins: int, losses: int, elo0: float = ELO0, elo1: float = ELO1) -> float:
    """Wald's log-likelihood ratio of H1 (elo1) against H0 (elo0) for a win/loss record, with
    the logistic win probability `win_probability` (Go has no draws)."""
    p0 = win_probability(elo0)
    p1 = win_probability(elo1)
    return wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))


def wald_decided(wins: float, games: int) -> bool:
    """Whether Wald's test has accepted H1 or H0 (at or past a bound)."""
    value = wald_llr(int(wins), games - int(wins))
    low, high = bounds()
    return value <= low or value >= high


def llr(wins: int, losses: int, elo0: float = ELO0, elo1: float = ELO1) -> float:
    """The server's normal-approximation log-likelihood ratio of H1 against H0."""
    w = wins if wins > 0 else 1
    l = losses if losses > 0 else 1
    n = w + l
    s = w / n
    s0, s1 = win_probability(elo0), win_probability(elo1)
    return (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * s * (1.0 - s) / n)


def decide(wins: int, losses: int) -> str | None:
    """H1, H0 or None (go on), by the server's rules in their order."""
    n = wins + losses
    if n >= MATCH_GAMES and wins / n >= PASS_RATE:
        return H1
    target = MATCH_GAMES / 2 + 2 * math.sqrt(MATCH_GAMES / 4)  # 220 of 400
    left = max(0, MATCH_GAMES - n)
    if PASS_RATE * left + 3.0 * math.sqrt(left) / 2.0 <= target - wins:
        return H0
    value = llr(wins, losses)
    low, high = bounds()
    if value > high and n > MIN_GAMES_TO_PASS:
        return H1
    if value < low:
        return H0
    return None


def elo(wins: float, games: float = 1) -> float:
    """Elo difference of a score of `wins` out of `games` (a share p in [0, 1] when `games` is
    left out): 400 log10(p / (1 - p)); +-inf at a shutout (print it with `elo_text`, which
    never shows `inf`); 0 without games."""
    if games <= 0:
        return 0.0
    p = wins / games
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return 400.0 * math.log10(p / (1.0 - p))


def elo_with_draws(wins: float, losses: float, draws: float = 0.0) -> tuple[float, str] | None:
    """(Elo estimate, '' or '>' or '<' for a shut-out bound) of a record in which draws count
    half; None without games. A shut-out has no finite estimate, so it gets the bound computed
    as if one more game had been drawn, marked with '>' or '<' (`leelaz zero --status`)."""
    games = wins + losses + draws
    if games <= 0:
        return None
    score = wins + draws / 2
    mark = ""
    if score <= 0 or score >= games:  # as if one more game had been drawn
        mark = ">" if score >= games else "<"
        score, games = score + 0.5, games + 1
    return elo(score, games), mark


def score_interval(wins: float, games: int, z: float = 1.96) -> tuple[float, float, float]:
    """Score p = wins / games and its 95% interval by Wilson's score method (Wilson 1927).

    The textbook normal interval p +- z sqrt(p (1 - p) / n) collapses to a point at a
    shutout (4-0 gives 100.0%..100.0%, as if four games proved anything); Wilson's stays
    inside [0, 1], is honest at the ends (4-0: 51.0%..100%) and near the normal one in the
    middle."""
    if games <= 0:
        return 0.5, 0.0, 1.0
    p = wins / games
    z2 = z * z
    centre = (p + z2 / (2 * games)) / (1 + z2 / games)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / games + z2 / (4 * games * games)) \
        / (1 + z2 / games)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def elo_text(wins: float, games: int) -> str:
    """`Elo +191 (+40..+398)`, the estimate and its 95% interval; after a shutout, which has
    no finite estimate, the one bound the games give: `Elo > +7 (95% bound; 4-0 has no
    finite estimate)`. Never `inf`."""
    if games <= 0:
        return "Elo ? (no games)"
    p, low, high = score_interval(wins, games)
    if p >= 1.0:
        return f"Elo > {elo(low * games, games):+.0f} (95% bound; a shutout has no finite " \
               "estimate)"
    if p <= 0.0:
        return f"Elo < {elo(high * games, games):+.0f} (95% bound; a shutout has no finite " \
               "estimate)"
    return (f"Elo {elo(wins, games):+.0f} ({elo(low * games, games):+.0f}.."
            f"{elo(high * games, games):+.0f})")
