"""Statistics: summaries that always carry their spread, outlier flags, slowdown, A/B
tests, global tests over several runtimes.

The confidence interval is a percentile bootstrap of the median (2000 resamples from a
stream seeded by the values, so the same data always gives the same interval) over the
independent units: when values are nested (several batches of one instance, several
boots of one pile-up) the units are resampled whole (a cluster bootstrap), never the
values inside them as if they were independent. With fewer than MIN_UNITS units there is
no interval (a 95% CI of 3 values is their range, which covers ~75%); the range is shown
instead and named as such. The work is bounded whatever the group's size: above
BOOTSTRAP_MAX_VALUES independent values the interval is the distribution-free one of
order statistics (the ranks a binomial(n, 1/2) puts around the median; exact, no
resampling), and above it nested values are resampled from an evenly spaced subset of
each unit's values (at most BOOTSTRAP_MAX_VALUES in all: a wider interval, never a
narrower one); `Summary.ci_method` says which. Outliers are flagged by Tukey's fences
and counted, never dropped. A/B: a two-sample permutation test with Holm's correction
over the metrics compared and a minimum effect (report/compare.py). Several runtimes:
Kruskal-Wallis with Dunn's pairs, or ANOVA with Tukey's HSD (as S3).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from virtbench.analysis.memo import by_value
from virtbench.analysis.resample import medians, salt_of
from virtbench.analysis.significance import Values, finite

# The unit of each value (a sequence, or a column of a frame)
Units = Sequence[Hashable] | np.ndarray

BOOTSTRAP_MAX_VALUES = 2000  # above: order statistics, or a subset of nested values
CONFIDENCE = 0.95
Z = 1.959963984540054  # the standard normal's 97.5% quantile
MIN_UNITS = 5  # fewer independent units: no interval, the range
CI_BOOTSTRAP = "bootstrap"
CI_ORDER = "order statistics"
CI_SUBSET = "bootstrap of a subset"


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    sd: float
    cv: float  # SD / mean; nan when the mean is 0
    ci_low: float  # 95% CI of the median; nan with fewer than MIN_UNITS units
    ci_high: float
    minimum: float
    maximum: float
    outliers: int = 0  # values outside Tukey's fences (shown, never dropped)
    units: int = 0  # independent units the values come from (n when not nested)
    ci_method: str = CI_BOOTSTRAP  # or CI_ORDER, CI_SUBSET (bounded work: see above)

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.ci_low)


def _finite_pairs(values: Values, units: Units | None) -> tuple[np.ndarray, np.ndarray]:
    """(finite values, the index of each one's unit, numbered in order of first
    appearance); without `units` each value is one. Arrays are taken at numpy speed."""
    if isinstance(values, np.ndarray) and (units is None or isinstance(units, np.ndarray)):
        if units is not None and len(units) != len(values):
            raise ValueError("one unit per value")
        arr = np.asarray(values, dtype=float)
        keep = np.isfinite(arr)
        if units is None:
            return arr[keep], np.arange(int(keep.sum()))
        _, first, inverse = np.unique(units[keep], return_index=True, return_inverse=True)
        rank = np.empty(first.size, dtype=int)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        return arr[keep], rank[inverse]
    if units is None:
        arr = finite(values)
        return arr, np.arange(arr.size)
    if len(units) != len(values):
        raise ValueError("one unit per value")
    keep = [
        (v, u) for v, u in zip(values, units, strict=True) if v is not None and math.isfinite(v)
    ]
    index: dict[Hashable, int] = {}
    idx = [index.setdefault(u, len(index)) for _, u in keep]
    return np.asarray([v for v, _ in keep], dtype=float), np.asarray(idx, dtype=int)


def _interval(estimates: np.ndarray) -> tuple[float, float]:
    """The percentile interval: np.quantile's (its linear method, to the last digit) of
    the estimates' 2.5% and 97.5%, read from the four order statistics around them (a
    partition, not a sort: the estimates are thousands, the intervals a page's many)."""
    alpha = (1 - CONFIDENCE) / 2
    ranks = sorted({r for q in (alpha, 1 - alpha) for r in _around(estimates.size, q)})
    part = np.partition(estimates, ranks)
    return quantile_of(part, alpha), quantile_of(part, 1 - alpha)


