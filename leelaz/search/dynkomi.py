"""Dynamic komi: when and to what komi the network's komi is moved (docs/dynamic-komi.md §3, §4).

Owns: the trigger (`out_of_range`), the choice of positions near the mean (`closest`), the
step-and-bisect search (`step_up`, `step_down`, `bisect`), one side's adjustment (`adjust`),
the joint fit of the komi at both turns (`fit_komis`), and the `--pos`/`--neg` validity test
(`invalid`). Imports: stdlib and config (DynKomiParams) only.

Everything here is a pure function of a `Curve`: E(k), White's mean winrate over the kept
positions when the network is told komi k (points given to White). The search builds the
curve from its collected positions and evaluates each trial komi in one batched network call
(search/dynkomi_search.py); the tests hand in closed-form curves.

Komi values are float32 and compared exactly, as in the fork (alreadydone/lz komi+tensorbatch).
The fork compares winrates on a logit scale with a shift that is hard-wired to zero; since the
logit is strictly increasing, comparing raw winrates is the same test, and that is done here.
Fixes over the fork, as the doc's §9 lists: the komi caps clamp every trial value (the fork
skips the ±7.5 steps and the bisection), and the distance to the mean is a real number.
"""

from __future__ import annotations

import struct
from typing import Callable, Sequence

from leelaz.config import DynKomiParams

#: White's mean winrate at network komi k (see module doc).
Curve = Callable[[float], float]
#: Whether the position whose komi is being fitted would be invalid (§4) at komi k.
InvalidAt = Callable[[float], bool]

#: Doublings before giving up (i > 9 in the fork: nine trials at most).
MAX_STEP_TRIALS = 9
#: Bisection rounds (the fork's constant `steps`).
BISECT_STEPS = 8
#: The colour planes' standard komi: the network's training komi.
STANDARD = 7.5


