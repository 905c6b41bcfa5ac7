import math

import numpy as np
import pytest

from virtbench.analysis import resample, significance, stats
from virtbench.analysis.significance import ab_test
from virtbench.analysis.stats import modes, slowdown, summarize


def test_summary_of_known_values():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.n == 5 and s.median == 3.0 and s.minimum == 1.0 and s.maximum == 100.0
    assert math.isclose(s.mean, 22.0)
    assert s.ci_low <= s.median <= s.ci_high
    assert s.cv > 1  # the outlier makes it spread


def test_ci_is_deterministic_and_tight_for_constant_data():
    a = summarize([5.0] * 10)
    assert a.ci_low == a.ci_high == 5.0 and a.sd == 0.0 and a.cv == 0.0
    data = [1.0, 1.5, 2.0, 2.5, 9.0, 3.0, 2.2]
    assert summarize(data) == summarize(data)


def test_too_few_values_have_no_interval_and_failures_are_dropped():
    s = summarize([3.0, None, float("nan")])
    assert s.n == 1 and math.isnan(s.ci_low) and math.isnan(s.sd)
    assert summarize([]).n == 0


def test_slowdown_respects_direction():
    assert math.isclose(slowdown(110, 100, "lower"), 0.10)  # boot time 10% longer
    assert math.isclose(slowdown(90, 100, "higher"), 100 / 90 - 1)  # throughput lower
    assert slowdown(100, 100, "higher") == 0


def test_slowdown_ci_direction_and_interval():
    from virtbench.analysis.stats import slowdown_ci

    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    slower = [v * 0.8 for v in base]  # throughput down 20%: 25% slower
    point, lo, hi = slowdown_ci(base, slower, "higher")
    assert math.isclose(point, 0.25) and lo <= point <= hi and lo > 0.2
    point, lo, hi = slowdown_ci([10.0] * 5, [12.0] * 5, "lower")  # latency up 20%
    assert math.isclose(point, 0.2) and math.isclose(lo, 0.2) and math.isclose(hi, 0.2)
    assert math.isnan(slowdown_ci(base, [90.0, 91.0], "higher")[1])  # n < 5: no interval
    assert math.isnan(slowdown_ci([], slower, "higher")[0])


def test_slowdown_against_a_zero_median_is_not_a_crash():
    from virtbench.analysis.stats import slowdown_ci

    point, lo, hi = slowdown_ci([100.0, 110.0, 90.0], [0.0, 0.0, 0.0], "higher")
    assert math.isnan(point) and math.isnan(lo) and math.isnan(hi)
    point, _, _ = slowdown_ci([10.0, 10.0, 10.0], [20.0, 20.0, 20.0], "lower")
    assert point == 1.0


def test_outliers_are_flagged_by_tukey_fences():
    from virtbench.analysis.stats import outliers

    flags = outliers([10.0, 11.0, 10.5, 9.5, 10.2, 50.0])
    assert flags.tolist() == [False, False, False, False, False, True]
    assert summarize([10.0, 11.0, 10.5, 9.5, 10.2, 50.0]).outliers == 1
    assert not outliers([1.0, 100.0]).any()  # too few to call anything an outlier


def test_ab_test_finds_a_10pct_slowdown_and_not_a_copy():
    import numpy as np

    from virtbench.analysis.significance import ab_test, verdict

    rng = np.random.default_rng(3)
    a = 20 * rng.lognormal(0, 0.05, 20)
    b = 22 * rng.lognormal(0, 0.05, 20)
    r = ab_test(a, b)
    assert r.p < 0.01 and 0.05 < r.change < 0.15
    assert verdict(r, "lower", r.p, 0.05, 0.05) == "worse"  # boot time up: worse
    assert verdict(r, "higher", r.p, 0.05, 0.05) == "better"  # throughput up: better
    assert verdict(r, "lower", r.p, 0.05, 0.20) == "no change"  # below the minimum effect
    same = ab_test(a, a.copy())
    assert same.change == 0 and same.p > 0.9
    assert verdict(same, "lower", same.p, 0.05, 0.05) == "no change"


