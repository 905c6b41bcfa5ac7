"""`density` with `sharing = ["off", "ksm"]` on the fake runtime: KSM switched on once
the pile-up is up merges a known share of each instance (injected), and the figures
recover it: what sharing saved per instance, the memory per instance after it, beside
the pile-up's slope before it; KSM is back off after, and the run leaves nothing."""

from __future__ import annotations

import pytest
from tests.fakeruntime import fake_session, run, values
from tests.faketruth import RuntimeTruth, Truth

from virtbench.report.fits import cost_fits


def test_ksm_savings_and_the_memory_per_instance_after_sharing_are_recovered(tmp_path):
    """fa: 40 MiB of PSS and 8 MiB of kernel memory per instance, 30 MiB of it merged
    once KSM is on: each instance costs 48 MiB before sharing and 18 after."""
    truth = Truth({"fa": RuntimeTruth(pss_mib=40.0, kernel_mib=8.0, ksm_mib=30.0)}, seed=3)
    exp = {"type": "density", "instances": 10, "instances_per_benchmark": 5, "runs": 2}
    exp |= {"sharing": ["off", "ksm"], "memory_settle_s": 0}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        samples = run(s)
        assert world.running == {} and not world.ksm_on  # back off, everything stopped
    saved = values(samples, "density.ksm_saved", "fa")
    after = values(samples, "density.shared_per_instance", "fa")
    settle = [x for x in samples if x.metric == "density.ksm_settle"]
    assert len(saved) == len(after) == len(settle) == 2  # one per pile-up
    assert saved == pytest.approx([30.0, 30.0], abs=0.01)
    assert after == pytest.approx([18.0, 18.0], abs=1.0)  # the reading's noise: +-
    unshared = values(samples, "density.unshared_per_instance", "fa")
    assert unshared == pytest.approx([48.0, 48.0], abs=1.0)  # the same method, before
    assert all(x.params["ksm_settled"] and x.background == 10 for x in settle)
    before = cost_fits(samples)[("density.host_cost", "fa")]
    assert before.ci_low <= 48.0 <= before.ci_high, before


def test_without_ksm_in_sharing_nothing_is_shared_or_said(tmp_path):
    truth = Truth({"fa": RuntimeTruth(pss_mib=4.0, ksm_mib=3.0)}, seed=3)
    exp = {"type": "density", "instances": 4, "instances_per_benchmark": 2, "runs": 1}
    with fake_session(tmp_path, truth, ["fa"], exp | {"memory_settle_s": 0}) as (s, world):
        samples = run(s)
        assert not world.ksm_on
    assert not [x for x in samples if x.metric.startswith(("density.ksm", "density.shared"))]