def f32(x: float) -> float:
    """x rounded to float32, the fork's komi type."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _never_invalid(_k: float) -> bool:
    return False


# ------------------------------------------------------------------ trigger and selection
def out_of_range(p: DynKomiParams, white_wr: float, root_visits: int, stm_komi: float,
                 opp_komi: float) -> bool:
    """The adjustment trigger (§3.2): the root's White winrate `white_wr` (running mean, no
    virtual loss) has left the band, or, in nonslack, a komi away from the target is no longer
    needed. Never at 0 visits."""
    if root_visits <= 0:
        return False
    t, lo, hi, m = p.target_komi, p.min_wr, p.max_wr, p.wr_margin
    if white_wr < lo:
        return True
    if white_wr > hi and (p.nonslack or stm_komi != t or opp_komi != t):
        return True
    if p.nonslack and (stm_komi < t or opp_komi < t) and white_wr < hi - m:
        return True
    return p.nonslack and (stm_komi > t or opp_komi > t) and white_wr > lo + m


def closest(winrates: Sequence[float], count: int) -> list[int]:
    """Indices of the `count` winrates nearest their mean (§3.3 step 5-6; ties: the earlier).
    The distance is |w - mean| as a real number (the fork's `abs` may truncate to int)."""
    if not winrates:
        return []
    mean = sum(winrates) / len(winrates)
    order = sorted(range(len(winrates)), key=lambda i: abs(winrates[i] - mean))
    return sorted(order[:count])


def invalid(to_move_black: bool, stm_komi: float, opp_komi: float, pos: bool,
            neg: bool) -> bool:
    """A position whose network value is discarded under --pos / --neg (§4). Both komi fields
    are tested: under --pos a White-turn value is dropped once either komi exceeds 7.5."""
    high, low = max(stm_komi, opp_komi), min(stm_komi, opp_komi)
    pos_region = (high > STANDARD) if to_move_black else (low < -STANDARD)
    neg_region = (low < -STANDARD) if to_move_black else (high > STANDARD)
    return (neg and pos_region) or (pos and neg_region)


# ------------------------------------------------------------------ step and bisect
def _clamp(p: DynKomiParams, k: float) -> float:
    return f32(min(max(k, p.min_komi), p.max_komi))


def _in_band(p: DynKomiParams, v: float) -> bool:
    return p.min_wr + p.wr_margin < v < p.max_wr - p.wr_margin


def _standard(p: DynKomiParams, k: float) -> bool:
    return k in (STANDARD, -STANDARD, f32(p.target_komi))


def bisect(curve: Curve, high: float, low: float, target: float) -> float:
    """Eight halvings of [low, high] keeping E(high) > target >= E(low) for an increasing
    curve; the midpoint of the last interval, not evaluated."""
    for _ in range(BISECT_STEPS):
        mid = f32((high + low) / 2)
        if curve(mid) > target:
            high = mid
        else:
            low = mid
    return f32((high + low) / 2)


def step_up(curve: Curve, k: float, target: float, p: DynKomiParams,
            invalid_at: InvalidAt = _never_invalid) -> float:
    """Raise komi k until E reaches `target`: -7.5, 7.5, then doublings (capped), accepting a
    standard komi whose E is inside the band; then bisect the last step. Gives k back after
    nine trials or at the cap, and stops at 7.5 where a doubling would make the position
    invalid under --orig-policy (§3.5)."""
    orig = k
    for trial in range(1, MAX_STEP_TRIALS + 2):
        last = k
        if trial > MAX_STEP_TRIALS or last >= p.max_komi:
            return orig
        if last < -STANDARD:
            k = -STANDARD
        elif last < STANDARD:
            k = STANDARD
        else:
            k = 2 * last
            if p.orig_policy and invalid_at(k):
                return STANDARD
        k = _clamp(p, k)
        v = curve(k)
        if _in_band(p, v) and _standard(p, k):
            return k
        if v >= target:
            break
    return bisect(curve, k, last, target)


def step_down(curve: Curve, k: float, target: float, p: DynKomiParams,
              invalid_at: InvalidAt = _never_invalid) -> float:
    """Lower komi k until E falls to `target`. Handicap mode goes straight back to the target
    komi T and bisects between k and T only if E(T) is below the target; nonslack mirrors
    step_up (§3.5)."""
    if not p.nonslack:
        t = _clamp(p, p.target_komi)
        if curve(t) < target:
            return bisect(curve, k, t, target)
        return t
    orig = k
    for trial in range(1, MAX_STEP_TRIALS + 2):
        last = k
        if trial > MAX_STEP_TRIALS or last <= p.min_komi:
            return orig
        if last > STANDARD:
            k = STANDARD
        elif last > -STANDARD:
            k = -STANDARD
        else:
            k = 2 * last
            if p.orig_policy and invalid_at(k):
                return -STANDARD
        k = _clamp(p, k)
        v = curve(k)
        if _in_band(p, v) and _standard(p, k):
            return k
        if not v > target:
            break
    return bisect(curve, last, k, target)


# ------------------------------------------------------------------ one side, both sides
def adjust(curve: Curve, k: float, white_wr: float, p: DynKomiParams, *,
           opp_target: float | None = None, invalid_at: InvalidAt = _never_invalid,
           log: Callable[[str], None] | None = None) -> tuple[float, float]:
    """One side's new komi (§3.4): (komi, the target it aimed at, or 0).

    The root's winrate `white_wr` triggers; the network's mean E(k) chooses the direction.
    `opp_target` given: this is the fit of the other turn's komi to the target the first fit
    aimed at (without --pos/--neg it steps towards that target either way). Nonslack then
    snaps back to the target komi when E(T) is inside the margins."""
    lo, hi, m = p.min_wr, p.max_wr, p.wr_margin
    pos_neg = p.pos or p.neg
    if not lo <= white_wr <= hi:
        v = curve(k)
        if log is not None:
            log(f"{v:f}, {v:f}, 0.000000\n")
        if opp_target is not None and not pos_neg:
            if v < opp_target:
                return step_up(curve, k, opp_target, p, invalid_at), 0.0
            if v > opp_target:
                return step_down(curve, k, opp_target, p, invalid_at), 0.0
            return k, 0.0
        if v < lo:
            return step_up(curve, k, lo + m, p, invalid_at), lo + m
        if (k != f32(p.target_komi) or p.nonslack) and v > hi:
            return step_down(curve, k, hi - m, p, invalid_at), hi - m
    if p.nonslack:
        t = _clamp(p, p.target_komi)
        vt = curve(t)
        if lo + m <= vt <= hi - m:
            return t, 0.0
    return k, 0.0


def fit_komis(own: Curve, opp: Curve, stm_komi: float, opp_komi: float, white_wr: float,
              p: DynKomiParams, *, invalid_own: Callable[[float, float], bool] | None = None,
              invalid_opp: Callable[[float, float], bool] | None = None,
              log: Callable[[str], None] | None = None) -> tuple[float, float, bool]:
    """The komi at the root's turns and at the opponent's (§3.6): (stm, opp, changed).

    `own` is E over the side to move's positions, `opp` over the other colour's.
    invalid_own(stm, opp) / invalid_opp(stm of the child, its opp) say whether the root / a
    child of it would be invalid (§4); they matter only with --pos/--neg and --orig-policy.
    `changed` is True when the tree and cache must be cleared."""
    k0, o0 = f32(stm_komi), f32(opp_komi)
    std = (f32(p.target_komi), STANDARD, -STANDARD)
    pos_neg = p.pos or p.neg
    own_invalid = (lambda k: invalid_own(k, o0)) if invalid_own else _never_invalid
    k1, target = adjust(own, k0, white_wr, p, invalid_at=own_invalid, log=log)
    stm, opp_k = k1, o0
    if k1 != k0 or pos_neg:
        if not pos_neg and k1 in std:
            opp_k = k1
        else:
            opp_invalid = (lambda k: invalid_opp(k, k1)) if invalid_opp else _never_invalid
            opp_k, _ = adjust(opp, o0, white_wr, p, opp_target=target,
                              invalid_at=opp_invalid, log=log)
        if opp_k == o0 and not pos_neg:
            stm = k0  # the two turns move together, or not at all
    if not pos_neg and opp_k in std:
        stm = opp_k
    return stm, opp_k, (stm != k0 or opp_k != o0)
