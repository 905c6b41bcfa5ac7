"""`density` at a latency bound on the fake runtime: a command in an instance takes 5 ms
plus 1 ms per instance running (injected), so with a bound of 12 ms the pile-up stops at
the first step past 7 instances, and the instances per GiB at the last step within it
are what the injected memory per instance gives."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from tests.fakeruntime import fake_session, run, values
from tests.faketruth import RuntimeTruth, Truth

from virtbench.experiments.density import DensityExperiment
from virtbench.experiments.density_bound import p99
from virtbench.report.views.density import answers
from virtbench.store.frame import as_frame


def test_the_pile_up_stops_at_the_bound_and_says_how_many_fit_per_gib_there(tmp_path):
    truth = Truth(
        {
            "fa": RuntimeTruth(pss_mib=3.0, kernel_mib=1.0, exec_ms=5.0, exec_per_instance_ms=1.0),
            "fb": RuntimeTruth(pss_mib=7.0, kernel_mib=1.0, exec_ms=5.0, exec_per_instance_ms=2.0),
        },
        seed=8,
    )
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 2, "runs": 2}
    exp |= {"liveness_probes": 3, "latency_bound_ms": 12.0, "memory_settle_s": 0}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
        stops = [e for e in s.store.events(s.run_id) if "fa run 1" in str(e)]
        assert world.running == {}
    steps = [
        x
        for x in samples
        if x.metric == "density.liveness_p99" and x.repetition == 0 and x.runtime == "fa"
    ]
    assert [x.background for x in steps] == [2, 4, 6, 8]  # 5 + 8 = 13 ms > 12 at 8
    assert [round(x.value) for x in steps] == [7, 9, 11, 13]
    assert values(samples, "density.reached", "fa") == [8.0, 8.0]
    per_gib = values(samples, "density.per_gib_at_bound", "fa")
    assert per_gib == pytest.approx([1024 / 4.0] * 2, rel=0.15)  # 6 instances of 4 MiB
    at = [x for x in samples if x.metric == "density.per_gib_at_bound" and x.runtime == "fa"]
    assert {x.params["bound_crossed_at"] for x in at} == {8} and {x.background for x in at} == {6}
    assert stops and "above 12 ms at 8 instances" in str(stops[0]), stops
    # fb: 5 + 2 x 4 = 13 ms at 4, so 2 within; 8 MiB each: 128 per GiB, fa's 256 first
    assert values(samples, "density.reached", "fb") == [4.0, 4.0]
    fb = values(samples, "density.per_gib_at_bound", "fb")
    assert fb == pytest.approx([1024 / 8.0] * 2, rel=0.15)
    (answer,) = [a for a in answers(as_frame(samples)) if "latency bound" in a.question]
    assert [x.runtime for x in answer.ranked] == ["fa", "fb"]


def test_a_bound_without_probes_is_refused_and_the_p99_is_the_nearest_rank():
    with pytest.raises(ValidationError, match="latency_bound_ms needs liveness_probes"):
        DensityExperiment(type="density", latency_bound_ms=10)
    assert DensityExperiment(type="density", latency_bound_ms=10, liveness_probes=3)
    assert p99([3.0, 1.0, 2.0]) == 3.0 and p99(list(range(1, 201))) == 198
