"""`tti` recovers injected truth on the fake runtime: each instance's create call -> its
first successful command, sequential, staggered and at once; the pooled p50/p95 and the
success rate each inside their 95% CI; the batch-resampling interval covers the truth at
least 90% of the time without being needlessly wide."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth, World

from virtbench.analysis.tails import quantile_ci, success_ci
from virtbench.experiments import tti
from virtbench.report.sandbox import pooled as tti_pooled

# fa: ready 20 ms after its create call (log-normal, CV 10%), plus 0.5 ms per instance of
# fa already running (a burst's k-th waits 0.5 k ms more); its command takes 5 ms.
FA = RuntimeTruth(ready_ms=20.0, cv=0.10, slope_ms=0.5, exec_ms=5.0)
SIGMA = math.sqrt(math.log1p(0.10**2))


def lognormal_quantile(median: float, q: float) -> float:
    from scipy.stats import norm

    return median * math.exp(SIGMA * norm.ppf(q))


def pooled(samples, metric, runtime="fa"):
    mine = [x for x in samples if x.metric == metric and x.runtime == runtime]
    values = np.array([x.value for x in mine if x.value is not None])
    units = np.array([x.repetition for x in mine if x.value is not None])
    return values, units, mine


def test_sequential_tti_recovers_the_injected_distribution_and_its_phases(tmp_path):
    exp = {"type": "tti", "sequential": 10, "staggered": 0, "levels": [], "runs": 10, "settle_s": 0}
    with fake_session(tmp_path, Truth({"fa": FA}, seed=1), ["fa"], exp) as (s, world):
        samples = run(s)
        assert world.running == {}  # every instance was stopped
    values, units, mine = pooled(samples, "tti.interactive@seq")
    assert len(values) == 100 and len(set(units.tolist())) == 10
    # one at a time: nothing else of fa runs, so the truth is 20 ms log-normal + 5 ms
    for q in (0.5, 0.95):
        truth = lognormal_quantile(20.0, q) + 5.0
        est = quantile_ci(values, units, q)
        assert est.has_ci and est.low <= truth <= est.high, (q, truth, est)
    ready, _, _ = pooled(samples, "tti.ready@seq")
    first, _, _ = pooled(samples, "tti.first_command@seq")
    launched, _, _ = pooled(samples, "tti.launched@seq")
    assert np.allclose(first, 5.0, atol=0.01)  # the command's own 5 ms, after ready
    assert abs(np.median(ready) - 20.0) < 1.0
    assert np.all(launched <= ready) and np.all(launched >= 0)
    assert all(x.params["batch"] == "seq" and x.params["instances"] == 10 for x in mine)
    # one at a time: no batch figures
    assert not [x for x in samples if x.metric.startswith(("tti.wall", "tti.amortized"))]


def test_a_90pct_success_rate_is_recovered_with_each_failure_and_its_reason(tmp_path):
    truth = Truth({"fa": RuntimeTruth(ready_ms=20.0, cv=0.05, exec_fail_share=0.10)}, seed=7)
    exp = {
        "type": "tti",
        "sequential": 0,
        "staggered": 0,
        "levels": [20],
        "runs": 12,
        "settle_s": 0,
    }
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        run(s)
        stored = s.store.samples(s.run_id)
        assert world.running == {}
    every = [x for x in stored if x.metric == "tti.interactive@20"]
    assert len(every) == 240
    ok = np.array([x.error == "" for x in every])
    failed = [x for x in every if x.error]
    assert failed and all(
        "its first command: exit status 1: fake: injected failure" in x.error for x in failed
    )
    rate = success_ci(ok, np.array([x.repetition for x in every]))
    assert rate.low <= 90.0 <= rate.high, rate
    assert rate.high - rate.low < 15
    counted = [x.value for x in stored if x.metric == "tti.failed@20"]
    assert sum(counted) == len(failed)


def test_a_burst_and_a_staggered_wave_give_their_wall_and_amortized_time(tmp_path):
    # fb: 40 ms to ready, no contention, a 5 ms command: every instance is interactive
    # 45 ms after its own create call
    truth = Truth({"fb": RuntimeTruth(ready_ms=40.0, cv=0.001, exec_ms=5.0)}, seed=3)
    exp = {
        "type": "tti",
        "sequential": 0,
        "staggered": 6,
        "gap_ms": 20,
        "levels": [8],
        "runs": 2,
        "settle_s": 0,
    }
    with fake_session(tmp_path, truth, ["fb"], exp) as (s, _):
        samples = run(s)
    for at, n in (("stagger", 6), ("8", 8)):
        for rep in (0, 1):
            each = [
                x for x in samples if x.metric == f"tti.interactive@{at}" and x.repetition == rep
            ]
            assert len(each) == n and all(abs(x.value - 45.0) < 0.5 for x in each)
            offsets = sorted(x.params["launch_offset_ms"] for x in each)
            if at == "stagger":  # the k-th launched k x 20 ms after the first, or later
                # where this host's load delayed it (no upper bound: a loaded host's is its own)
                assert all(o > 20 * k - 15 for k, o in enumerate(offsets)), offsets
                assert all(x.params["gap_ms"] == 20 for x in each)
            wall = [
                x.value for x in samples if x.metric == f"tti.wall@{at}" and x.repetition == rep
            ]
            amortized = [
                x.value
                for x in samples
                if x.metric == f"tti.amortized@{at}" and x.repetition == rep
            ]
            assert len(wall) == 1 and abs(wall[0] - (offsets[-1] + 45.0)) < 0.5
            assert abs(amortized[0] - wall[0] / n) < 1e-6


def test_a_runtime_without_exec_is_said_once_and_measures_nothing(tmp_path):
    truth = Truth({"fa": FA, "fn": RuntimeTruth(exec_ms=None)})
    exp = {"type": "tti", "sequential": 2, "staggered": 0, "levels": [2], "runs": 2, "settle_s": 0}
    with fake_session(tmp_path, truth, ["fa", "fn"], exp) as (s, _):
        run(s)
        every = s.store.samples(s.run_id)
    theirs = [x for x in every if x.runtime == "fn"]
    assert {x.metric for x in theirs} == {"tti.interactive@seq", "tti.interactive@2"}
    assert all(x.error == "fn cannot: fake: no exec" and x.repetition == 0 for x in theirs)
    assert (
        len(
            [
                x
                for x in every
                if x.runtime == "fa" and x.value is not None and x.metric == "tti.interactive@2"
            ]
        )
        == 4
    )


def test_tti_tables_refuse_levels_given_twice():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="given twice"):
        tti.TtiExperiment(type="tti", levels=[10, 10])
    assert tti.TtiExperiment(type="tti", sequential=0, staggered=0, levels=[5, 1]).batches() == [
        ("1", 1),
        ("5", 5),
    ]


def test_the_batch_interval_covers_the_fake_runtimes_true_quantiles():
    """Coverage: 300 data sets of 10 bursts of 20 instances, drawn as the fake runtime
    draws a burst (log-normal, each instance 0.5 ms later per one already running), each
    burst shifted by a draw of its own (SD 1 ms: the batches are not alike); the truth is
    the quantile of a million such instances. The 95% CIs of p50 and p95 hold it in at
    least 90% of the data sets, and are at most twice as wide as the spread of the
    estimates themselves calls for."""
    world = World(Truth({"fa": FA}, seed=11))
    rng = world.rng

    def bursts(k: int) -> tuple[np.ndarray, np.ndarray]:
        shift = rng.normal(0.0, 1.0, size=k)  # ms, each burst's own
        base = 20.0 * np.exp(SIGMA * rng.standard_normal((k, 20))) + 0.5 * np.arange(20)
        return (base + shift[:, None] + 5.0).ravel(), np.repeat(np.arange(k), 20)

    big, _ = bursts(50_000)
    truth = {q: float(np.quantile(big, q)) for q in (0.5, 0.95)}
    got: dict[float, list] = {q: [] for q in truth}
    trials = 300
    for t in range(trials):
        values, units = bursts(10)
        for q in truth:
            got[q].append(quantile_ci(values, units, q, seed=t))
    for q, ests in got.items():
        held = sum(e.low <= truth[q] <= e.high for e in ests) / trials
        assert held >= 0.90, (q, held)
        ideal = 2 * 1.96 * np.std([e.value for e in ests])
        width = np.mean([e.high - e.low for e in ests])
        assert width < 2 * ideal, (q, width, ideal)


def test_a_tail_with_too_few_values_beyond_it_has_no_ci():
    values = np.arange(200, dtype=float)
    units = np.repeat(np.arange(10), 20)
    p99 = quantile_ci(values, units, 0.99)
    assert not p99.has_ci and "values beyond it" in p99.why_none
    assert not quantile_ci(values[:60], units[:60], 0.5).has_ci  # 3 batches
    assert not quantile_ci(values[:160], units[:160], 0.95).has_ci  # 8 batches: a tail
    assert quantile_ci(values, units, 0.95).has_ci  # 10 batches, 10 beyond it


def test_a_warm_up_instance_comes_first_per_runtime_and_counts_in_no_figure(tmp_path):
    """`warm_up`: one instance per runtime before its first batch, its samples stored as a
    warm-up; the batches' figures are those of the same run without it."""
    exp = {"type": "tti", "sequential": 3, "staggered": 0, "levels": [], "runs": 2}
    exp |= {"settle_s": 0, "warm_up": True}
    truth = Truth({"fa": FA, "fb": FA}, seed=3)
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)  # warm-ups too
        assert world.running == {}
    for rt in ("fa", "fb"):
        warm = [x for x in samples if x.runtime == rt and x.warmup]
        kept = [x for x in samples if x.runtime == rt and not x.warmup]
        interactive = [x for x in warm if x.metric == "tti.interactive@seq"]
        assert len(interactive) == 1 and interactive[0].value is not None  # one, first
        assert len([x for x in kept if x.metric == "tti.interactive@seq"]) == 6  # 2 x 3
        assert min(x.repetition for x in warm) == min(x.repetition for x in kept)


