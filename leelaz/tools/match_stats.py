"""The statistics of a match: score with its interval, Elo, and the sequential test (SPRT).

Owns: the arithmetic `leelaz match` prints after every game and at the end. Imports: stdlib,
leelaz.selfplay.sprt (the score interval and the Elo line, shared with the gating match).
"""

from __future__ import annotations

import math

# The score's interval and the Elo line are the gating rule's, so both verbs print one way.
from leelaz.selfplay.sprt import elo_text, score_interval  # noqa: F401 (leelaz match's)

#: The SPRT `leelaz match --sprt` runs: H0 elo 0 against H1 elo 35, alpha = beta = 0.05.
SPRT_ELO0, SPRT_ELO1 = 0.0, 35.0


def elo(p: float) -> float:
    """Elo difference for score p: 400 log10(p / (1 - p)) (infinite at 0 and 1; print it
    with `elo_text`, which never shows `inf`)."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return 400.0 * math.log10(p / (1.0 - p))


def sprt_llr(wins: int, losses: int, elo0: float = SPRT_ELO0, elo1: float = SPRT_ELO1) -> float:
    """Log-likelihood ratio of H1 (elo1) against H0 (elo0) for a win/loss record, with the
    logistic win probability 1 / (1 + 10^(-elo/400)) (Go has no draws)."""
    p0 = 1.0 / (1.0 + 10 ** (-elo0 / 400.0))
    p1 = 1.0 / (1.0 + 10 ** (-elo1 / 400.0))
    return wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """(lower, upper): accept H0 at or below the lower bound, H1 at or above the upper."""
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def sprt_decided(wins: float, games: int) -> bool:
    llr = sprt_llr(int(wins), games - int(wins))
    low, high = sprt_bounds()
    return llr <= low or llr >= high


def summary(name1: str, wins: float, games: int, sprt: bool) -> str:
    """`name1: 30/40 = 75.0% (95% CI ..), Elo +191 (..)` and, with sprt, the test's state."""
    p, lo, hi = score_interval(wins, games)
    text = (f"{name1}: {wins:g}/{games} = {100 * p:.1f}% "
            f"(95% CI {100 * lo:.1f}%..{100 * hi:.1f}%), {elo_text(wins, games)}")
    if sprt:
        llr = sprt_llr(int(wins), games - int(wins))
        low, high = sprt_bounds()
        verdict = "H1 accepted" if llr >= high else "H0 accepted" if llr <= low else "continue"
        text += f"; SPRT(0,35) LLR {llr:.2f} [{low:.2f}, {high:.2f}] {verdict}"
    return text


def margin_line(name1: str, margins: list[float], resigned: int, z: float = 1.96) -> str:
    """`margin of name1: +12.3 points (95% CI +8.1..+16.5) over 40 counted games; 3 ended by
    resignation`: the mean signed score of engine 1 over the games counted to the end."""
    n = len(margins)
    if n == 0:
        return f"margin of {name1}: no counted game; {resigned} ended by resignation"
    mean = sum(margins) / n
    var = sum((m - mean) ** 2 for m in margins) / (n - 1) if n > 1 else 0.0
    half = z * math.sqrt(var / n)
    return (f"margin of {name1}: {mean:+.1f} points (95% CI {mean - half:+.1f}.."
            f"{mean + half:+.1f}) over {n} counted games; {resigned} ended by resignation")


def forfeit_line(forfeits: dict[str, dict[str, int]]) -> str:
    """`forfeits: A 2 (crash 1, timeout 1); B 0`: who lost games without playing them out."""
    parts = []
    for name, causes in forfeits.items():
        detail = ", ".join(f"{c} {n}" for c, n in sorted(causes.items()))
        parts.append(f"{name} {sum(causes.values())}" + (f" ({detail})" if detail else ""))
    return "forfeits: " + "; ".join(parts)
