"""Tests between runtimes: B against A for one metric (a permutation test, bounded, with
Holm's correction over the metrics compared and a verdict), and several runtimes at once
(Kruskal-Wallis with Dunn's pairs, or ANOVA with Tukey's HSD, as S3). The summaries of
stats.py are what these tests compare."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Values as callers hold them: a sequence, or a column of a frame (a numpy array)
Values = Sequence[float] | np.ndarray


def finite(values: Values) -> np.ndarray:
    """The finite values (NaN and None dropped)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        kept: np.ndarray = values[np.isfinite(values)]
        return kept
    return np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)


# --- A/B: one metric, two groups ----------------------------------------------------------
PERMUTATIONS = 9999
PERMUTATION_MAX_VALUES = 400  # more values in all: the permutation distribution's normal limit
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
    method: str = "permutation"  # or "normal limit" (more than PERMUTATION_MAX_VALUES)


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact permutation test of n_a vs n_b values can give."""
    if not n_a or not n_b:
        return 1.0
    log_ways = math.lgamma(n_a + n_b + 1) - math.lgamma(n_a + 1) - math.lgamma(n_b + 1)
    if log_ways > 700:  # past a float's range: no p a test could report
        return 0.0
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def p_floor(n_a: int, n_b: int) -> float:
    """The smallest p `ab_test` reports for n_a vs n_b values where it resamples (more
    splits than PERMUTATIONS): 2 / (PERMUTATIONS + 1), a bound, not a value (the true p
    may be smaller); 0 where every split is counted (its p is exact)."""
    if not n_a or not n_b or n_a + n_b > PERMUTATION_MAX_VALUES:
        return 0.0
    return 2 / (PERMUTATIONS + 1) if math.comb(n_a + n_b, n_a) > PERMUTATIONS else 0.0


def ab_test(a: Values, b: Values, seed: int = 0) -> ABResult:
    """Two-sample permutation test of the difference of means, as Firecracker's A/B tool
    does (exact when the permutations are fewer than PERMUTATIONS, else PERMUTATIONS
    random ones with a fixed seed). Means, not medians, for the test: the median of a
    few values ignores most of them, so its permutation distribution is too coarse to
    ever be significant at 5 vs 5; the effect reported is still the change of medians.
    Bounded: with more than PERMUTATION_MAX_VALUES values in all, p is that of the
    permutation distribution's normal limit (its exact mean 0 and variance), which
    resampling would only approximate."""
    return ab_tests([(a, b)], seed)[0]


def ab_tests(pairs: Sequence[tuple[Values, Values]], seed: int = 0) -> list[ABResult]:
    """`ab_test` of each (A, B) pair. The resampled tests of pairs of the same sizes are
    worked out together: their random splits are read once for all of them (a report
    or a site page compares many pairs of one size), with the same p each would get."""
    out: list[ABResult] = []
    waiting: dict[tuple[int, int], list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for i, (a, b) in enumerate(pairs):
        r, sides = _ab_start(finite(a), finite(b))
        out.append(r)
        if sides is None:
            continue
        first, second = sides
        if math.comb(first.size + second.size, first.size) <= PERMUTATIONS:
            out[i] = dataclasses.replace(r, p=permutation_p(first, second, seed))
        else:
            waiting.setdefault((first.size, second.size), []).append((i, first, second))
    for group in waiting.values():
        ps = _resampled_ps([g[1] for g in group], [g[2] for g in group], seed)
        for (i, _, _), p in zip(group, ps, strict=True):
            out[i] = dataclasses.replace(out[i], p=p)
    return out


def _ab_start(x: np.ndarray, y: np.ndarray) -> tuple[ABResult, tuple[np.ndarray, ...] | None]:
    """The result of x against y where no permutations are needed, else the result
    without its p and the two sides in the order the splits are drawn for them."""
    nan = math.nan
    if x.size == 0 or y.size == 0:
        return ABResult(x.size, y.size, nan, nan, nan, nan), None
    ma, mb = float(np.median(x)), float(np.median(y))
    change = mb / ma - 1 if ma else nan
    if x.size < 2 or y.size < 2 or (np.all(x == x[0]) and np.all(y == x[0])):
        p = 1.0 if x.size >= 2 and y.size >= 2 else nan
        return ABResult(x.size, y.size, ma, mb, change, p), None
    if x.size + y.size > PERMUTATION_MAX_VALUES:
        p = permutation_normal_p(x, y)
        return ABResult(x.size, y.size, ma, mb, change, p, "normal limit"), None
    # the two-sided p of a difference of means does not depend on which side is A: the
    # resampled test draws its splits for the pair in one order, so that B against A and
    # A against B get one p
    sides = (x, y) if (x.size, x.tobytes()) <= (y.size, y.tobytes()) else (y, x)
    return ABResult(x.size, y.size, ma, mb, change, nan), sides


@functools.lru_cache(maxsize=4)
def _shuffles(n: int, seed: int) -> np.ndarray:
    """PERMUTATIONS random orders of range(n), drawn from `seed`: the same for every pair
    of that size (a site compares hundreds), so drawn once and kept (read-only)."""
    rng = np.random.default_rng(seed)
    order = rng.permuted(np.tile(np.arange(n), (PERMUTATIONS, 1)), axis=1)
    order.flags.writeable = False
    return order


@functools.lru_cache(maxsize=2)
def _first_k(n: int, k: int, seed: int) -> np.ndarray:
    """Which of n values each of _shuffles(n, seed)'s orders puts first (its first k), as
    a 0/1 matrix: its product with the pooled values is every split's first sum, as the
    exact splits' is. Kept: a site compares pairs of one size (8 bytes a split and value:
    32 MB at PERMUTATION_MAX_VALUES, above which ab_test takes the normal limit)."""
    picks = np.zeros((PERMUTATIONS, n))
    picks[np.arange(PERMUTATIONS)[:, None], _shuffles(n, seed)[:, :k]] = 1.0
    picks.flags.writeable = False
    return picks


def permutation_p(x: np.ndarray, y: np.ndarray, seed: int) -> float:
    """Two-sided p of mean(y) - mean(x) by permutation, as scipy's permutation_test
    reckons it: every split of the pooled values when there are at most PERMUTATIONS,
    else PERMUTATIONS random ones drawn from `seed` (then the observed split counts as
    one of them); twice the smaller tail, at most 1. (Here, not scipy: importing it costs
    a second.)"""
    pooled = np.concatenate((x, y))
    n, k = pooled.size, x.size
    if math.comb(n, k) > PERMUTATIONS:
        return _resampled_ps([x], [y], seed)[0]
    observed = float(y.mean() - x.mean())
    gamma = abs(1e-14 * observed)  # scipy's tolerance for ties of the statistic
    picks = np.array(list(itertools.combinations(range(n), k)))
    in_x = np.zeros((picks.shape[0], n), dtype=bool)
    in_x[np.arange(picks.shape[0])[:, None], picks] = True
    sum_x = in_x.astype(float) @ pooled
    null = (pooled.sum() - sum_x) / (n - k) - sum_x / k
    less = np.count_nonzero(null <= observed + gamma) / null.size
    greater = np.count_nonzero(null >= observed - gamma) / null.size
    return float(min(1.0, 2 * min(less, greater)))


def _resampled_ps(xs: list[np.ndarray], ys: list[np.ndarray], seed: int) -> list[float]:
    """permutation_p of each (x, y), all of one pair of sizes, over PERMUTATIONS random
    splits: one product of the splits with every pair's pooled values."""
    pooled = np.stack([np.concatenate((x, y)) for x, y in zip(xs, ys, strict=True)], axis=1)
    n, k = pooled.shape[0], xs[0].size
    observed = np.array([float(y.mean() - x.mean()) for x, y in zip(xs, ys, strict=True)])
    gamma = np.abs(1e-14 * observed)  # scipy's tolerance for ties of the statistic
    sum_x = _first_k(n, k, seed) @ pooled
    null = (pooled.sum(axis=0) - sum_x) / (n - k) - sum_x / k
    less = (np.count_nonzero(null <= observed + gamma, axis=0) + 1) / (PERMUTATIONS + 1)
    greater = (np.count_nonzero(null >= observed - gamma, axis=0) + 1) / (PERMUTATIONS + 1)
    return [float(min(1.0, 2 * min(lo, hi))) for lo, hi in zip(less, greater, strict=True)]


