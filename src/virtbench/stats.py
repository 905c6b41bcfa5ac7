"""Statistics: summaries that always carry their spread, outlier flags, slowdown, A/B
tests, global tests over several runtimes, and DESMET-style scores.

The confidence interval is a percentile bootstrap of the median (2000 resamples with
a fixed seed, so the same data always gives the same interval) over the independent
units: when values are nested (several batches of one instance, several boots of one
pile-up) the units are resampled whole (a cluster bootstrap), never the values inside
them as if they were independent. With fewer than MIN_UNITS units there is no interval
(a 95% CI of 3 values is their range, which covers ~75%); the range is shown instead and
named as such. Outliers are flagged by
Tukey's fences and counted, never dropped. A/B: a two-sample permutation test with Holm's
correction over the metrics compared and a minimum effect (report/compare.py). Several
runtimes: Kruskal-Wallis with Dunn's pairs, or ANOVA with Tukey's HSD (as S3).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_UNITS = 5  # fewer independent units: no interval, the range


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

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.ci_low)


def _finite(values: Sequence[float]) -> np.ndarray:
    """The finite values (NaN and None dropped)."""
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def _finite_pairs(
    values: Sequence[float], units: Sequence[Hashable] | None
) -> tuple[np.ndarray, np.ndarray]:
    """(finite values, the index of each one's unit); without `units` each value is one."""
    if units is None:
        arr = _finite(values)
        return arr, np.arange(arr.size)
    if len(units) != len(values):
        raise ValueError("one unit per value")
    keep = [(v, u) for v, u in zip(values, units, strict=True)
            if v is not None and math.isfinite(v)]  # fmt: skip
    index: dict[Hashable, int] = {}
    idx = [index.setdefault(u, len(index)) for _, u in keep]
    return np.asarray([v for v, _ in keep], dtype=float), np.asarray(idx, dtype=int)


def _cluster_medians(values: np.ndarray, unit: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES cluster resamples: the units drawn with replacement,
    each bringing all its values (a weighted median over the sorted values)."""
    k = int(unit.max()) + 1
    if k == values.size:  # one value per unit: the plain bootstrap
        return _boot_medians(values, rng)
    order = np.argsort(values, kind="stable")
    sorted_values, sorted_unit = values[order], unit[order]
    draws = rng.integers(0, k, size=(BOOTSTRAP_RESAMPLES, k))
    counts = np.zeros((BOOTSTRAP_RESAMPLES, k))
    np.add.at(counts, (np.arange(BOOTSTRAP_RESAMPLES)[:, None], draws), 1)
    weights = counts[:, sorted_unit]
    cum = np.cumsum(weights, axis=1)
    half = cum[:, -1:] / 2
    lower = np.argmax(cum >= half, axis=1)  # the weighted median (average of the two
    upper = np.argmax(cum > half, axis=1)  # middle values when the weight splits evenly)
    return (sorted_values[lower] + sorted_values[upper]) / 2


def _boot_medians(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES resamples (with replacement) of `values`."""
    idx = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return np.median(values[idx], axis=1)


def _interval(estimates: np.ndarray) -> tuple[float, float]:
    alpha = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(estimates, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_ci(
    values: np.ndarray, seed: int = 0, unit: np.ndarray | None = None
) -> tuple[float, float]:
    """Percentile bootstrap CI of the median, resampling whole units (`unit`: each
    value's unit index; default: every value its own); none below MIN_UNITS units."""
    unit = np.arange(len(values)) if unit is None else unit
    if len(values) == 0 or int(unit.max()) + 1 < MIN_UNITS:
        return math.nan, math.nan
    return _interval(_cluster_medians(values, unit, np.random.default_rng(seed)))


def summarize(values: Sequence[float], units: Sequence[Hashable] | None = None) -> Summary:
    """Summary of finite values (NaN and None are dropped before counting). `units`: the
    independent unit of each value (e.g. its repetition), when values are nested."""
    arr, unit = _finite_pairs(values, units)
    if arr.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(arr.mean())
    sd = float(arr.std(ddof=1)) if arr.size > 1 else math.nan
    cv = sd / mean if mean != 0 and not math.isnan(sd) else math.nan
    lo, hi = bootstrap_ci(arr, unit=unit)
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
    )


def slowdown(value: float, baseline: float, direction: str) -> float:
    """How much worse `value` is than `baseline` (0.1 = 10% worse), whichever the direction;
    nan when the divisor is 0 (e.g. an attacked server that answered nothing)."""
    num, den = (value, baseline) if direction == "lower" else (baseline, value)
    return num / den - 1 if den else math.nan


def slowdown_ci(
    baseline: Sequence[float],
    attacked: Sequence[float],
    direction: str,
    seed: int = 0,
    units_b: Sequence[Hashable] | None = None,
    units_a: Sequence[Hashable] | None = None,
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
    rng = np.random.default_rng(seed)
    mb, ma = _cluster_medians(b, ub, rng), _cluster_medians(a, ua, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb - 1 if direction == "lower" else mb / ma - 1
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return point, math.nan, math.nan
    return (point, *_interval(ratios))


# --- outliers ---------------------------------------------------------------------------
def outliers(values: Sequence[float]) -> np.ndarray:
    """Flags (same order as the finite values) outside Tukey's fences: below Q1 - 1.5 IQR or
    above Q3 + 1.5 IQR. Flagged values are shown, never dropped."""
    arr = _finite(values)
    if arr.size < 4:
        return np.zeros(arr.size, dtype=bool)
    q1, q3 = np.quantile(arr, [0.25, 0.75])
    fence = 1.5 * (q3 - q1)
    return (arr < q1 - fence) | (arr > q3 + fence)


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
    arr = np.sort(_finite(values))
    n = arr.size
    if n < MODES_MIN_N:
        return None
    least = math.ceil(MODES_MIN_SHARE * n)
    best: tuple[float, int] = (0.0, 0)
    for k in range(least, n - least + 1):
        lo, hi = arr[:k], arr[k:]
        spread = math.sqrt(float(lo.var() + hi.var()))
        gap = float(hi.mean() - lo.mean())
        d = math.inf if spread == 0 and gap > 0 else (math.sqrt(2) * gap / spread if spread else 0)
        if d > best[0]:
            best = (d, k)
    d, k = best
    if d < MODES_MIN_SEPARATION:
        return None
    lo_med, hi_med = float(np.median(arr[:k])), float(np.median(arr[k:]))
    if resolution is not None and hi_med - lo_med <= 2 * resolution:
        return None
    return Modes(k, lo_med, n - k, hi_med, d)


# --- A/B: one metric, two groups ----------------------------------------------------------
PERMUTATIONS = 9999
Verdict = str  # "better" | "worse" | "no change" | "too few"


@dataclass(frozen=True)
class ABResult:
    """B against A for one metric. `change` = median(B) / median(A) - 1 (raw, not
    direction-adjusted); `p` the two-sided permutation p-value of the difference of
    means (before any correction for several metrics)."""

    n_a: int
    n_b: int
    median_a: float
    median_b: float
    change: float
    p: float


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(y, axis=axis) - np.mean(x, axis=axis)


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact permutation test of n_a vs n_b values can give."""
    return min(1.0, 2 / math.comb(n_a + n_b, n_a)) if n_a and n_b else 1.0


def ab_test(a: Sequence[float], b: Sequence[float], seed: int = 0) -> ABResult:
    """Two-sample permutation test of the difference of means, as Firecracker's A/B tool
    does (exact when the permutations are fewer than PERMUTATIONS, else PERMUTATIONS
    random ones with a fixed seed). Means, not medians, for the test: the median of a
    few values ignores most of them, so its permutation distribution is too coarse to
    ever be significant at 5 vs 5; the effect reported is still the change of medians."""
    from scipy import stats as sps

    x, y = _finite(a), _finite(b)
    nan = math.nan
    if x.size == 0 or y.size == 0:
        return ABResult(x.size, y.size, nan, nan, nan, nan)
    ma, mb = float(np.median(x)), float(np.median(y))
    change = mb / ma - 1 if ma else nan
    if x.size < 2 or y.size < 2 or (np.all(x == x[0]) and np.all(y == x[0])):
        p = 1.0 if x.size >= 2 and y.size >= 2 else nan
        return ABResult(x.size, y.size, ma, mb, change, p)
    res = sps.permutation_test(
        (x, y),
        _mean_diff,
        permutation_type="independent",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return ABResult(x.size, y.size, ma, mb, change, float(res.pvalue))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (nan stays nan and is not counted)."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * pvalues[i]))
        out[i] = running
    return out


def verdict(r: ABResult, direction: str, p: float, alpha: float, min_effect: float) -> Verdict:
    """ "better"/"worse" (B against A, in the metric's direction) when the difference is
    significant (`p` <= alpha, p already corrected) and at least `min_effect` (0.05 = 5%);
    "too few" when no permutation test of these sizes could reach alpha; else "no change"."""
    if min_p(r.n_a, r.n_b) > alpha or math.isnan(p):
        return "too few"
    if p > alpha or math.isnan(r.change) or abs(r.change) < min_effect:
        return "no change"
    worse = r.change > 0 if direction == "lower" else r.change < 0
    return "worse" if worse else "better"


# --- several groups: global test and post-hoc pairs (S3) -----------------------------------
@dataclass(frozen=True)
class PairTest:
    a: str
    b: str
    p: float  # adjusted for the number of pairs
    significant: bool


@dataclass(frozen=True)
class GroupTest:
    test: str  # "Kruskal-Wallis + Dunn (Holm)" or "ANOVA + Tukey HSD"
    statistic: float
    p: float
    pairs: list[PairTest]


def kruskal_dunn(groups: dict[str, Sequence[float]], alpha: float = 0.05) -> GroupTest | None:
    """Kruskal-Wallis over the groups, then Dunn's test for every pair with Holm's
    correction (ties corrected). None with fewer than 2 groups of at least 2 values."""
    from scipy import stats as sps

    data = {k: _finite(v) for k, v in groups.items()}
    data = {k: v for k, v in data.items() if v.size >= 2}
    if len(data) < 2:
        return None
    pooled = np.concatenate(list(data.values()))
    if np.all(pooled == pooled[0]):
        names = list(data)
        pairs = [PairTest(a, b, 1.0, False) for i, a in enumerate(names) for b in names[i + 1 :]]
        return GroupTest("Kruskal-Wallis + Dunn (Holm)", 0.0, 1.0, pairs)
    h, p = sps.kruskal(*data.values())
    ranks = sps.rankdata(pooled)
    n = pooled.size
    _, counts = np.unique(pooled, return_counts=True)
    ties = float(np.sum(counts**3 - counts)) / (12 * (n - 1))
    mean_rank, start = {}, 0
    for k, v in data.items():
        mean_rank[k] = float(ranks[start : start + v.size].mean())
        start += v.size
    names = list(data)
    raw, keys = [], []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            se = math.sqrt((n * (n + 1) / 12 - ties) * (1 / data[a].size + 1 / data[b].size))
            z = (mean_rank[a] - mean_rank[b]) / se
            raw.append(float(2 * sps.norm.sf(abs(z))))
            keys.append((a, b))
    adj = holm(raw)
    pairs = [PairTest(a, b, q, q <= alpha) for (a, b), q in zip(keys, adj, strict=True)]
    return GroupTest("Kruskal-Wallis + Dunn (Holm)", float(h), float(p), pairs)


def anova_tukey(groups: dict[str, Sequence[float]], alpha: float = 0.05) -> GroupTest | None:
    """One-way ANOVA over the groups, then Tukey's HSD for every pair (as S3 did). None
    with fewer than 2 groups of at least 2 values or no variance at all."""
    from scipy import stats as sps

    data = {k: _finite(v) for k, v in groups.items()}
    data = {k: v for k, v in data.items() if v.size >= 2}
    if len(data) < 2 or all(np.all(v == v[0]) for v in data.values()):
        return None
    f, p = sps.f_oneway(*data.values())
    hsd = sps.tukey_hsd(*data.values())
    names = list(data)
    pairs = [
        PairTest(a, b, float(hsd.pvalue[i, j]), bool(hsd.pvalue[i, j] <= alpha))
        for i, a in enumerate(names)
        for j, b in enumerate(names)
        if j > i
    ]
    return GroupTest("ANOVA + Tukey HSD", float(f), float(p), pairs)


# --- DESMET-style scores against a baseline (S5) --------------------------------------------
# A result scores 0-4: one point per band it meets, as a percentage of the baseline's median.
DESMET_BANDS = {
    "higher": (60.0, 70.0, 80.0, 90.0),  # throughput-like: at least this % of the baseline
    "lower": (140.0, 130.0, 120.0, 110.0),  # latency-like: at most this %
    "boot": (40.0, 30.0, 20.0, 10.0),  # boot-like: at most this % (S5 scored boot so)
}


def desmet_score(value: float, baseline: float, kind: str, bands: dict | None = None) -> float:
    """0-4 (nan when either median is missing or the baseline is 0). `kind`: "higher",
    "lower" or "boot" (lower is better, scored on its own bands)."""
    if math.isnan(value) or math.isnan(baseline) or baseline == 0:
        return math.nan
    pct = value / baseline * 100
    thresholds = (bands or DESMET_BANDS)[kind]
    if kind == "higher":
        return float(sum(pct >= t for t in thresholds))
    return float(sum(pct <= t for t in thresholds))
