"""Summaries that always carry their spread: median, mean, SD, CV, a 95% CI and n.

The confidence interval is a percentile bootstrap of the median (2000 resamples with
a fixed seed, so the same data always gives the same interval). With n < 3 there is
no interval and the summary says so rather than inventing one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    sd: float
    cv: float  # SD / mean; nan when the mean is 0
    ci_low: float  # 95% CI of the median; nan when n < 3
    ci_high: float
    minimum: float
    maximum: float


def _finite(values: Sequence[float]) -> np.ndarray:
    """The finite values (NaN and None dropped)."""
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def _boot_medians(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES resamples (with replacement) of `values`."""
    idx = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return np.median(values[idx], axis=1)


def _interval(estimates: np.ndarray) -> tuple[float, float]:
    alpha = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(estimates, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the median."""
    if len(values) < 3:
        return math.nan, math.nan
    return _interval(_boot_medians(values, np.random.default_rng(seed)))


def summarize(values: Sequence[float]) -> Summary:
    """Summary of finite values (NaN and None are dropped before counting)."""
    arr = _finite(values)
    if arr.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if arr.size > 1 else math.nan
    cv = sd / mean if mean != 0 and not math.isnan(sd) else math.nan
    lo, hi = bootstrap_ci(arr)
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
    )


def slowdown(value: float, baseline: float, direction: str) -> float:
    """How much worse `value` is than `baseline` (0.1 = 10% worse), whichever the direction;
    nan when the divisor is 0 (e.g. an attacked server that answered nothing)."""
    num, den = (value, baseline) if direction == "lower" else (baseline, value)
    return num / den - 1 if den else math.nan


def slowdown_ci(
    baseline: Sequence[float], attacked: Sequence[float], direction: str, seed: int = 0
) -> tuple[float, float, float]:
    """(slowdown of the attacked median against the baseline median, 95% CI low, high):
    a percentile bootstrap resampling both groups independently; no interval (nan) when
    either group has fewer than 3 values."""
    b, a = _finite(baseline), _finite(attacked)
    if b.size == 0 or a.size == 0:
        return math.nan, math.nan, math.nan
    point = slowdown(float(np.median(a)), float(np.median(b)), direction)
    if b.size < 3 or a.size < 3:
        return point, math.nan, math.nan
    rng = np.random.default_rng(seed)
    mb, ma = _boot_medians(b, rng), _boot_medians(a, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb - 1 if direction == "lower" else mb / ma - 1
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return point, math.nan, math.nan
    return (point, *_interval(ratios))