def test_each_batch_p99_is_held_against_the_specs_slo_by_its_ci(tmp_path):
    """`slo_p99_ms`: the report says which runtime's batches met it (the p99's whole CI
    at or below the line: fa's ~30 ms under 45), missed it (above: fb's ~65 ms) or
    cannot tell (its CI spans the line); without the option, no SLO is said."""
    from virtbench.report.sandbox import slo_notes
    from virtbench.report.views import tti as view
    from virtbench.report.views.kind import Shown
    from virtbench.store.frame import as_frame

    # 10 batches of 60: enough beyond each p99 for its CI
    exp = {"type": "tti", "sequential": 60, "staggered": 0, "levels": [], "runs": 10}
    exp |= {"settle_s": 0, "slo_p99_ms": 45}
    slow = RuntimeTruth(ready_ms=60.0, cv=0.10, slope_ms=0.5, exec_ms=5.0)
    with fake_session(tmp_path, Truth({"fa": FA, "fb": slow}, seed=4), ["fa", "fb"], exp) as (
        s,
        _world,
    ):
        samples = run(s)
        record = s.store.run(s.run_id)
    shown = Shown(record, as_frame(samples), ["fa", "fb"])
    assert view.slo_ms(shown) == 45.0
    caption = str(view.tables(shown)[0].caption)
    assert "SLO p99 <= 45 ms" in caption, caption
    line = next(x for x in caption.splitlines() if x.startswith("  one by one: "))
    missed, met = line.removeprefix("  one by one: ").split("; ")
    assert missed.startswith("missed by fb (") and "fa" not in missed, caption
    assert met.startswith("met by fa (") and "fb" not in met, caption
    found = tti_pooled(as_frame(samples))
    p99 = next(b for b in found if b.runtime == "fa").tails["p99"]
    assert p99.has_ci
    on_it = slo_notes(found, (p99.low + p99.high) / 2)  # the line inside fa's CI
    assert any("its CI spans the line for fa (" in line for line in on_it), on_it
    both_met = slo_notes([b for b in found if b.runtime == "fa"], 1e6)
    assert both_met[1].startswith("  one by one: met by every runtime (the highest p99: fa")
    no_slo = Shown(replace(record, spec={**record.spec, "experiment": []}), shown.frame, ["fa"])
    assert view.slo_ms(no_slo) is None
    assert "SLO" not in str(view.tables(no_slo)[0].caption or "")
