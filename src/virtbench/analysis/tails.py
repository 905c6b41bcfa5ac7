"""The tail of a distribution pooled from batches (p50, p95, p99 of instances started
together), and a success rate, each with its 95% CI.

Instances of one batch (one burst, one staggered wave) share its conditions, so the
batches are the independent units. A quantile's CI is the wider of two that account for
them:
- the percentile bootstrap that resamples whole batches, each bringing all its values
  (a cluster bootstrap), taking the same quantile (the inverted CDF, as the point) of
  every resample, with the expanded percentile's tails for few batches:
  Phi(-sqrt(k/(k-1)) t(k-1, 0.975)) for k batches (0.86% and 99.14% at k = 10);
- Woodruff's interval: the share of values at or below the quantile, its standard error
  between batches (never below the binomial one), a t(k-1) interval around it, read back
  through the pooled values.
Each alone covers too little somewhere: measured on batches that share a shift of their
own, the bootstrap's p95 held the truth in 77% of data sets of 10 batches of 20, where
Woodruff's held it in 90% or more (tests/unit/test_tti.py holds the union to 90-99%).
Above BOOTSTRAP_MAX_VALUES values the bootstrap resamples an evenly spaced share of each
batch (analysis/stats.py `bounded_subset`: a wider interval, never a narrower one).
A quantile has no CI with fewer than MIN_UNITS batches (MIN_TAIL_UNITS for a tail
beyond the median), nor where fewer than MIN_BEYOND values lie beyond it (a p99 of 200
values rests on two).

A success rate's CI is the wider of two: Wilson's score interval over the instances
(exact enough at any count, never past 0 or 100%, and not empty when every instance
succeeded), and, from MIN_UNITS batches on, the expanded cluster bootstrap of the rate,
which widens it where failures come together in some batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.analysis.resample import resample_counts
from virtbench.analysis.stats import (
    BOOTSTRAP_MAX_VALUES,
    CONFIDENCE,
    MIN_UNITS,
    bounded_subset,
)

MIN_BEYOND = 5  # values beyond a quantile needed for its CI
MIN_TAIL_UNITS = 10  # batches needed for the CI of a quantile other than the median


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% CI (nan: none) and, when it has none, why."""

    value: float
    low: float = math.nan
    high: float = math.nan
    why_none: str = ""

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.low)


def _units(unit: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's unit numbered 0..k-1, and k."""
    _, inverse = np.unique(unit, return_inverse=True)
    return inverse, int(inverse.max()) + 1 if inverse.size else 0


def expanded_alpha(k: int) -> float:
    """The lower tail of the expanded percentile interval for k independent units."""
    from scipy import stats as sps  # here, not above: importing scipy costs a second

    t = sps.t.ppf(1 - (1 - CONFIDENCE) / 2, k - 1)
    return float(sps.norm.cdf(-math.sqrt(k / (k - 1)) * t))


def quantile_ci(values: np.ndarray, unit: np.ndarray, q: float, seed: int = 0) -> Estimate:
    """The `q` quantile (0..1) of `values` pooled over their units, with its 95% CI: the
    wider of the cluster bootstrap's and Woodruff's (see above)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return Estimate(math.nan, why_none="no value")
    point = float(np.quantile(values, q, method="inverted_cdf"))
    idx, k = _units(np.asarray(unit))
    beyond = int(np.sum(values > point) if q >= 0.5 else np.sum(values < point))
    if k < (MIN_UNITS if q == 0.5 else MIN_TAIL_UNITS):
        return Estimate(point, why_none=f"no CI: {k} batch{'es' * (k != 1)}")
    if beyond < MIN_BEYOND and q != 0.5:
        return Estimate(point, why_none=f"no CI: {beyond} value{'s' * (beyond != 1)} beyond it")
    w_lo, w_hi = woodruff(values, idx, k, q, point)
    sub, sub_idx = values, idx  # bounded work: an evenly spaced share of each batch
    if values.size > BOOTSTRAP_MAX_VALUES:
        keep = bounded_subset(idx)
        sub, sub_idx = values[keep], np.unique(idx[keep], return_inverse=True)[1]
        k = int(sub_idx.max()) + 1
    order = np.argsort(sub, kind="stable")
    weights = resample_counts(k, np.random.default_rng(seed))[:, sub_idx[order]]
    cum = np.cumsum(weights, axis=1)
    at = np.argmax(cum >= q * cum[:, -1:], axis=1)  # the weighted inverted CDF
    alpha = expanded_alpha(k)
    lo, hi = np.quantile(sub[order][at], [alpha, 1 - alpha])
    return Estimate(point, min(float(lo), w_lo), max(float(hi), w_hi))


def woodruff(
    values: np.ndarray, idx: np.ndarray, k: int, q: float, point: float
) -> tuple[float, float]:
    """Woodruff's 95% CI of the `q` quantile `point` of `values` in k clusters (`idx`)."""
    n = values.size
    below = (values <= point).astype(float)
    share = below.mean()
    per = np.bincount(idx, weights=below, minlength=k)
    size = np.bincount(idx, minlength=k)
    var = k / (k - 1) * float(np.sum((per - share * size) ** 2)) / n**2
    se = math.sqrt(max(var, q * (1 - q) / n))
    from scipy import stats as sps

    t = float(sps.t.ppf(1 - (1 - CONFIDENCE) / 2, k - 1))
    lo = np.quantile(values, max(q - t * se, 0.0), method="inverted_cdf")
    hi = np.quantile(values, min(q + t * se, 1.0), method="inverted_cdf")
    return float(lo), float(hi)


def success_ci(ok: np.ndarray, unit: np.ndarray, seed: int = 0) -> Estimate:
    """The share (%) of `ok` (booleans, one per instance) with its 95% CI: the wider of
    Wilson's and, from MIN_UNITS units on, the cluster bootstrap's."""
    ok = np.asarray(ok, dtype=bool)
    n, k = ok.size, int(ok.sum())
    if n == 0:
        return Estimate(math.nan, why_none="no instance")
    from scipy import stats as sps

    wilson = sps.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    lo, hi = float(wilson.low), float(wilson.high)
    idx, units = _units(np.asarray(unit))
    if units >= MIN_UNITS:
        counts = resample_counts(units, np.random.default_rng(seed))
        per_ok = np.bincount(idx, weights=ok, minlength=units)
        per_n = np.bincount(idx, minlength=units)
        rates = (counts @ per_ok) / (counts @ per_n)
        alpha = expanded_alpha(units)
        b_lo, b_hi = np.quantile(rates, [alpha, 1 - alpha])
        lo, hi = min(lo, float(b_lo)), max(hi, float(b_hi))
    return Estimate(100 * k / n, 100 * lo, 100 * hi)
