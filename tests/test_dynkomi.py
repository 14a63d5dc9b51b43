"""The dynamic-komi algorithm and dyn_komi_test's verdict on closed-form curves
(docs/dynamic-komi.md §7, cases T4-T8 and T10).

Expected komis are the doc's worked examples; each is re-derived here by hand in the comments
(E is a logistic curve, every trial komi is dyadic, so the results are exact).
"""

from __future__ import annotations

import math

import pytest

from leelaz.config import FLT_MAX, resolve_dyn_komi
from leelaz.nn.komi_curve import GOOD, GRID, UNUSABLE, USE_NEG, USE_POS, komi_test
from leelaz.search import dynkomi


def sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def recording(fn):
    """A curve that remembers the komis it was asked for."""
    asked = []

    def curve(k):
        asked.append(k)
        return fn(k)

    curve.asked = asked
    return curve


HANDICAP = resolve_dyn_komi({"handicap": True, "target_komi": 0.0})
NONSLACK = resolve_dyn_komi({"nonslack": True})


# ---- T7: step and bisect -------------------------------------------------------------------
def test_a_handicap_up_steps_then_bisects():
    e = recording(lambda k: sigma((k - 40) / 10))
    assert dynkomi.step_up(e, 0.0, 0.09, HANDICAP) == 16.845703125
    assert e.asked == [7.5, 15.0, 30.0, 22.5, 18.75, 16.875, 15.9375, 16.40625, 16.640625,
                       16.7578125, 16.81640625]


def test_g_opp_komi_fit_after_a():
    own = lambda k: sigma((k - 40) / 10)  # noqa: E731
    opp = lambda k: sigma((k - 35) / 10)  # noqa: E731
    assert dynkomi.step_up(opp, 0.0, 0.09, HANDICAP) == 11.8505859375
    lines = []
    stm, opp_komi, changed = dynkomi.fit_komis(own, opp, 0.0, 0.0, 0.05, HANDICAP,
                                               log=lines.append)
    assert (stm, opp_komi, changed) == (16.845703125, 11.8505859375, True)
    assert f"{stm:f} {opp_komi:f}" == "16.845703 11.850586"  # what stderr shows
    assert lines[0] == f"{own(0.0):f}, {own(0.0):f}, 0.000000\n"


def test_b_handicap_down_to_the_target():
    e = lambda k: sigma((k - 10) / 10)  # noqa: E731  E(0) = .269 >= .09
    assert dynkomi.step_down(e, 30.0, 0.09, HANDICAP) == 0.0
    assert dynkomi.fit_komis(e, e, 30.0, 30.0, 0.5, HANDICAP)[:2] == (0.0, 0.0)


def test_b2_handicap_down_with_bisection():
    e = recording(lambda k: sigma((k - 30) / 10))  # E(0) = .047 < .09
    assert dynkomi.step_down(e, 60.0, 0.09, HANDICAP) == 6.9140625
    assert e.asked == [0.0, 30.0, 15.0, 7.5, 3.75, 5.625, 6.5625, 7.03125, 6.796875]


def test_c_nonslack_down():
    e = recording(lambda k: sigma((k + 30) / 5))
    assert dynkomi.step_down(e, 7.5, 0.8, NONSLACK) == -23.056640625
    assert e.asked[:3] == [-7.5, -15.0, -30.0]


def test_d_early_accept_of_a_standard_komi():
    e = lambda k: sigma((k + 10) / 5)  # noqa: E731  E(-7.5) = .622 is inside (.2, .8)
    assert dynkomi.fit_komis(e, e, 7.5, 7.5, 0.95, NONSLACK) == (-7.5, -7.5, True)


def test_e_reverts_after_nine_trials():
    e = recording(lambda k: sigma((k - 5000) / 10))
    assert dynkomi.step_up(e, 0.0, 0.09, HANDICAP) == 0.0
    assert e.asked == [7.5 * 2 ** i for i in range(9)]  # 7.5 ... 1920
    assert dynkomi.fit_komis(e, e, 0.0, 0.0, 0.05, HANDICAP) == (0.0, 0.0, False)


