"""Straight-line fits (fit.py): the slope and CI of ordinary least squares, an intercept
per group, and how a slope is read."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from virtbench.fit import increment_fit, linear_fit, resolved, verdict


def test_one_group_is_ordinary_least_squares():
    rng = np.random.default_rng(1)
    x = np.repeat(np.arange(0, 50, 5), 2).astype(float)
    y = 3.0 + 0.4 * x + rng.normal(0, 1, x.size)
    f = linear_fit(x, y)
    ref = sps.linregress(x, y)
    half = sps.t.ppf(0.975, x.size - 2) * ref.stderr
    assert f is not None and math.isclose(f.slope, ref.slope)
    assert math.isclose(f.ci_low, ref.slope - half) and math.isclose(f.ci_high, ref.slope + half)
    assert f.df == x.size - 2 and f.span == 45 and math.isclose(f.level, ref.intercept)


def test_each_group_has_its_own_intercept():
    """Two pile-ups that start 100 apart share a slope of 2: pooled without their own
    intercepts the slope would be lost in the offset; with them it is exact."""
    x = [0, 10, 20, 0, 10, 20]
    y = [0, 20, 40, 100, 120, 140]
    f = linear_fit(x, y, ["a", "a", "a", "b", "b", "b"])
    assert f is not None and math.isclose(f.slope, 2.0) and f.groups == 2 and f.df == 3
    assert math.isclose(f.ci_low, 2.0) and math.isclose(f.ci_high, 2.0)


def test_too_little_for_a_slope_or_a_ci():
    assert linear_fit([5, 5, 5], [1, 2, 3]) is None  # one x
    f = linear_fit([0, 1], [0, 2])  # no degree of freedom left
    assert f is not None and f.slope == 2 and not f.has_ci and verdict(f) == "undecided"


def test_verdicts():
    x = np.arange(0, 1001, 100, dtype=float)
    grows = linear_fit(x, 10 + 0.01 * x + np.tile([0.05, -0.05], 6)[: x.size])
    assert grows is not None and verdict(grows) == "grows" and resolved(grows)
    shrinks = linear_fit(x, 10 - 0.01 * x + np.tile([0.05, -0.05], 6)[: x.size])
    assert shrinks is not None and verdict(shrinks) == "shrinks" and not resolved(shrinks)
    flat = linear_fit(x, 10 + np.tile([0.05, -0.05], 6)[: x.size])
    assert flat is not None and verdict(flat) == "flat" and not resolved(flat)
    noisy = linear_fit(x, 10 + np.tile([5.0, -5.0], 6)[: x.size])  # CI too wide to call flat
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