def permutation_normal_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided p of mean(y) - mean(x) under its permutation distribution's normal
    limit: mean 0, variance S^2 (1/n_x + 1/n_y) with S^2 the pooled values' variance
    about their grand mean (divided by N - 1), exactly the permutation variance."""
    pooled = np.concatenate((x, y))
    var = float(pooled.var(ddof=1)) * (1 / x.size + 1 / y.size)
    diff = float(y.mean() - x.mean())
    if var <= 0:
        return 1.0 if diff == 0 else 0.0
    return math.erfc(abs(diff) / math.sqrt(2 * var))


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
    significant (`p` <= alpha, p already corrected) and at least `min_effect` (0.05 = 5%)
    either way: a ratio of at least 1.05 or at most 1/1.05, so that A against B is the
    mirror of B against A; "too few" when no permutation test of these sizes could reach
    alpha; else "no change"."""
    if min_p(r.n_a, r.n_b) > alpha or math.isnan(p):
        return "too few"
    if p > alpha or math.isnan(r.change) or r.change <= -1:
        return "no change"
    if abs(math.log1p(r.change)) < math.log1p(min_effect) - 1e-12:
        return "no change"
    worse = r.change > 0 if direction == "lower" else r.change < 0
    return "worse" if worse else "better"


def difference_verdict(
    r: ABResult, direction: str, p: float, alpha: float, resolution: float | None
) -> Verdict:
    """The verdict where a ratio means nothing (a side within the method's resolution of
    zero): decided on the difference of the medians, significant and beyond the
    resolution; the same rule whichever side is A."""
    if min_p(r.n_a, r.n_b) > alpha or math.isnan(p):
        return "too few"
    diff = r.median_b - r.median_a
    if p > alpha or math.isnan(diff) or abs(diff) <= (resolution or 0.0):
        return "no change"
    worse = diff > 0 if direction == "lower" else diff < 0
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