def test_ab_test_says_too_few_when_no_test_could_reach_alpha():
    from virtbench.analysis.significance import ab_test, min_p, verdict

    assert math.isclose(min_p(3, 3), 0.1) and min_p(5, 5) < 0.05
    r = ab_test([10.0, 10.1, 10.2], [20.0, 20.1, 20.2])
    assert r.p >= 0.1 and verdict(r, "lower", r.p, 0.05, 0.05) == "too few"


def test_holm_adjusts_in_order_and_keeps_nan():
    from virtbench.analysis.significance import holm

    adj = holm([0.01, 0.04, 0.03, math.nan])
    assert adj[:3] == [0.03, 0.06, 0.06] and math.isnan(adj[3])


def test_global_tests_and_post_hoc_pairs():
    import numpy as np

    from virtbench.analysis.significance import anova_tukey, kruskal_dunn

    rng = np.random.default_rng(5)
    base = 100 * rng.lognormal(0, 0.03, 15)
    groups = {"a": base, "b": base * 1.2, "c": base * 1.003}
    for test in (kruskal_dunn(groups), anova_tukey(groups)):
        assert test is not None and test.p < 0.001
        sig = {(p.a, p.b): p.significant for p in test.pairs}
        assert sig == {("a", "b"): True, ("a", "c"): False, ("b", "c"): True}
    assert kruskal_dunn({"a": [1.0, 2.0]}) is None  # one group: nothing to compare
    flat = kruskal_dunn({"a": [1.0, 1.0], "b": [1.0, 1.0]})
    assert flat is not None and flat.p == 1.0 and not flat.pairs[0].significant


def test_kruskal_wallis_is_scipys_with_ties_and_dunn_is_the_normal_test_of_mean_ranks():
    from scipy import stats as sps

    from virtbench.analysis.significance import holm, kruskal_dunn

    rng = np.random.default_rng(3)
    for _ in range(20):
        groups = {
            f"r{i}": np.round(rng.normal(10 + rng.integers(0, 3), 2, rng.integers(2, 60)))
            for i in range(int(rng.integers(2, 6)))
        }
        test = kruskal_dunn(groups)
        h, p = sps.kruskal(*groups.values())
        assert test is not None and test.statistic == pytest.approx(h, rel=1e-12)
        assert test.p == pytest.approx(p, rel=1e-9, abs=1e-15)
        pooled = np.concatenate(list(groups.values()))
        ranks, n = sps.rankdata(pooled), pooled.size
        _, counts = np.unique(pooled, return_counts=True)
        spread = n * (n + 1) / 12 - np.sum(counts**3 - counts) / (12 * (n - 1))
        mean, start = {}, 0
        for k, v in groups.items():
            mean[k], start = ranks[start : start + v.size].mean(), start + v.size
        raw = [
            2
            * sps.norm.sf(
                abs(mean[t.a] - mean[t.b])
                / np.sqrt(spread * (1 / groups[t.a].size + 1 / groups[t.b].size))
            )
            for t in test.pairs
        ]
        assert [t.p for t in test.pairs] == pytest.approx(holm(raw), rel=1e-9)


def test_desmet_scores_follow_s5_bands():
    from virtbench.report.desmet import desmet_score

    assert desmet_score(95, 100, "higher") == 4 and desmet_score(65, 100, "higher") == 1
    assert desmet_score(50, 100, "higher") == 0
    assert desmet_score(105, 100, "lower") == 4 and desmet_score(135, 100, "lower") == 1
    assert desmet_score(25, 100, "boot") == 2  # boots in 25% of the baseline's time
    assert math.isnan(desmet_score(1, 0, "higher"))
    custom = {"higher": (50.0, 60.0, 70.0, 80.0)}
    assert desmet_score(65, 100, "higher", custom) == 2


