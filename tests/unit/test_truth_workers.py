"""The experiments that measure a worker recover what the fake runtime was told: the
slopes of a pile-up (scalability), each runtime's figure (throughput), the slowdown per
attacker and placement (isolation). As in test_truth.py: within their 95% CIs but for
chance misses, and within a tolerance (tests/recovered.py)."""

from __future__ import annotations

from tests.fakeruntime import fake_session, run, values
from tests.faketruth import RuntimeTruth, Truth
from tests.recovered import covered, median_case

from virtbench.analysis.fit import verdict
from virtbench.analysis.stats import slowdown_ci
from virtbench.report.fits import trend
from virtbench.report.sections import experiment_tables
from virtbench.store.records import RunRecord

# --- scalability ----------------------------------------------------------------------
SCALE = {
    "type": "scalability",
    "instances": 20,
    "instances_per_benchmark": 5,
    "runs": 3,
    "measurements_per_point": 4,
    "warmups": 1,
    "settle_s": 0,
}


def test_scalability_recovers_the_boot_slope(tmp_path, monkeypatch):
    """fa's boot grows 0.25 ms per background instance, fb's not at all: the fitted
    slopes' CIs hold 0.25 and 0."""
    truth = Truth({"fa": RuntimeTruth(slope_ms=0.25), "fb": RuntimeTruth(exit_ms=12.0)}, seed=3)
    with fake_session(tmp_path, truth, ["fa", "fb"], SCALE) as (s, world):
        samples = run(s)
    assert world.running == {}
    assert {x.background for x in samples if x.metric == "boot.spawn_to_exit"} == {0, 5, 10, 15, 20}
    for rt, t in truth.runtimes.items():  # virtbench's own trend, per 100 background
        f = trend(samples, "boot.spawn_to_exit", rt)
        assert f is not None and f.points == 15 and f.groups == 3
        assert f.ci_low <= 100 * t.slope_ms <= f.ci_high, (rt, f)
        assert abs(f.slope - 100 * t.slope_ms) < 5, (rt, f)
    assert verdict(trend(samples, "boot.spawn_to_exit", "fa")) == "grows"
    assert verdict(trend(samples, "boot.spawn_to_exit", "fb")) == "flat"  # injected zero
    record = RunRecord("r", "", 0.0, None, "completed", [], {"runtimes": ["fa", "fb"]}, {}, [])
    shown = experiment_tables(record, samples)
    assert any("trend" in str(t.title) and t.row_count == 2 for t in shown)


def test_scalability_recovers_a_worker_figure_slope(tmp_path, monkeypatch):
    """A measuring worker (sqlite): fa's figure falls by 8 inserts/s per background
    instance, fb's stays flat."""
    truth = Truth(
        {"fa": RuntimeTruth(figure_slope=-8.0), "fb": RuntimeTruth(figure=1500.0)}, seed=4
    )
    exp = {**SCALE, "worker": "sqlite"}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, _):
        samples = run(s)
    for rt, t in truth.runtimes.items():
        f = trend(samples, "inserts_per_s", rt)
        assert f is not None and f.ci_low <= 100 * t.figure_slope <= f.ci_high, (rt, f)
    assert verdict(trend(samples, "inserts_per_s", "fa")) == "shrinks"
    assert verdict(trend(samples, "inserts_per_s", "fb")) == "flat"


# --- throughput -----------------------------------------------------------------------
def test_throughput_recovers_each_runtimes_figure(tmp_path, monkeypatch):
    truth = Truth(
        {"fa": RuntimeTruth(figure=1000.0), "fb": RuntimeTruth(figure=2500.0, figure_cv=0.1)},
        seed=5,
    )
    exp = {"type": "throughput", "workloads": ["sqlite"], "runs": 30}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, _):
        samples = run(s)
    cases = []
    for rt, t in truth.runtimes.items():
        cases.append(median_case(f"{rt} inserts/s", t.figure, values(samples, "inserts_per_s", rt)))
        rows = 60000  # sqlite's default, so seconds = rows / figure
        cases.append(median_case(f"{rt} s", rows / t.figure, values(samples, "seconds", rt)))
    covered(cases, tolerance=0.10)  # fb: CV 10%, 30 values: 4 SE of the median


# --- isolation ------------------------------------------------------------------------
def test_isolation_recovers_the_slowdown_per_attacker_and_placement(tmp_path, monkeypatch):
    """fa's worker runs at half speed beside a cpu attacker on its own CPU, 1.3x slower
    beside one on its SMT sibling, ...; every attacker/placement not listed, not at all."""
    fa = {
        ("cpu", "same-cpu"): 2.0,
        ("cpu", "smt-sibling"): 1.3,
        ("cpu", "other-cpu"): 1.05,
        ("fork", "same-cpu"): 1.5,
    }
    fb = {("cpu", "same-cpu"): 1.2, ("fork", "all-other"): 1.1}
    truth = Truth(
        {"fa": RuntimeTruth(slowdown=fa), "fb": RuntimeTruth(figure=800.0, slowdown=fb)}, seed=6
    )
    exp = {
        "type": "isolation",
        "worker": "sqlite",
        "attackers": ["cpu", "fork"],
        "runs": 20,
        "warmups": 1,
        "settle_s": 0,
        "ci_target_pct": 0,
    }
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
    assert world.running == {}
    cases = []
    for rt, t in truth.runtimes.items():
        base = values(samples, "inserts_per_s", rt, attacker="")
        for attacker in ("cpu", "fork"):
            for placement in ("same-cpu", "smt-sibling", "other-cpu", "all-other"):
                hit = values(samples, "inserts_per_s", rt, attacker=attacker, placement=placement)
                assert len(hit) == 20, (rt, attacker, placement)
                point, lo, hi = slowdown_ci(base, hit, "higher")
                factor = t.slowdown.get((attacker, placement), 1.0)  # slowdown + 1
                cases.append((f"{rt} {attacker}/{placement}", factor, point + 1, lo + 1, hi + 1))
    covered(cases, tolerance=0.10)  # 2 medians of 20 values with a CV of 5% each
