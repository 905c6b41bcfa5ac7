import math

from virtbench.stats import slowdown, summarize


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
    from virtbench.stats import slowdown_ci

    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    slower = [v * 0.8 for v in base]  # throughput down 20%: 25% slower
    point, lo, hi = slowdown_ci(base, slower, "higher")
    assert math.isclose(point, 0.25) and lo <= point <= hi and lo > 0.2
    point, lo, hi = slowdown_ci([10.0] * 5, [12.0] * 5, "lower")  # latency up 20%
    assert math.isclose(point, 0.2) and math.isclose(lo, 0.2) and math.isclose(hi, 0.2)
    assert math.isnan(slowdown_ci(base, [90.0, 91.0], "higher")[1])  # n < 3: no interval
    assert math.isnan(slowdown_ci([], slower, "higher")[0])


def test_slowdown_against_a_zero_median_is_not_a_crash():
    from virtbench.stats import slowdown_ci

    point, lo, hi = slowdown_ci([100.0, 110.0, 90.0], [0.0, 0.0, 0.0], "higher")
    assert math.isnan(point) and math.isnan(lo) and math.isnan(hi)
    point, _, _ = slowdown_ci([10.0, 10.0, 10.0], [20.0, 20.0, 20.0], "lower")
    assert point == 1.0
