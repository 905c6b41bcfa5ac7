"""A pod's overhead (`cri` runtimes) recovered on the fake runtime's injected truth, and
the RuntimeClass the report writes from it."""

from __future__ import annotations

import math

import pytest
import yaml
from tests.fakeruntime import fake_session, run, values
from tests.faketruth import RuntimeTruth, Truth
from tests.recovered import covered, median_case

from virtbench.report import runtimeclass
from virtbench.store.frame import as_frame


def test_density_recovers_a_pods_overhead_beyond_its_container(tmp_path):
    """A pod's sandbox cost (the fake's injected overhead, as a `cri` runtime's pause
    sandbox and shim) is each pod's `density.pod_overhead`: its median's CI holds it; the
    CPU it runs while idle (injected exactly) is each pod's `density.pod_idle_cpu` once
    all are up."""
    truth = Truth(
        {
            "fa": RuntimeTruth(pss_mib=3.0, overhead_mib=4.5, overhead_mcpu=0.8, idle_mcpu=1.5),
            "fb": RuntimeTruth(pss_mib=3.0, overhead_mib=12.0, overhead_mcpu=40.0, idle_mcpu=90),
        },
        seed=5,
    )
    with fake_session(tmp_path, truth, ["fa", "fb"], DENSITY) as (s, world):
        samples = run(s)
    assert world.running == {}
    cases = [
        median_case(
            f"{rt} pod overhead", t.overhead_mib, values(samples, "density.pod_overhead", rt)
        )
        for rt, t in truth.runtimes.items()
    ]
    covered(cases, tolerance=0.05)
    for rt, t in truth.runtimes.items():
        pods = [x for x in samples if x.metric == "density.pod_idle_cpu" and x.runtime == rt]
        assert [x.background for x in pods] == list(range(20))  # each pod, once all are up
        for x in pods:  # the window read on the host's clock, the counters on the fake's
            assert x.params["instances_running"] == 20 and x.params["window_s"] >= 0.2
            assert x.value == pytest.approx(t.overhead_mcpu, rel=0.02), x
        whole = [x for x in samples if x.metric == "density.idle_cpu" and x.runtime == rt]
        assert [x.background for x in whole] == list(range(20))  # every instance's, too
        assert all(x.value == pytest.approx(t.idle_mcpu, rel=0.02) for x in whole), whole


DENSITY = {
    "type": "density",
    "instances": 20,
    "instances_per_benchmark": 10,
    "runs": 1,
    "idle_cpu_s": 0.2,
}


def test_a_runtimeclass_is_written_from_the_pod_overhead_measured(tmp_path):
    """podFixed is the pod overhead's and idle CPU's CI upper ends plus 10%, rounded up
    to a MiB and a millicore, above the injected overhead; the manifest is YAML a cluster
    takes as a RuntimeClass; a handler's shipped podFixed is named beside it."""
    truth = Truth({"fa": RuntimeTruth(overhead_mib=4.5, overhead_mcpu=2.5)}, seed=7)
    with fake_session(tmp_path, truth, ["fa"], DENSITY) as (s, _world):
        samples = run(s)
    t = runtimeclass.table(as_frame(samples), "density")
    assert t is not None and t.row_count == 1
    cells = [next(iter(c.cells)) for c in t.columns]
    runtime, memory, cpu, fixed, shipped = cells
    (doc,) = manifests(t)
    high = float(memory.split("(")[1].split("-")[1].rstrip(")"))
    cpu_high = float(cpu.split("(")[1].split("-")[1].rstrip(")"))
    mib, cpu_m = math.ceil(high * 1.1), math.ceil(cpu_high * 1.1)
    assert runtime == "fa" and fixed == f"{mib}Mi, {cpu_m}m" and shipped == "none"
    assert mib > 4.5 and cpu_m >= 3
    assert doc["kind"] == "RuntimeClass" and doc["handler"] == "fa"
    assert doc["metadata"]["name"] == "fa"
    assert doc["overhead"]["podFixed"] == {"memory": f"{mib}Mi", "cpu": f"{cpu_m}m"}
    assert runtimeclass.handler("cri:crun") == "crun" and runtimeclass.handler("cri") == "runc"
    assert runtimeclass.SHIPPED["kata-qemu"] == ("160Mi", "250m")
    without_cpu = as_frame([x for x in samples if x.metric != "density.pod_idle_cpu"])
    t = runtimeclass.table(without_cpu, "d")
    assert t is not None and "not measured" in t.columns[2].cells
    assert "cpu" not in manifests(t)[0]["overhead"]["podFixed"]
    assert (
        runtimeclass.table(
            as_frame([x for x in samples if x.metric != "density.pod_overhead"]), "d"
        )
        is None
    )


def manifests(t) -> list[dict]:
    """The RuntimeClasses under the table, as YAML reads them (the terminal wraps the
    caption at any width: the manifests read the same wrapped)."""
    import textwrap

    text = str(t.caption).split("(`kubectl apply -f`):\n", 1)[1]
    wrapped = "\n".join(textwrap.fill(line, 40) for line in text.splitlines())
    docs = list(yaml.safe_load_all(text))
    assert list(yaml.safe_load_all(wrapped)) == docs
    return docs