def _nested(rng, units: int, per_unit: int, between: float, within: float) -> tuple:
    """Values of `units` independent units (e.g. instances), `per_unit` correlated values
    each (batches): true median 10, a unit effect of SD `between`."""

    effects = rng.normal(0, between, units)
    values = [10 + e + rng.normal(0, within) for e in effects for _ in range(per_unit)]
    return values, [u for u in range(units) for _ in range(per_unit)]


def test_cluster_bootstrap_covers_the_truth_where_the_naive_one_does_not():
    import numpy as np

    rng = np.random.default_rng(3)
    hit_cluster = hit_naive = 0
    trials = 120
    for _ in range(trials):
        values, units = _nested(rng, units=8, per_unit=10, between=1.0, within=0.2)
        c, n = summarize(values, units), summarize(values)
        assert c.units == 8 and n.units == 80 and c.n == n.n == 80
        hit_cluster += c.ci_low <= 10 <= c.ci_high
        hit_naive += n.ci_low <= 10 <= n.ci_high
    assert hit_cluster / trials >= 0.85  # nominal 95%; percentile bootstrap of 8 units
    assert hit_naive / trials <= 0.6  # values of one unit taken as independent: far too narrow


def test_below_five_units_there_is_no_interval_only_the_range():
    from virtbench.report.cells import interval

    values = [1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 9.0, 9.1, 9.2]  # 3 units of 3 batches
    s = summarize(values, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    assert s.n == 9 and s.units == 3 and not s.has_ci
    assert interval(s) == ("range", "1-9.2 (of 9 in 3 units)")
    assert interval(summarize([1.0, 5.0, 9.2], [0, 1, 2])) == ("range", "1-9.2 (of 3)")
    assert interval(summarize([1.0, 5.0, 9.2], [0, 0, 0])) == ("range", "1-9.2 (of 3 in 1 unit)")
    assert summarize(values).has_ci  # the same values as 9 units do get one
    assert interval(summarize(values))[0] == "95% CI"


def test_slowdown_ci_resamples_units():
    from virtbench.analysis.stats import slowdown_ci

    base = [100.0, 100.0, 104.0, 104.0, 98.0, 98.0, 101.0, 101.0, 99.0, 99.0]
    units = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    point, lo, hi = slowdown_ci(base, [v / 2 for v in base], "higher", units_b=units, units_a=units)
    assert math.isclose(point, 1.0) and lo <= 1.0 <= hi
    few = [0, 0, 1, 1, 2, 2, 3, 3, 3, 3]  # 4 units
    assert math.isnan(slowdown_ci(base, base, "higher", units_b=few, units_a=units)[1])


def test_two_modes_found_where_separated_and_not_in_one_skewed_mode():
    rng = np.random.default_rng(7)
    two = np.concatenate([rng.normal(5, 0.5, 8), rng.normal(15.5, 0.6, 12)])
    found = modes(two)
    assert found is not None and (found.low_n, found.high_n) == (8, 12)
    assert abs(found.low_median - 5) < 0.6 and abs(found.high_median - 15.5) < 0.6
    assert modes(two[:19]) is None  # too few values to tell
    # one mode, skewed or heavy-tailed: at most the rare chance split (1-1.5% here)
    hits = sum(
        modes(draw) is not None
        for _ in range(100)
        for draw in (rng.lognormal(0, 1, 30), rng.exponential(1, 30), rng.normal(10, 1, 30))
    )
    assert hits <= 6, hits
    # a quantised figure's two steps (64 pages charged at a time) are no modes
    steps = [0.25] * 12 + [0.5] * 18
    assert modes(steps) is not None and modes(steps, resolution=0.25) is None
    outliers_ = np.concatenate([rng.normal(10, 0.3, 17), [50.0, 51.0, 52.0]])
    assert modes(outliers_) is None  # three far values of twenty are outliers, no mode


# --- bounded work on big groups -------------------------------------------------------------
def test_big_groups_get_order_statistics_that_cover_the_true_median():
    """Above BOOTSTRAP_MAX_VALUES independent values the CI is order statistics: over
    400 draws of 5,000 log-normal values (true median 20) it covers 20 about 95% of the
    time, and it says how it was made."""
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(400):
        st = summarize(20 * rng.lognormal(0, 0.1, 5000))
        assert st.ci_method == stats.CI_ORDER and st.ci_low < st.median < st.ci_high
        covered += st.ci_low <= 20 <= st.ci_high
    assert 0.92 <= covered / 400 <= 0.98


def test_nested_big_groups_resample_a_subset_of_each_unit():
    """Nested values above the bound: an evenly spaced subset of each unit, every unit
    kept; the interval is no narrower than the full cluster bootstrap's (it is computed
    from fewer values), and the median stays exact."""
    rng = np.random.default_rng(4)
    unit = np.repeat(np.arange(10), 600)
    values = 20 + rng.normal(0, 1, 10)[unit] + rng.normal(0, 0.5, unit.size)
    keep = stats.bounded_subset(unit)
    assert keep.size <= stats.BOOTSTRAP_MAX_VALUES and set(unit[keep]) == set(range(10))
    assert np.all(np.diff(keep) > 0)
    st = summarize(values, list(unit))
    assert st.ci_method == stats.CI_SUBSET and st.median == float(np.median(values))
    full = stats._interval(resample._cluster_medians(values, unit, np.random.default_rng(0)))
    assert st.ci_high - st.ci_low >= 0.9 * (full[1] - full[0])


def _modes_by_scan(values):
    """The split search as a loop over every split (the reference for `modes`)."""
    arr = np.sort(np.asarray(values, dtype=float))
    n = arr.size
    least = math.ceil(stats.MODES_MIN_SHARE * n)
    best = (0.0, 0)
    for k in range(least, n - least + 1):
        lo, hi = arr[:k], arr[k:]
        spread = math.sqrt(float(lo.var() + hi.var()))
        gap = float(hi.mean() - lo.mean())
        d = math.inf if spread == 0 and gap > 0 else (math.sqrt(2) * gap / spread if spread else 0)
        if d > best[0]:
            best = (d, k)
    return best


def test_modes_finds_the_split_a_scan_of_every_split_finds():
    rng = np.random.default_rng(5)
    for i in range(60):
        n = int(rng.integers(20, 200))
        draw = (
            rng.normal(0, 1, n)
            if i % 2
            else np.concatenate((rng.normal(1e6, 1, n // 2), rng.normal(1e6 + 12, 1, n - n // 2)))
        )
        d, k = _modes_by_scan(draw)
        found = modes(draw)
        if d >= stats.MODES_MIN_SEPARATION:
            assert found is not None and found.low_n == k and found.separation == pytest.approx(d)
        else:
            assert found is None


def test_large_ab_tests_use_the_permutation_normal_limit_and_agree_with_resampling():
    """More than PERMUTATION_MAX_VALUES values: the normal limit's p, within resampling
    error of scipy's permutation test with 20,000 resamples."""
    from scipy import stats as sps

    rng = np.random.default_rng(6)
    for shift in (0.0, 0.02, 0.05):
        a, b = rng.normal(10, 0.5, 300), rng.normal(10 + shift, 0.5, 300)
        r = ab_test(a, b)
        assert r.method == "normal limit"
        ref = sps.permutation_test(
            (a, b),
            lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
            vectorized=True,
            n_resamples=20000,
            rng=np.random.default_rng(0),
        ).pvalue
        assert abs(r.p - ref) < 0.02
    assert ab_test(rng.normal(10, 1, 20), rng.normal(10, 1, 20)).method == "permutation"


def test_slowdown_of_big_groups_covers_the_true_slowdown_without_resampling():
    """Two groups of 3,000 independent values, the attacked one 10% slower: the interval
    (order statistics on the log scale) holds 0.10 in about 95% of 300 draws."""
    from virtbench.analysis.stats import slowdown_ci

    rng = np.random.default_rng(8)
    covered = 0
    for _ in range(300):
        base, hit = 20 * rng.lognormal(0, 0.1, 3000), 22 * rng.lognormal(0, 0.1, 3000)
        point, lo, hi = slowdown_ci(base, hit, "lower")
        assert lo < point < hi
        covered += lo <= 0.10 <= hi
    assert 0.92 <= covered / 300 <= 0.98


def test_permutation_p_is_scipys():
    """Exact splits give scipy's permutation_test p exactly; random ones within their
    resampling error of it."""
    from scipy import stats as sps

    def scipy_p(x, y, n=9999):
        return sps.permutation_test(
            (x, y),
            lambda a, b, axis: np.mean(b, axis=axis) - np.mean(a, axis=axis),
            vectorized=True,
            n_resamples=n,
            rng=np.random.default_rng(0),
        ).pvalue

    rng = np.random.default_rng(9)
    for na, nb, shift in ((3, 3, 0.0), (5, 5, 2.0), (4, 7, 1.0), (6, 6, 0.5), (2, 9, 3.0)):
        x, y = rng.normal(10, 1, na), rng.normal(10 + shift, 1, nb)
        assert significance.permutation_p(x, y, 0) == pytest.approx(scipy_p(x, y), abs=1e-12)
    for shift in (0.0, 0.4, 1.0):
        x, y = rng.normal(10, 1, 15), rng.normal(10 + shift, 1, 15)
        got = significance.permutation_p(x, y, 0)
        assert abs(got - scipy_p(x, y, 40000)) < 0.015


def test_each_group_has_its_own_stream_and_equal_groups_are_still_resampled_apart():
    """A group's resamples depend on its values only (asked for by its interval, a
    ratio or a change, it is resampled once: the same medians), two groups' streams
    are independent, and a ratio of two equal groups is not read from one stream (that
    would make every resampled ratio 1: an interval of zero width)."""
    rng = np.random.default_rng(7)
    a = 100 + rng.normal(0, 5, 40)
    units = np.arange(a.size)
    first = resample.medians(a, units, 0, 0)
    stats.summarize(a)
    assert resample.medians(a, units, 0, 0) is first and not first.flags.writeable
    other = resample.medians(a + 1, units, 0, 0) - 1
    assert not np.array_equal(first, other)  # a shifted group: a stream of its own
    point, lo, hi = stats.slowdown_ci(a, a.copy(), "lower")
    assert point == 0 and lo < -0.01 and hi > 0.01
    assert abs(np.corrcoef(first, other)[0, 1]) < 0.1  # independent draws


def test_the_percentile_interval_is_numpys_quantile_to_the_last_digit():
    rng = np.random.default_rng(11)
    alpha = (1 - stats.CONFIDENCE) / 2
    for n in (1, 2, 3, 7, 100, 1999, 2000):
        for _ in range(20):
            e = np.round(rng.lognormal(size=n), int(rng.integers(1, 4)))  # ties too
            want = np.quantile(e, [alpha, 1 - alpha])
            assert stats._interval(e) == (float(want[0]), float(want[1]))


def test_a_quantile_of_ordered_values_is_numpys_percentile_to_the_last_digit():
    rng = np.random.default_rng(12)
    for n in (1, 2, 3, 4, 10, 99, 1000):
        for _ in range(20):
            v = np.sort(np.round(rng.lognormal(size=n), 2))
            want = np.percentile(v, [25, 50, 75])
            assert [stats.quantile_of(v, q) for q in (0.25, 0.5, 0.75)] == want.tolist()
