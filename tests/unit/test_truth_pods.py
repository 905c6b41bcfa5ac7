"""A pod's overhead (`cri` runtimes) recovered on the fake runtime's injected truth, and
the RuntimeClass the report writes from it."""

from __future__ import annotations

import math

import yaml
from tests.fakeruntime import fake_session, run, values
from tests.faketruth import RuntimeTruth, Truth
from tests.recovered import covered, median_case

from virtbench.report import runtimeclass
from virtbench.store.frame import as_frame


def test_density_recovers_a_pods_overhead_beyond_its_container(tmp_path):
    """A pod's sandbox cost (the fake's injected overhead, as a `cri` runtime's pause
    sandbox and shim) is each pod's `density.pod_overhead`: its median's CI holds it."""
    truth = Truth(
        {
            "fa": RuntimeTruth(pss_mib=3.0, overhead_mib=4.5),
            "fb": RuntimeTruth(pss_mib=3.0, overhead_mib=12.0),
        },
        seed=5,
    )
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 10, "runs": 1}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
    assert world.running == {}
    cases = [
        median_case(
            f"{rt} pod overhead", t.overhead_mib, values(samples, "density.pod_overhead", rt)
        )
        for rt, t in truth.runtimes.items()
    ]
    covered(cases, tolerance=0.05)


def test_a_runtimeclass_is_written_from_the_pod_overhead_measured(tmp_path):
    """podFixed's memory is the pod overhead's CI upper end plus 10%, rounded up to a MiB,
    above the injected overhead; the manifest is YAML a cluster takes as a RuntimeClass."""
    truth = Truth({"fa": RuntimeTruth(overhead_mib=4.5)}, seed=7)
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 10, "runs": 1}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _world):
        samples = run(s)
    t = runtimeclass.table(as_frame(samples), "density")
    assert t is not None and t.row_count == 1
    cells = [next(iter(c.cells)) for c in t.columns]
    runtime, _median, ci, fixed, manifest = cells
    high = float(ci.split("-")[1].split()[0])
    assert runtime == "fa" and fixed == f"{math.ceil(high * 1.1)}Mi"
    assert int(fixed[:-2]) > 4.5
    doc = yaml.safe_load(manifest)
    assert doc["kind"] == "RuntimeClass" and doc["handler"] == "fa"
    assert doc["metadata"]["name"] == "fa" and doc["overhead"]["podFixed"]["memory"] == fixed
    assert runtimeclass.handler("cri:crun") == "crun" and runtimeclass.handler("cri") == "runc"
    assert (
        runtimeclass.table(
            as_frame([x for x in samples if x.metric != "density.pod_overhead"]), "d"
        )
        is None
    )
