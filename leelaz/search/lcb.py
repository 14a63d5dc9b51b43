"""Student-t quantiles for the lower confidence bound (LCB) of a move's winrate.

Owns: `t_quantile(df)`, the one-sided critical value with tail probability ALPHA = 1e-5 for
df degrees of freedom, df clamped to 1..1000 as Leela Zero's 1000-entry table does.
Imports: stdlib only.

Leela Zero fills its table with boost's inverse Student-t; we compute the same numbers from the
regularized incomplete beta function (continued fraction, Lentz's method), solving
P(T > t) = ALPHA by Newton's method. Each df is computed once, on first use, and memoised: a search
only ever asks for df = visits - 1, so start-up pays nothing. Reference values (checked in
tests/test_node.py): df1 31831, df2 223.6, df3 47.93, df5 15.55, df10 7.527, df30 5.054,
df100 4.478, df1000 4.285.
"""

from __future__ import annotations

import math

ALPHA = 1e-5
TABLE_SIZE = 1000

_cache: dict[int, float] = {}


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / (c if abs(c) > tiny else tiny)
        h *= d * c
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / (c if abs(c) > tiny else tiny)
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_tail(t: float, df: int) -> float:
    """P(T > t) for Student's t with df degrees of freedom, t >= 0."""
    return 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))


def _log_density(t: float, df: int) -> float:
    """log of Student's t density with df degrees of freedom."""
    return (math.lgamma((df + 1) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
            - (df + 1) / 2.0 * math.log1p(t * t / df))


def _bisect(df: int) -> float:
    lo, hi = 0.0, 1e6  # P(T > 1e6) < ALPHA even for df = 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_tail(mid, df) > ALPHA:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def _solve(df: int) -> float:
    """Newton's method on log P(T > t) = log ALPHA, from the Cornish-Fisher start: 3 to 5
    incomplete-beta evaluations per df where bisection needs 40 (a long search meets each df
    up to 1000 once, inside the timed search). Bisection is the fallback."""
    z = 4.264890793922825  # the normal quantile for ALPHA
    t = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)
    target = math.log(ALPHA)
    for _ in range(50):
        tail = t_tail(t, df)
        if not tail > 0.0:
            break
        # d/dt log P(T > t) = -f(t) / P(T > t)
        step = (math.log(tail) - target) / math.exp(_log_density(t, df) - math.log(tail))
        if not math.isfinite(step):
            break
        t_next = t + step
        if t_next <= 0.0:
            t_next = 0.5 * t
        if abs(t_next - t) <= 1e-13 * t:
            return t_next
        t = t_next
    return _bisect(df)


def t_quantiles(top: int) -> "np.ndarray":
    """float64 [top + 1]: t_quantile(df) for df = 0..top (top at most TABLE_SIZE), as the
    compiled core reads them (core/kernels.root_contention); each value computed once."""
    import numpy as np

    return np.array([t_quantile(df) for df in range(min(top, TABLE_SIZE) + 1)], np.float64)


def t_quantile(df: int) -> float:
    """One-sided Student-t critical value for ALPHA; df below 1 counts as 1, above 1000 as 1000."""
    df = 1 if df < 1 else (TABLE_SIZE if df > TABLE_SIZE else df)
    value = _cache.get(df)
    if value is None:
        value = _cache[df] = _solve(df)
    return value
