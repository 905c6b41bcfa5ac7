"""Straight-line fits (analysis/fit.py): Theil-Sen slopes within groups with Sen's interval, pooled
increments, and how a slope is read."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from virtbench.analysis.fit import increment_fit, resolved, sen_fit, verdict


def test_one_group_is_theil_sen_with_sens_interval():
    rng = np.random.default_rng(1)
    x = np.repeat(np.arange(0, 50, 5), 2).astype(float)
    y = 3.0 + 0.4 * x + rng.normal(0, 1, x.size)
    f = sen_fit(x, y)
    ref = sps.theilslopes(y, x, alpha=0.95)
    assert f is not None and math.isclose(f.slope, ref.slope)
    assert math.isclose(f.ci_low, ref.low_slope) and math.isclose(f.ci_high, ref.high_slope)
    assert f.span == 45 and f.df == x.size - 2


def test_each_group_has_its_own_intercept():
    """Two pile-ups that start 100 apart share a slope of 2: pairs across them would
    read the offset as slope; within them the slope is exact."""
    x = [0, 10, 20, 30, 40] * 2
    y = [0, 20, 40, 60, 80, 100, 120, 140, 160, 180]
    f = sen_fit(x, y, ["a"] * 5 + ["b"] * 5)
    assert f is not None and f.slope == 2.0 and f.groups == 2
    assert f.ci_low == 2.0 and f.ci_high == 2.0 and math.isclose(f.level, 50.0)


def test_one_bad_point_does_not_carry_the_slope_and_the_interval_covers():
    """A point in ten 10 units high (crun's cgroup retry in most of a point's boots):
    Sen's interval holds the true slope about 95% of the time and stays narrow, where
    least squares' widens several-fold."""
    rng = np.random.default_rng(2)
    x = np.tile(np.arange(0, 1300, 200.0), 3)
    groups = np.repeat([0, 1, 2], 7)
    covered, widths = 0, []
    for _ in range(300):
        noise = rng.normal(0, 0.3, x.size) + 10.0 * (rng.random(x.size) < 0.1)
        f = sen_fit(x, 6 + np.array([0, 0.5, -0.3])[groups] + 0.002 * x + noise, groups)
        assert f is not None
        covered += f.ci_low <= 0.002 <= f.ci_high
        widths.append(f.ci_high - f.ci_low)
    assert covered >= 0.9 * 300 and float(np.median(widths)) < 0.0015


def test_too_little_for_a_slope_or_a_ci():
    assert sen_fit([5, 5, 5], [1, 2, 3]) is None  # one x
    f = sen_fit([0, 1], [0, 2])  # one pair: no interval
    assert f is not None and f.slope == 2 and not f.has_ci and verdict(f) == "undecided"


def test_verdicts():
    x = np.arange(0, 1001, 100, dtype=float)
    grows = sen_fit(x, 10 + 0.01 * x + np.tile([0.05, -0.05], 6)[: x.size])
    assert grows is not None and verdict(grows) == "grows" and resolved(grows)
    shrinks = sen_fit(x, 10 - 0.01 * x + np.tile([0.05, -0.05], 6)[: x.size])
    assert shrinks is not None and verdict(shrinks) == "shrinks" and not resolved(shrinks)
    flat = sen_fit(x, 10 + np.tile([0.05, -0.05], 6)[: x.size])
    assert flat is not None and verdict(flat) == "flat" and not resolved(flat)
    noisy = sen_fit(x, 10 + np.tile([5.0, -5.0], 6)[: x.size])  # CI too wide to call flat
    assert noisy is not None and verdict(noisy) == "undecided"
    per100 = flat.scaled(100)  # the same verdict per 100: span counted in hundreds
    assert verdict(per100) == "flat" and math.isclose(per100.span, 10)
    assert resolved(grows) and not resolved(grows, declared=1.0)  # below a declared resolution


def test_increments_pool_the_steps_and_their_spread_makes_the_interval():
    """A level shift that persists (memory the kernel freed on its own) moves the slope
    by its share of the whole range and widens the interval; the slope is the pooled
    secant, what a reading before and after would give."""
    x = [0, 10, 20, 30, 40, 0, 10, 20, 30, 40]
    y = [0, 5, 10, 15, 20, 100, 105, 110, 107, 112]  # pile-up b: 8 MiB freed at 30
    f = increment_fit(x, y, ["a"] * 5 + ["b"] * 5)
    assert f is not None and f.groups == 2 and f.df == 7
    assert math.isclose(f.slope, (20 + 12) / 80)  # sum of increments / sum of x steps
    assert f.ci_low < 0.4 < 0.5 < f.ci_high  # the shift widens it; 0.5 stays inside
    steady = increment_fit(x[:5], y[:5])
    assert steady is not None and math.isclose(steady.slope, 0.5) and steady.half_width == 0
    assert increment_fit([0], [1]) is None
    one = increment_fit([0, 10], [0, 5])
    assert one is not None and one.slope == 0.5 and not one.has_ci


def test_t_quantile_without_scipy_matches_scipy():
    from scipy import stats as sps

    from virtbench.analysis.fit import t975

    assert max(abs(t975(df) - sps.t.ppf(0.975, df)) for df in range(1, 3000)) < 2e-6


def test_t_p_value_without_scipy_matches_scipy():
    import math

    from scipy import stats as sps

    from virtbench.analysis.fit import t_two_sided_p

    worst = 0.0
    for df in (1, 2, 3, 4, 5, 7, 10, 29, 30, 100, 1000, 2.5, 7.3):
        for t in [i / 10 for i in range(0, 101)] + [15.0, 30.0, 100.0]:
            want, got = 2 * sps.t.sf(t, df), t_two_sided_p(t, df)
            worst = max(worst, abs(got - want) / want if want > 1e-300 else got)
    assert worst < 1e-9, worst
    assert t_two_sided_p(math.inf, 3) == 0.0 and math.isnan(t_two_sided_p(1.0, 0))