def test_f_nonslack_up_to_a_non_standard_komi():
    e = recording(lambda k: sigma((k - 20) / 5))  # E(15) = .269 in the band, not standard
    assert dynkomi.step_up(e, 7.5, 0.2, NONSLACK) == 13.0810546875
    assert e.asked[0] == 15.0


def test_h_nonslack_snaps_back_to_the_target():
    assert dynkomi.fit_komis(lambda k: .35, lambda k: .35, 13.08, 13.08, 0.5,
                             NONSLACK)[:2] == (7.5, 7.5)
    k = dynkomi.f32(13.08)
    assert dynkomi.fit_komis(lambda k: .85, lambda k: .85, 13.08, 13.08, 0.5,
                             NONSLACK) == (k, k, False)


def test_i_the_network_decides_the_direction():
    assert dynkomi.fit_komis(lambda k: .08, lambda k: .08, 0.0, 0.0, 0.05,
                             HANDICAP) == (0.0, 0.0, False)


def test_caps_clamp_every_trial():
    capped = HANDICAP.with_(max_komi=20.0)
    e = recording(lambda k: sigma((k - 40) / 10))
    dynkomi.step_up(e, 0.0, 0.09, capped)
    assert max(e.asked) <= 20.0
    low = HANDICAP.with_(max_komi=5.0)
    e = recording(lambda k: sigma((k - 40) / 10))
    dynkomi.step_up(e, 0.0, 0.09, low)
    assert max(e.asked) <= 5.0


def test_orig_policy_stops_at_7_5_before_an_invalid_komi():
    e = lambda k: sigma((k - 40) / 10)  # noqa: E731
    assert dynkomi.step_up(e, 0.0, 0.09, HANDICAP, invalid_at=lambda k: k > 7.5) == 7.5
    off = HANDICAP.with_(orig_policy=False)
    assert dynkomi.step_up(e, 0.0, 0.09, off, invalid_at=lambda k: k > 7.5) == 16.845703125


# ---- T6: trigger -----------------------------------------------------------------------------
@pytest.mark.parametrize("wr,stm,opp,expected", [
    (.05, 0, 0, True), (.20, 0, 0, False), (.20, 16.8, 11.9, True), (.10, 16.8, 11.9, False),
    (.10, 0, 0, False)])
def test_trigger_handicap(wr, stm, opp, expected):
    assert dynkomi.out_of_range(HANDICAP, wr, 10, stm, opp) is expected


@pytest.mark.parametrize("wr,stm,opp,expected", [
    (.95, 7.5, 7.5, True), (.85, 0, 0, False), (.75, 0, 0, True), (.25, 13.08, 13.08, True),
    (.15, 13.08, 13.08, False)])
def test_trigger_nonslack(wr, stm, opp, expected):
    assert dynkomi.out_of_range(NONSLACK, wr, 10, stm, opp) is expected


def test_no_trigger_without_visits():
    assert not dynkomi.out_of_range(HANDICAP, 0.0, 0, 0.0, 0.0)


# ---- T5: selection, T4: validity --------------------------------------------------------------
def test_selection_keeps_the_positions_nearest_the_mean():
    p = resolve_dyn_komi({"handicap": True, "adj_positions": 25, "adj_pct": 20})
    assert p.kept_positions == 5
    w = [.1, .2, .3, .35, .4, .45, .5, .9, .95, 1]
    assert [w[i] for i in dynkomi.closest(w, p.kept_positions)] == [.3, .35, .4, .45, .5]


@pytest.mark.parametrize("black,stm,opp,under_pos,under_neg", [
    (True, 10, 3, False, True), (True, -10, 3, True, False), (False, 3, 10, True, False),
    (False, -10, -10, False, True)])
