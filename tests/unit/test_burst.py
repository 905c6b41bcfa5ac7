"""`burst` recovers injected truth on the fake runtime: instances launched together, each
timed from its own launch call; percentiles, rate and failures per level."""

from __future__ import annotations

import numpy as np
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench import spec as specmod
from virtbench.errors import SpecError

# fa: each instance is ready 20 ms after its launch, plus 1 ms per instance of fa already
# launched (contention: the k-th of a burst waits 20 + k ms); fb: 40 ms, no contention.
BURST = Truth({"fa": RuntimeTruth(ready_ms=20.0, cv=0.001, slope_ms=1.0),
               "fb": RuntimeTruth(ready_ms=40.0, cv=0.001)}, seed=3)  # fmt: skip
LEVELS = [1, 10, 40]


def by(samples, metric, runtime):
    return [x for x in samples if x.metric == metric and x.runtime == runtime]


def test_burst_recovers_each_levels_percentiles_rate_and_failures(tmp_path, monkeypatch):
    exp = {"type": "burst", "levels": LEVELS, "runs": 2, "settle_s": 0}
    with fake_session(tmp_path, monkeypatch, BURST, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
        everything = s.store.samples(s.run_id)
        assert world.running == {}  # every instance of every burst was stopped
    for n in LEVELS:
        at = f"@{n}"
        each = by(samples, "burst.spawn_to_ready" + at, "fa")
        assert len(each) == 2 * n  # every instance, both repetitions
        # the truth at level n: 20 + k ms for k = 0..n-1
        truth = 20.0 + np.arange(n)
        for q, pct in (("p50", 50), ("p95", 95), ("max", 100)):
            got = [x.value for x in by(samples, f"burst.{q}{at}", "fa")]
            assert len(got) == 2 and all(abs(g - np.percentile(truth, pct)) < 0.5 for g in got), (
                q, n, got)  # fmt: skip
        fb = [x.value for x in by(samples, f"burst.p50{at}", "fb")]
        assert all(abs(v - 40.0) < 0.5 for v in fb), fb
        assert all(x.value == 0 for x in by(samples, "burst.failed" + at, "fa"))
        rate = [x.value for x in by(samples, "burst.ready_per_s" + at, "fb")]
        # n instances ready about 40 ms after launches issued together: about n / 0.04 s
        assert all(0.8 * n / 0.040 < r <= n / 0.040 * 1.05 for r in rate), (n, rate)
        cpu = by(everything, "burst.host_cpu" + at, "fa")  # a fake burst may be under a tick
        assert len(cpu) == 2 and all(0 <= x.value <= 100 if x.value is not None
                                     else "resolve" in x.error for x in cpu)  # fmt: skip
    assert all(x.params["level"] in LEVELS for x in samples if x.experiment == "burst")


def test_a_burst_where_nothing_becomes_ready_is_failures_with_their_reason(tmp_path, monkeypatch):
    bad = Truth({"fa": RuntimeTruth(needs_mib=512)}, seed=1)  # 64 MiB instances fail
    exp = {"type": "burst", "levels": [3], "runs": 1, "settle_s": 0}
    with fake_session(tmp_path, monkeypatch, bad, ["fa"], exp,
                      instance={"memory_mib": 64}) as (s, world):  # fmt: skip
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    each = by(samples, "burst.spawn_to_ready@3", "fa")
    assert len(each) == 3 and all(x.value is None and "out of memory" in x.error for x in each)
    assert [x.value for x in by(samples, "burst.failed@3", "fa")] == [3]
    assert all(x.error for x in by(samples, "burst.p50@3", "fa"))


def test_burst_levels_are_checked():
    base = {"name": "b", "runtimes": ["crun"]}
    for levels, why in (([0], "outside 1..2000"), ([5, 5], "given twice"), ([], "at least 1")):
        try:
            specmod.parse({**base, "experiment": [{"type": "burst", "levels": levels}]}, "t")
        except SpecError as exc:
            assert "levels" in str(exc) and why in str(exc), exc
        else:
            raise AssertionError(f"levels {levels} accepted")
    ok = specmod.parse({**base, "experiment": [{"type": "burst", "levels": [100, 1, 10]}]}, "t")
    assert ok.experiment[0].levels == [1, 10, 100]