def _around(n: int, q: float) -> tuple[int, int]:
    """The two ranks (0-based) the linear quantile q of n values lies between."""
    low = min(math.floor((n - 1) * q), n - 1)
    return low, min(low + 1, n - 1)


def quantile_of(ordered: np.ndarray, q: float) -> float:
    """np.quantile(values, q) (its default linear method, to the last digit) of values
    `ordered`: sorted, or partitioned at the two ranks around q (a figure's quartiles,
    an interval's ends: no sort of thousands for a number)."""
    h = (ordered.size - 1) * q
    i, j = _around(ordered.size, q)
    a, b, t = float(ordered[i]), float(ordered[j]), h - i
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # numpy's lerp


def order_ci(values: np.ndarray) -> tuple[float, float]:
    """The distribution-free 95% CI of the median of independent values: the order
    statistics at ranks n/2 -+ Z sqrt(n)/2 (the normal limit of binomial(n, 1/2), exact
    enough from a few hundred values on; used above BOOTSTRAP_MAX_VALUES)."""
    n = values.size
    half = Z * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - half) - 1), min(n - 1, math.ceil(n / 2 + half) - 1)
    part = np.partition(values, (lo, hi))
    return float(part[lo]), float(part[hi])


def _evenly(rank: np.ndarray, size: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Whether item `rank` (0-based) of a run of `size` items is one of `keep` evenly
    spaced ones (element-wise)."""
    kept: np.ndarray = np.floor((rank + 1) * keep / size) > np.floor(rank * keep / size)
    return kept


def bounded_subset(unit: np.ndarray, limit: int = BOOTSTRAP_MAX_VALUES) -> np.ndarray:
    """Indices (ascending) of at most about `limit` values: with more units than that,
    `limit` evenly spaced units (by first appearance), else all of them; of each kept
    unit an evenly spaced share of its values in their order (at least one), so every
    unit weighs as before and the result is the same for the same data."""
    if unit.size <= limit:
        return np.arange(unit.size)
    _, first, inverse = np.unique(unit, return_index=True, return_inverse=True)
    rank_of = np.empty(first.size, dtype=np.int64)
    rank_of[np.argsort(first, kind="stable")] = np.arange(first.size)
    u = rank_of[inverse]  # units numbered by first appearance
    k = first.size
    chosen = _evenly(np.arange(k), np.full(k, k), np.full(k, min(k, limit)))
    rows = np.flatnonzero(chosen[u])
    counts = np.bincount(u[rows], minlength=k)
    share = min(1.0, limit / rows.size)
    order = np.argsort(u[rows], kind="stable")  # each unit's rows, in their order
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    ranks = np.empty(rows.size, dtype=np.int64)
    ranks[order] = np.arange(rows.size) - starts[u[rows][order]]
    size = counts[u[rows]]
    keep = np.maximum(1, np.floor(size * share))
    subset: np.ndarray = rows[_evenly(ranks, size, keep)]
    return subset


def bootstrap_ci(
    values: np.ndarray, seed: int = 0, unit: np.ndarray | None = None
) -> tuple[float, float]:
    """Percentile bootstrap CI of the median, resampling whole units (`unit`: each
    value's unit index; default: every value its own); none below MIN_UNITS units.
    Bounded: see `ci_of` for what larger groups get."""
    return ci_of(values, seed, unit)[:2]


@by_value(1024)
def ci_of(
    values: np.ndarray, seed: int = 0, unit: np.ndarray | None = None
) -> tuple[float, float, str]:
    """(low, high, method) of the 95% CI of the median: the bootstrap up to
    BOOTSTRAP_MAX_VALUES values, above it order statistics (independent values) or the
    cluster bootstrap of an evenly spaced subset of each unit's values (nested ones)."""
    unit = np.arange(len(values)) if unit is None else unit
    if len(values) == 0 or int(unit.max()) + 1 < MIN_UNITS:
        return math.nan, math.nan, CI_BOOTSTRAP
    k = int(unit.max()) + 1
    if values.size > BOOTSTRAP_MAX_VALUES and k == values.size:
        return (*order_ci(values), CI_ORDER)
    method = CI_BOOTSTRAP
    if values.size > BOOTSTRAP_MAX_VALUES:
        keep = bounded_subset(unit)
        values, unit = values[keep], np.unique(unit[keep], return_inverse=True)[1]
        method = CI_SUBSET
    return (*_interval(medians(values, unit, seed, 0)), method)


def summarize(values: Values, units: Units | None = None) -> Summary:
    """Summary of finite values (NaN and None are dropped before counting). `units`: the
    independent unit of each value (e.g. its repetition), when values are nested."""
    return _summary(*_finite_pairs(values, units))


@by_value(1024)
def _summary(arr: np.ndarray, unit: np.ndarray) -> Summary:
    """summarize's figures of finite values and their units (kept: a report's table, its
    answers and its figures summarise the same groups)."""
    if arr.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if arr.size > 1 else math.nan
    cv = sd / mean if mean != 0 and not math.isnan(sd) else math.nan
    lo, hi, method = ci_of(arr, unit=unit)
    return Summary(
        n=int(arr.size),
        median=float(np.median(arr)),
        mean=mean,
        sd=sd,
        cv=cv,
        ci_low=lo,
        ci_high=hi,
        minimum=float(arr.min()),
        maximum=float(arr.max()),
        outliers=int(outliers(arr).sum()),
        units=int(unit.max()) + 1,
        ci_method=method,
    )


def slowdown(value: float, baseline: float, direction: str) -> float:
    """How much worse `value` is than `baseline` (0.1 = 10% worse), whichever the direction;
    nan when the divisor is 0 (e.g. an attacked server that answered nothing)."""
    num, den = (value, baseline) if direction == "lower" else (baseline, value)
    return num / den - 1 if den else math.nan


def slowdown_ci(
    baseline: Values,
    attacked: Values,
    direction: str,
    *,
    seed: int = 0,
    units_b: Units | None = None,
    units_a: Units | None = None,
) -> tuple[float, float, float]:
    """(slowdown of the attacked median against the baseline median, 95% CI low, high):
    a percentile bootstrap resampling both groups' units independently; no interval
    (nan) when either group has fewer than MIN_UNITS units."""
    b, ub = _finite_pairs(baseline, units_b)
    a, ua = _finite_pairs(attacked, units_a)
    if b.size == 0 or a.size == 0:
        return math.nan, math.nan, math.nan
    point = slowdown(float(np.median(a)), float(np.median(b)), direction)
    if int(ub.max()) + 1 < MIN_UNITS or int(ua.max()) + 1 < MIN_UNITS:
        return point, math.nan, math.nan
    return (point, *_ratio_ci(b, ub, a, ua, direction, seed))


@by_value(1024)
def _ratio_ci(
    b: np.ndarray, ub: np.ndarray, a: np.ndarray, ua: np.ndarray, direction: str, seed: int
) -> tuple[float, float]:
    """slowdown_ci's interval, of values with at least MIN_UNITS units a side."""
    big = BOOTSTRAP_MAX_VALUES
    if b.size > big and a.size > big and ub.max() + 1 == b.size and ua.max() + 1 == a.size:
        return _log_ratio_ci(b, a, direction)
    b, ub = _bounded(b, ub)
    a, ua = _bounded(a, ua)
    mb, ma = medians(b, ub, seed, 0), medians(a, ua, seed, salt_of(b, ub, a, ua))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb - 1 if direction == "lower" else mb / ma - 1
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return math.nan, math.nan
    return _interval(ratios)


def difference_ci(a: Values, b: Values, seed: int = 0) -> tuple[float, float]:
    """The 95% CI of median(b) - median(a), one value per unit on each side: a percentile
    bootstrap of both; nan with fewer than MIN_UNITS units on a side."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size < MIN_UNITS or y.size < MIN_UNITS:
        return math.nan, math.nan
    ux, uy = np.arange(x.size), np.arange(y.size)
    return _interval(medians(y, uy, seed, salt_of(x, ux, y, uy)) - medians(x, ux, seed, 0))


def _log_ratio_ci(b: np.ndarray, a: np.ndarray, direction: str) -> tuple[float, float]:
    """The 95% CI of the slowdown of two big groups of independent values, without
    resampling: each median's order-statistic interval read as a normal one on the log
    scale (its standard error: the interval's log width / 2Z), the two errors added in
    quadrature. None (nan) unless every bound is positive."""
    (bl, bh), (al, ah) = order_ci(b), order_ci(a)
    mb, ma = float(np.median(b)), float(np.median(a))
    if min(bl, al, mb, ma) <= 0:
        return math.nan, math.nan
    se = math.hypot(math.log(bh / bl), math.log(ah / al)) / (2 * Z)
    log_ratio = math.log(ma / mb) if direction == "lower" else math.log(mb / ma)
    return math.exp(log_ratio - Z * se) - 1, math.exp(log_ratio + Z * se) - 1


def _bounded(values: np.ndarray, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most about BOOTSTRAP_MAX_VALUES of `values` for a bootstrap (bounded_subset),
    with their units renumbered."""
    if values.size <= BOOTSTRAP_MAX_VALUES:
        return values, unit
    keep = bounded_subset(unit)
    return values[keep], np.unique(unit[keep], return_inverse=True)[1]


# --- outliers ---------------------------------------------------------------------------
def outliers(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Flags (same order as the finite values) outside Tukey's fences: below Q1 - 1.5 IQR or
    above Q3 + 1.5 IQR. Flagged values are shown, never dropped."""
    arr = finite(values)
    if arr.size < 4:
        return np.zeros(arr.size, dtype=bool)
    q1, q3 = np.quantile(arr, [0.25, 0.75])
    fence = 1.5 * (q3 - q1)
    flags: np.ndarray = (arr < q1 - fence) | (arr > q3 + fence)
    return flags


# --- two modes ----------------------------------------------------------------------------
MODES_MIN_N = 20  # fewer values: heavy-tailed unimodal draws split apart by chance
MODES_MIN_SHARE = 0.2  # each mode holds at least this share (a few outliers are no mode)
MODES_MIN_SEPARATION = 6.0  # Ashman's D; >2 is commonly read as separated, see `modes`


@dataclass(frozen=True)
class Modes:
    """A group whose values fall in two separated clusters: how many in each and each
    one's median. Its median describes neither."""

    low_n: int
    low_median: float
    high_n: int
    high_median: float
    separation: float  # Ashman's D of the best split


def modes(values: Sequence[float], resolution: float | None = None) -> Modes | None:
    """Two modes, if `values` have them clearly; else None.

    Every split of the sorted values into a lower and an upper cluster (each at least
    MODES_MIN_SHARE of them) is scored by Ashman's D = sqrt(2) |m1 - m2| / sqrt(s1^2 +
    s2^2); the best split counts if D >= MODES_MIN_SEPARATION and the clusters' medians
    lie more than twice `resolution` apart (a quantised figure's two steps are no modes).
    The threshold is high because the best of many splits is taken: over 2000 draws of
    20 values, a normal reached 6 never, an exponential, a log-normal (sigma 1) and a
    Pareto (a=2) in 1.0-1.5% of draws; two normals 10 SDs apart (4:6) always."""
    arr = np.sort(finite(values))
    n = arr.size
    if n < MODES_MIN_N:
        return None
    least = math.ceil(MODES_MIN_SHARE * n)
    # every split k at once, from prefix sums (about the lower cluster's mean, so that
    # the variances do not cancel away for values far from zero)
    x = arr - arr[n // 2]
    c1, c2 = np.cumsum(x), np.cumsum(x * x)
    k = np.arange(least, n - least + 1)
    s1_lo, s2_lo = c1[k - 1], c2[k - 1]
    s1_hi, s2_hi = c1[-1] - s1_lo, c2[-1] - s2_lo
    m_lo, m_hi = s1_lo / k, s1_hi / (n - k)
    var = np.maximum(0.0, s2_lo / k - m_lo**2) + np.maximum(0.0, s2_hi / (n - k) - m_hi**2)
    gap = m_hi - m_lo
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(var > 0, math.sqrt(2) * gap / np.sqrt(var), np.where(gap > 0, np.inf, 0.0))
    i = int(np.argmax(d))  # the first best split, as a scan from the lowest would find
    separation, split = float(d[i]), int(k[i])
    if separation < MODES_MIN_SEPARATION:
        return None
    lo_med, hi_med = float(np.median(arr[:split])), float(np.median(arr[split:]))
    if resolution is not None and hi_med - lo_med <= 2 * resolution:
        return None
    return Modes(split, lo_med, n - split, hi_med, separation)
