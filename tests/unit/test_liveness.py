"""`density` with `liveness_probes`: after the pile-up, random instances are asked to run
a command; every answer is stored, and an instance that stopped answering is a failed
sample with its reason (the fake runtime's injected truth)."""

from __future__ import annotations

from tests.fakeruntime import fake_session
from tests.faketruth import RuntimeTruth, Truth

from virtbench import experiments

EXP = {
    "type": "density",
    "instances": 12,
    "instances_per_benchmark": 4,
    "runs": 1,
    "memory_settle_s": 0,
}


def density(tmp_path, truth, runtimes, **extra):
    with fake_session(tmp_path, truth, runtimes, {**EXP, **extra}) as (s, world):
        experiments.get("density").run(s, s.spec.experiment[0])
        samples = s.store.samples(s.run_id)
        events = [message for _, _, message in s.store.events(s.run_id)]
    assert world.running == {}  # every instance stopped after the probes
    return samples, events


def test_every_instance_of_the_pile_answers_when_all_are_probed(tmp_path):
    truth = Truth({"fa": RuntimeTruth(exec_ms=3.0)}, seed=1)
    samples, _ = density(tmp_path, truth, ["fa"], liveness_probes=12)
    probes = [x for x in samples if x.metric == "density.liveness"]
    assert len(probes) == 12 and not [x for x in probes if x.error]
    assert all(abs(x.value - 3.0) < 0.01 and x.background == 12 for x in probes)
    assert sorted(x.params["instance_index"] for x in probes) == list(range(12))
    answered = [x for x in samples if x.metric == "density.answered"]
    assert [(x.value, x.params["probed"]) for x in answered] == [(12.0, 12)]


def test_an_instance_that_stopped_answering_is_a_failed_liveness_sample(tmp_path):
    # the 5th instance started stops answering
    truth = Truth({"fa": RuntimeTruth(exec_ms=3.0, mute=(5,))}, seed=1)
    samples, events = density(tmp_path, truth, ["fa"], liveness_probes=12)
    failed = [x for x in samples if x.metric == "density.liveness" and x.error]
    assert len(failed) == 1 and failed[0].params["instance_index"] == 4
    assert "no answer in" in failed[0].error and failed[0].value is None
    answered = [x.value for x in samples if x.metric == "density.answered"]
    assert answered == [11.0]
    assert any("1 of 12 probed instances did not answer (instance 5:" in e for e in events)


def test_a_few_probes_are_drawn_at_random_and_a_runtime_without_exec_says_so(tmp_path):
    truth = Truth({"fa": RuntimeTruth(), "fn": RuntimeTruth(exec_ms=None)}, seed=2)
    samples, _ = density(tmp_path, truth, ["fa", "fn"], liveness_probes=4)
    probed = sorted(
        x.params["instance_index"]
        for x in samples
        if x.metric == "density.liveness" and x.runtime == "fa"
    )
    assert len(probed) == 4 and len(set(probed)) == 4 and probed != [0, 1, 2, 3]
    theirs = [
        x
        for x in samples
        if x.runtime == "fn" and x.metric.startswith(("density.liveness", "density.answered"))
    ]
    assert len(theirs) == 1 and theirs[0].metric == "density.answered"
    assert theirs[0].error == "fn cannot answer a command: fake: no exec"
    # without liveness_probes, nothing is asked
    samples, _ = density(tmp_path / "off", truth, ["fa"])
    assert not [x for x in samples if x.metric.startswith(("density.liveness", "density.answered"))]
