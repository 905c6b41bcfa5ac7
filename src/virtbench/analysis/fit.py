"""Straight-line fits with their confidence: memory per instance, trends with background.

A figure that changes with a count (host memory with running instances, boot time with
background instances) is summarised by a slope through every point, not by per-point
ratios: one noisy reading then moves the slope by its share of all points, not one ratio
by all of it. Two fits, for two kinds of noise:
  `sen_fit`        independent points with occasional outliers (a worker's figure at
                   each background count): the median of the slopes between points of
                   one pile-up, with Sen's distribution-free interval
  `increment_fit`  a series whose noise persists (host memory in use: what the kernel
                   frees on its own moves every later reading): the pooled increments,
                   with a t interval from their spread
Points of several pile-ups (repetitions) are fitted together, each pile-up with a level
of its own (one may start higher than another; the slope is what they share).

How a fitted slope is read:
  `verdict`   "grows" / "shrinks" when the CI excludes zero; "flat" when the whole CI
              moves the figure by less than FLAT_SHARE of its level over the range
              measured; else "undecided" (too noisy, or too short a range, to tell)
  `reading`   a cost that cannot be negative (memory per instance) is shown as its
              value only where it is above the method's resolution (the CI's half-width,
              or the declared resolution if larger) and its CI excludes zero; else as
              "< X", X that resolution: never a negative figure, never a baseline
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
FLAT_SHARE = 0.10  # "flat": the CI's change over the measured range stays within +-10 %


@dataclass(frozen=True)
class Fit:
    """A fitted slope (per unit of x) with its 95% CI; `level` is the fitted value at the
    smallest x (averaged over the groups), `span` the range of x the points cover."""

    slope: float
    ci_low: float
    ci_high: float
    se: float
    df: int
    points: int
    groups: int
    level: float
    span: float

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.ci_low)

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2 if self.has_ci else math.inf

    def scaled(self, factor: float) -> Fit:
        """The same fit per `factor` units of x (e.g. per 100 background instances): the
        span is then counted in those units too."""
        return Fit(
            self.slope * factor,
            self.ci_low * factor,
            self.ci_high * factor,
            self.se * factor,
            self.df,
            self.points,
            self.groups,
            self.level,
            self.span / factor,
        )


def increment_fit(
    x: Sequence[float], y: Sequence[float], groups: Sequence[Hashable] | None = None
) -> Fit | None:
    """The slope of a series whose noise persists: each step's increment over its change
    in x, pooled (sum of increments / sum of x changes: per group, last minus first), and
    a t interval from the spread of the per-step slopes (weighted by their x change).

    For a host's memory in use this is the model that holds: what the kernel frees or
    takes on its own (per-CPU page lists drained, a daemon's heap collected) moves every
    later reading by the same 5-16 MiB here, so the readings' errors are not independent
    and least squares through them gives an interval far too narrow (measured: crun's
    host cost 0.32 MiB, CI 0.26-0.38, against 0.46-0.49 by hand). None with no step;
    no CI with one step."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    gs = list(groups) if groups is not None else [0] * len(xs)
    dx: list[float] = []
    dy: list[float] = []
    firsts: list[float] = []
    for g in dict.fromkeys(gs):
        pts = sorted(
            (a, b)
            for a, b, h in zip(xs, ys, gs, strict=True)
            if h == g and math.isfinite(a) and math.isfinite(b)
        )
        if pts:
            firsts.append(pts[0][1])
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if x1 > x0:
                dx.append(x1 - x0)
                dy.append(y1 - y0)
    if not dx:
        return None
    w, d = np.asarray(dx), np.asarray(dy)
    slope = float(d.sum() / w.sum())
    k = w.size
    level = float(np.mean(firsts))
    span = float(max(xs) - min(xs))
    if k < 2:
        nan = math.nan
        return Fit(slope, nan, nan, nan, 0, k + 1, len(firsts), level, span)
    r = d / w
    var = float(np.sum(w * (r - slope) ** 2) / w.sum()) * k / (k - 1)
    se = math.sqrt(var / k)
    t = t975(k - 1)
    points = k + len(firsts)
    return Fit(slope, slope - t * se, slope + t * se, se, k - 1, points, len(firsts), level, span)


# Student's t 97.5% quantiles for 1-30 degrees of freedom (CONFIDENCE 0.95); above,
# the Cornish-Fisher expansion about the normal's, within 2e-6 of the exact value there.
_T975 = (
    12.706204736,
    4.302652730,
    3.182446305,
    2.776445105,
    2.570581836,
    2.446911851,
    2.364624252,
    2.306004135,
    2.262157163,
    2.228138852,
    2.200985160,
    2.178812830,
    2.160368656,
    2.144786688,
    2.131449546,
    2.119905299,
    2.109815578,
    2.100922040,
    2.093024054,
    2.085963447,
    2.079613845,
    2.073873068,
    2.068657610,
    2.063898562,
    2.059538553,
    2.055529439,
    2.051830516,
    2.048407142,
    2.045229642,
    2.042272456,
)


def t975(df: int) -> float:
    """Student's t 97.5% quantile with `df` degrees of freedom (no scipy: reading a run
    should not pay a second to import it)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def sen_fit(
    x: Sequence[float], y: Sequence[float], groups: Sequence[Hashable] | None = None
) -> Fit | None:
    """A slope that one bad point cannot carry: the median of the slopes between every
    two points of one group with different x (Theil-Sen; across groups, the stratified
    form of Hirsch et al. 1982, so a pile-up that sits higher than another adds no
    slope), and Sen's distribution-free 95% CI: the order statistics of those pairwise
    slopes at (N -+ z sqrt(Var S)) / 2, Var S Kendall's summed over the groups with
    ties in x corrected. For a worker measured at each background count: where 3 of a
    point's 5 boots met crun's 10 ms cgroup retry, least squares read a crun pile-up
    to 1200 whose medians rose by a third as "undecided" (CI -0.03 to 0.51 ms per 100).
    `se` is the CI's half-width over z (for comparing two slopes). None with fewer
    than two distinct x in any group; no CI with fewer pairs than the interval needs."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    gs = list(groups) if groups is not None else [0] * len(xs)
    slopes: list[float] = []
    var_s = 0.0
    members: dict[Hashable, list[tuple[float, float]]] = {}
    for a, b, g in zip(xs, ys, gs, strict=True):
        if math.isfinite(a) and math.isfinite(b):
            members.setdefault(g, []).append((float(a), float(b)))
    for pts in members.values():
        n = len(pts)
        for (x0, y0), (x1, y1) in itertools.combinations(pts, 2):
            if x1 != x0:
                slopes.append((y1 - y0) / (x1 - x0))
        ties = np.unique([p[0] for p in pts], return_counts=True)[1]
        tied = float(np.sum(ties * (ties - 1) * (2 * ties + 5)))
        var_s += (n * (n - 1) * (2 * n + 5) - tied) / 18
    if not slopes:
        return None
    ordered = np.sort(np.asarray(slopes))
    slope = float(np.median(ordered))
    points = sum(len(p) for p in members.values())
    offsets = [float(np.median([b - slope * a for a, b in p])) for p in members.values()]
    all_x = [a for p in members.values() for a, _ in p]
    level = float(np.mean(offsets)) + slope * min(all_x)
    span = max(all_x) - min(all_x)
    df = points - len(members) - 1
    z = 1.959963984540054  # the standard normal's 97.5% quantile (CONFIDENCE 0.95)
    c = z * math.sqrt(var_s)
    lo_rank, hi_rank = round((ordered.size - c) / 2), round((ordered.size + c) / 2)
    if lo_rank < 1 or hi_rank >= ordered.size or df < 1:
        nan = math.nan
        return Fit(slope, nan, nan, nan, max(df, 0), points, len(members), level, span)
    low, high = float(ordered[lo_rank - 1]), float(ordered[hi_rank])
    return Fit(slope, low, high, (high - low) / (2 * z), df, points, len(members), level, span)


Verdict = str  # "grows" | "shrinks" | "flat" | "undecided"


def verdict(fit: Fit, flat_share: float = FLAT_SHARE) -> Verdict:
    """Whether the figure grows, shrinks, stays flat (the CI's whole change over the
    range measured is within `flat_share` of its level) or cannot be told."""
    if not fit.has_ci:
        return "undecided"
    if fit.ci_low > 0:
        return "grows"
    if fit.ci_high < 0:
        return "shrinks"
    bound = flat_share * abs(fit.level)
    if bound > 0 and max(-fit.ci_low, fit.ci_high) * fit.span <= bound:
        return "flat"
    return "undecided"


def resolution(fit: Fit, declared: float | None = None) -> float:
    """The smallest slope this fit tells from zero: its CI's half-width, or the declared
    resolution of the figure if that is larger."""
    return max(fit.half_width, declared or 0.0)


def resolved(fit: Fit, declared: float | None = None) -> bool:
    """Whether the slope is a figure: its CI excludes zero and it is above resolution."""
    return fit.has_ci and fit.ci_low > 0 and fit.slope > resolution(fit, declared)


def p_difference(a: Fit, b: Fit) -> float:
    """Two-sided p of the difference of two independent slopes (Welch-like t, with the
    smaller of the two degrees of freedom); nan without CIs."""
    if not (a.has_ci and b.has_ci):
        return math.nan
    se = math.hypot(a.se, b.se)
    if se == 0:
        return 0.0 if a.slope != b.slope else 1.0
    t = abs(b.slope - a.slope) / se
    return t_two_sided_p(t, min(a.df, b.df))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom: the regularized
    incomplete beta I_x(df/2, 1/2) at x = df / (df + t^2) (no scipy: reading a run should
    not pay a second to import scipy.stats; a unit test holds it to scipy's)."""
    if math.isnan(t) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (Lentz's method) on the side of x where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    out = d
    for m in range(1, 10_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            out *= c * d
        if abs(c * d - 1) < eps:
            break
    return out
