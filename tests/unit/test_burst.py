"""`burst` recovers injected truth on the fake runtime: instances launched together, each
timed from its own launch call; percentiles, rate and failures per level."""

from __future__ import annotations

import numpy as np
import pytest
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench import spec as specmod
from virtbench.errors import SpecError

# fa: each instance is ready 20 ms after its launch, plus 1 ms per instance of fa already
# launched (contention: the k-th of a burst waits 20 + k ms); fb: 40 ms, no contention.
BURST = Truth(
    {
        "fa": RuntimeTruth(ready_ms=20.0, cv=0.001, slope_ms=1.0),
        "fb": RuntimeTruth(ready_ms=40.0, cv=0.001),
    },
    seed=3,
)
LEVELS = [1, 10, 40]


def by(samples, metric, runtime):
    return [x for x in samples if x.metric == metric and x.runtime == runtime]


@pytest.mark.parametrize("one_thread_issues", [False, True])
def test_burst_recovers_each_levels_percentiles_rate_and_failures(
    one_thread_issues, tmp_path, monkeypatch
):
    """Both ways of launching together: a thread per launch released by a barrier, and
    (a driver whose launch is a launcher command) one thread issuing them back to back."""
    from tests.fakeruntime import FakeRuntime

    monkeypatch.setattr(FakeRuntime, "spawns_launcher", one_thread_issues)
    exp = {"type": "burst", "levels": LEVELS, "runs": 2, "settle_s": 0}
    with fake_session(tmp_path, BURST, ["fa", "fb"], exp) as (s, world):
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
                q,
                n,
                got,
            )
        fb = [x.value for x in by(samples, f"burst.p50{at}", "fb")]
        assert all(abs(v - 40.0) < 0.5 for v in fb), fb
        assert all(x.value == 0 for x in by(samples, "burst.failed" + at, "fa"))
        # fb: every instance ready 40 ms after its own launch call, so its burst's window
        # is its last call's offset + 40 ms: the rate is n over that
        for rep in (0, 1):
            rate = [
                x.value for x in by(samples, "burst.ready_per_s" + at, "fb") if x.repetition == rep
            ]
            last = max(
                x.params["launch_offset_ms"]
                for x in by(samples, "burst.spawn_to_ready" + at, "fb")
                if x.repetition == rep
            )
            want = n / ((last + 40.0) / 1e3)
            assert len(rate) == 1 and abs(rate[0] - want) < 0.05 * want, (n, rate, want)
        cpu = by(everything, "burst.host_cpu" + at, "fa")  # a fake burst may be under a tick
        assert len(cpu) == 2 and all(
            0 <= x.value <= 100 if x.value is not None else "resolve" in x.error for x in cpu
        )
    assert all(x.params["level"] in LEVELS for x in samples if x.experiment == "burst")
    # launched together: every call of a burst of 40 within 200 ms of its first (a loaded host)
    offsets = [x.params["launch_offset_ms"] for x in by(samples, "burst.spawn_to_ready@40", "fa")]
    assert min(offsets) == 0 and max(offsets) < 200, max(offsets)


def test_a_burst_where_nothing_becomes_ready_is_failures_with_their_reason(tmp_path, monkeypatch):
    bad = Truth({"fa": RuntimeTruth(needs_mib=512)}, seed=1)  # 64 MiB instances fail
    exp = {"type": "burst", "levels": [3], "runs": 1, "settle_s": 0}
    with fake_session(tmp_path, bad, ["fa"], exp, instance={"memory_mib": 64}) as (s, world):
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


def test_the_report_draws_burst_curves(tmp_path, monkeypatch):
    """A burst run's report has its time-to-ready curve (median, 5-95% band, p99) and its
    rate against the level, for every runtime."""
    from typer.testing import CliRunner

    from virtbench.cli import app
    from virtbench.report import sections

    exp = {"type": "burst", "levels": [1, 4, 8], "runs": 2, "settle_s": 0}
    with fake_session(tmp_path, BURST, ["fa", "fb"], exp) as (s, _):
        run(s)
        samples = s.store.samples(s.run_id)
        s.store.finish_run(s.run_id, "completed")
        frame = s.store.frame(s.run_id)
    figs = {p.name: p for p in sections.figures(samples, ["fa", "fb"])}
    assert "burst-time-to-ready" in figs
    ax, ax_rate = figs["burst-time-to-ready"].fig.axes
    labels = {line.get_label() for line in ax.get_lines()}
    assert {"fa median", "fa p99", "fb median", "fb p99"} <= labels
    assert {line.get_label() for line in ax_rate.get_lines()} == {"fa", "fb"}
    fa = next(line for line in ax.get_lines() if line.get_label() == "fa median")
    assert list(fa.get_xdata()) == [1, 4, 8]
    # fa's truth: the k-th of a burst of n waits 20 + k ms: medians 20, 21.5, 23.5
    assert np.allclose(fa.get_ydata(), [20, 21.5, 23.5], atol=0.5), fa.get_ydata()
    from virtbench.report.answers import answers

    found = {a.question: a for a in answers(frame)}
    q = "Fastest to ready, 8 started at once"
    assert found[q].metric == "burst.p50@8"
    assert [x.runtime for x in found[q].ranked] == ["fa", "fb"], found  # 23.5 vs 40 ms
    out = tmp_path / "r.html"
    res = CliRunner().invoke(
        app, ["report", "latest", "-o", str(out), "--results", str(tmp_path / "results")]
    )
    assert res.exit_code == 0, res.output
    assert "Many starts at once" in out.read_text()
