"""The lines `leelaz match` prints after every game and at the end: score, Elo, SPRT, margin.

Owns: the wording of those lines (`summary`, `margin_line`, `forfeit_line`). The arithmetic
(score interval, Elo, Wald's SPRT) is selfplay/sprt.py's, shared with the gating match, so both
verbs print one way. Imports: stdlib, leelaz.selfplay.sprt.
"""

from __future__ import annotations

import math

from leelaz.selfplay.sprt import bounds, elo_text, score_interval, wald_llr


def summary(name1: str, wins: float, games: int, sprt: bool) -> str:
    """`name1: 30/40 = 75.0% (95% CI ..), Elo +191 (..)` and, with sprt, the test's state."""
    p, lo, hi = score_interval(wins, games)
    text = (f"{name1}: {wins:g}/{games} = {100 * p:.1f}% "
            f"(95% CI {100 * lo:.1f}%..{100 * hi:.1f}%), {elo_text(wins, games)}")
    if sprt:
        llr = wald_llr(int(wins), games - int(wins))
        low, high = bounds()
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