def preload() -> None:
    """Import what the test of several groups uses (scipy's special functions), in a
    process about to fork workers that each run it, so that it is imported once."""
    import scipy.special  # noqa: F401


def kruskal_dunn(groups: Mapping[str, Values], alpha: float = 0.05) -> GroupTest | None:
    """Kruskal-Wallis over the groups, then Dunn's test for every pair with Holm's
    correction (ties corrected). None with fewer than 2 groups of at least 2 values.
    (H and its p as scipy.stats.kruskal gives them, worked out here: scipy's wrapper
    costs more than the test for the few groups of a report.)"""
    from scipy.special import chdtrc

    data = {k: finite(v) for k, v in groups.items()}
    data = {k: v for k, v in data.items() if v.size >= 2}
    if len(data) < 2:
        return None
    pooled = np.concatenate(list(data.values()))
    names = list(data)
    if np.all(pooled == pooled[0]):
        pairs = [PairTest(a, b, 1.0, False) for i, a in enumerate(names) for b in names[i + 1 :]]
        return GroupTest("Kruskal-Wallis + Dunn (Holm)", 0.0, 1.0, pairs)
    n = pooled.size
    _, inverse, counts = np.unique(pooled, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]  # tied values: their mean rank
    sizes = np.array([data[k].size for k in names])
    mean_rank = dict(
        zip(names, np.add.reduceat(ranks, np.cumsum(sizes) - sizes) / sizes, strict=True)
    )
    ties = float(np.sum(counts**3 - counts))
    h = 12 / (n * (n + 1)) * sum(sizes[i] * mean_rank[k] ** 2 for i, k in enumerate(names))
    h = (h - 3 * (n + 1)) / (1 - ties / (n**3 - n))
    spread = n * (n + 1) / 12 - ties / (12 * (n - 1))  # of a rank, ties corrected
    raw, keys = [], []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            se = math.sqrt(spread * (1 / data[a].size + 1 / data[b].size))
            z = (mean_rank[a] - mean_rank[b]) / se
            raw.append(math.erfc(abs(z) / math.sqrt(2)))  # two-sided normal p
            keys.append((a, b))
    adj = holm(raw)
    pairs = [PairTest(a, b, q, q <= alpha) for (a, b), q in zip(keys, adj, strict=True)]
    p = float(chdtrc(len(names) - 1, h))
    return GroupTest("Kruskal-Wallis + Dunn (Holm)", float(h), p, pairs)


def anova_tukey(groups: Mapping[str, Values], alpha: float = 0.05) -> GroupTest | None:
    """One-way ANOVA over the groups, then Tukey's HSD for every pair (as S3 did). None
    with fewer than 2 groups of at least 2 values or no variance at all."""
    from scipy import stats as sps

    data = {k: finite(v) for k, v in groups.items()}
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
