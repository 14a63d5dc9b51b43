"""The server's gating rule (leelaz/selfplay/sprt.py) against numbers worked out here.

The expected LLRs are computed in this file from the formula as the server's utilities.js
writes it (with its own constants), and checked against the golden values that
the server's LLR and SPRT (classes/utilities.js) give; the decisions at each boundary are
derived independently by walking the rules by hand.
"""

from __future__ import annotations

import math

import pytest

from leelaz.selfplay import sprt


def server_llr(w: int, l: int) -> float:
    """utilities.js's LLR, written out again: zero counts become 1; s0 = 0.5 and
    s1 = 1 / (1 + 10^(-35/400))."""
    w, l = max(w, 1), max(l, 1)
    n = w + l
    s = w / n
    s1 = 1 / (1 + math.pow(10, -35 / 400))
    return (s1 - 0.5) * (2 * s - 0.5 - s1) / (2 * s * (1 - s) / n)


@pytest.mark.parametrize("w,l,golden", [(67, 34, 3.139), (112, 74, 3.003), (111, 74, 2.898),
                                        (86, 106, -3.008), (60, 40, 1.567)])
def test_llr_golden_values(w, l, golden):
    assert sprt.llr(w, l) == pytest.approx(server_llr(w, l), rel=1e-12)
    assert round(sprt.llr(w, l), 3) == golden


def test_llr_counts_a_shutout_side_as_one():
    assert sprt.llr(19, 0) == pytest.approx(server_llr(19, 1))
    assert sprt.llr(0, 7) == pytest.approx(server_llr(1, 7))


def test_bounds():
    low, high = sprt.bounds()
    assert low == pytest.approx(math.log(0.05 / 0.95)) == pytest.approx(-2.944, abs=5e-4)
    assert high == pytest.approx(math.log(0.95 / 0.05)) == pytest.approx(2.944, abs=5e-4)


def test_llr_passes_only_after_100_games():
    assert server_llr(67, 34) > 2.944 and sprt.decide(67, 34) == sprt.H1  # 101 games
    # 100 games: the LLR alone would pass at 66-34 (3.0), but not before game 101
    assert server_llr(66, 34) > 2.944 and sprt.decide(66, 34) is None
    assert sprt.decide(19, 0) is None  # a shutout of 19 is not enough for the server
    assert sprt.decide(66, 35) is None  # 101 games, LLR 2.71


def test_llr_fails_with_no_minimum():
    assert server_llr(0, 11) < -2.944 and sprt.decide(0, 11) == sprt.H0  # 11 games
    assert server_llr(0, 10) > -2.944 and sprt.decide(0, 10) is None
    assert sprt.decide(86, 106) == sprt.H0


def test_the_400_game_rules():
    # 220 of 400 (55%) passes although the LLR is below the bound
    assert server_llr(220, 180) < 2.944 and sprt.decide(220, 180) == sprt.H1
    assert sprt.decide(219, 181) == sprt.H0  # 219 of 400: 220 no longer reachable
    # reachability "at +3 sigma": with R games left, H0 once 0.55 R + 1.5 sqrt(R) <= 220 - W
    w, n = 148, 296
    r = 400 - n
    assert 0.55 * r + 1.5 * math.sqrt(r) > 220 - w  # 57.2 + 15.3 > 72: go on
    assert sprt.decide(w, n - w) is None
    w, n = 148, 298
    r = 400 - n
    assert 0.55 * r + 1.5 * math.sqrt(r) <= 220 - w  # 56.1 + 15.15 <= 72: fail
    assert sprt.decide(w, n - w) == sprt.H0


def test_minimum_wins_to_pass():
    """The server's SPRT: 67 at 101 games, 93 at 150, 120 at 200, 172 at 300, 220 at 400."""
    for games, wins in ((101, 67), (150, 93), (200, 120), (300, 172), (400, 220)):
        assert sprt.decide(wins, games - wins) == sprt.H1
        assert sprt.decide(wins - 1, games - wins + 1) != sprt.H1


def test_elo():
    assert sprt.elo(50, 100) == 0.0
    assert sprt.elo(75, 100) == pytest.approx(400 * math.log10(3))
    assert sprt.elo(3, 3) == math.inf


def _wilson(wins: int, games: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's interval as the roots in q of (q - p)^2 = z^2 q (1 - q) / n."""
    p, z2 = wins / games, z * z
    a, b, c = 1 + z2 / games, -(2 * p + z2 / games), p * p
    root = math.sqrt(max(b * b - 4 * a * c, 0.0))
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def _elo_of(q: float) -> float:
    return 400 * math.log10(q / (1 - q))


def test_a_shutout_prints_a_finite_bound_not_inf():
    """4-0: no `Elo +inf`, no `100.0%..100.0%`; the lower end of Wilson's interval,
    4 / (4 + z^2) = 51.0%, is the bound."""
    low, high = _wilson(4, 4)
    assert low == pytest.approx(4 / (4 + 1.96 ** 2)) and high == pytest.approx(1.0)
    assert sprt.score_interval(4, 4) == pytest.approx((1.0, low, 1.0))
    text = sprt.elo_text(4, 4)
    assert text.startswith(f"Elo > {_elo_of(low):+.0f} (") and "inf" not in text
    assert sprt.elo_text(0, 4).startswith(f"Elo < {_elo_of(1 - low):+.0f} (")
    low, high = _wilson(30, 40)
    assert sprt.elo_text(30, 40) == \
        f"Elo {_elo_of(0.75):+.0f} ({_elo_of(low):+.0f}..{_elo_of(high):+.0f})"


def test_the_match_lines_after_a_shutout():
    from leelaz.selfplay.network_match import MatchResult
    from leelaz.tools.match_stats import summary

    line = summary("engine1", 4, 4, True)
    assert "100.0%..100.0%" not in line and "inf" not in line
    assert f"(95% CI {100 * 4 / (4 + 1.96 ** 2):.1f}%..100.0%)" in line
    result = MatchResult(wins=4, losses=0, draws=0, games=4, llr=sprt.llr(4, 0),
                         decision=None, elo=sprt.elo(4, 4))
    assert "inf" not in result.line() and "Elo > +7" in result.line()