def test_invalid_under_pos_and_neg(black, stm, opp, under_pos, under_neg):
    assert dynkomi.invalid(black, stm, opp, pos=True, neg=False) is under_pos
    assert dynkomi.invalid(black, stm, opp, pos=False, neg=True) is under_neg
    assert not dynkomi.invalid(black, stm, opp, pos=False, neg=False)


# ---- T10: flags ---------------------------------------------------------------------------------
def test_flags_as_the_doc_resolves_them():
    assert resolve_dyn_komi({"adj_pct": 10}).kept_positions == 20
    assert resolve_dyn_komi({"adj_positions": 5}).adj_positions == 8
    assert resolve_dyn_komi({"fixed_symmetry": 9}).fixed_symmetry == -1
    assert resolve_dyn_komi({"fixed_symmetry": 3}).fixed_symmetry == 3
    p = resolve_dyn_komi({"handicap": True, "max_wr": .2})
    assert (p.max_wr, p.min_wr, p.wr_margin, p.num_adj, p.dyn_fpu) == (.2, .06, .03, 1, True)
    both = resolve_dyn_komi({"handicap": True, "nonslack": True})
    assert (both.max_wr, both.min_wr, both.wr_margin) == (.9, .1, .1)
    plain = resolve_dyn_komi({})
    assert not plain.enabled and not plain.komi_in_planes and plain.num_adj == 0
    assert plain.max_komi == FLT_MAX and not plain.dyn_fpu
    assert not resolve_dyn_komi({"tg_sure_backup": True}).sure_backup
    assert resolve_dyn_komi({"target_komi": 0.0}).komi_in_planes


@pytest.mark.parametrize("flags", [
    {"target_komi": math.nan}, {"target_komi": math.inf}, {"max_wr": .1, "min_wr": .2},
    {"pos": True, "neg": True}, {"max_wr": 1.5}, {"adj_pct": 0.0}, {"num_adj": -1},
    {"max_komi": 0.0, "min_komi": 1.0}])
def test_bad_flags_are_refused(flags):
    with pytest.raises(ValueError):
        resolve_dyn_komi(flags)


# ---- T8: dyn_komi_test -------------------------------------------------------------------------
def linear(k: float) -> float:
    return min(1.0, max(0.0, 0.5 - k / 60))


def raised_at_minus_20(k):
    return linear(k) + (0.03 if k == -20.0 else 0.0)


def jump_after_100(k):
    return linear(k) if k <= 100 else 0.1


@pytest.mark.parametrize("w,neg,pos,code,rising", [
    (linear, 0.0, 0.0, GOOD, ()),
    (raised_at_minus_20, 0.021667, 0.0, GOOD, (-20.0,)),
    (jump_after_100, 0.0, 0.2, USE_NEG, (100.5,)),
    (lambda k: min(0.9, linear(k)), 0.1, 0.0, USE_POS, ()),
    (lambda k: min(0.9, jump_after_100(k)), 0.1, 0.2, UNUSABLE, (100.5,)),
])
def test_dyn_komi_test_verdicts(w, neg, pos, code, rising):
    calls = []

    def curve(komis):
        calls.append(len(komis))
        return [w(k) for k in komis]

    result = komi_test(curve)
    assert calls == [1202]  # one batched call over the whole grid
    assert result.neg == pytest.approx(neg, abs=1e-6)
    assert result.pos == pytest.approx(pos, abs=1e-6)
    assert result.code == code and result.rising == rising
    lines = result.lines()
    assert lines[:2] == ["komi | winrate", "---- | ----"] and len(lines) == 2 + 1201 + 4
    assert lines[2] == f"-300.000000 | {w(-300.0):f}" and lines[1202].startswith("300.000000")
    assert lines[-4].endswith("Winrate increasing near "
                              + "".join(f"{k:4.1f}, " for k in rising) + ".")


def test_the_grid():
    assert GRID[0] == -300.5 and GRID[1] == -300.0 and GRID[601] == 0.0
    assert GRID[602] == 0.5 and GRID[-1] == 300.0 and len(GRID) == 1202
