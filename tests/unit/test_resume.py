"""`run --resume` on the fake runtime: an interrupted run's samples are never lost, a
resume that cannot measure again ends failed, and the run's lock keeps runs, resumes
and cleans apart."""

from __future__ import annotations

import pytest
from tests.fakehost import FakeHarness
from tests.fakeruntime import install, tmp_paths
from tests.faketruth import RuntimeTruth, Truth

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import state
from virtbench.run import runner
from virtbench.run.harness import Surroundings
from virtbench.spec import parse
from virtbench.spec.resolved import resolve
from virtbench.store import Sample, Store

SPEC = {
    "name": "resume",
    "runtimes": ["fa"],
    "order_seed": 3,
    "experiment": [
        {"type": "density", "instances": 6, "instances_per_benchmark": 3, "runs": 2},
    ],
}


def rows(samples: list[Sample]) -> set[tuple]:
    return {(s.metric, s.repetition, s.background, s.value, s.t) for s in samples}


def test_a_resume_keeps_every_sample_until_it_is_measured_again(tmp_path, monkeypatch):
    """Interrupted in its second pile-up, then resumed while the runtime fails every
    start: the resume ends failed and every sample from before stays. A resume that
    works then measures that pile-up again whole, and only then do its earlier samples
    go; the first pile-up's are the very same rows throughout."""
    world = install(Truth({"fa": RuntimeTruth()}, seed=3))
    spec = resolve(parse(SPEC, "test", world.drivers))
    store, paths = Store(tmp_path / "results"), tmp_paths(tmp_path)
    harness, said = FakeHarness(world, tmp_path), []

    def interrupt(n: int) -> None:
        if n == 9:  # the third instance of the second pile-up
            raise KeyboardInterrupt

    world.fault = interrupt
    with pytest.raises(KeyboardInterrupt):
        runner.execute(
            spec, Surroundings(store, paths, said.append, harness), runner.Invocation(["run"])
        )
    run_id = store.runs()[-1].id
    assert store.run(run_id).status == "interrupted" and world.running == {}
    before = [s for s in store.samples(run_id) if s.experiment == "density"]
    first = rows([s for s in before if s.repetition == 0])
    assert first and [s for s in before if s.repetition == 1]  # the half pile-up is stored

    def broken(n: int) -> None:
        raise InstanceError(f"fake: start {n} refused")

    world.fault = broken
    _, status = runner.execute(
        spec,
        Surroundings(store, paths, said.append, harness),
        runner.Invocation(["run", "--resume"], resume=store.run(run_id)),
    )
    assert status == "failed" and store.run(run_id).status == "failed"
    kept = [s for s in store.samples(run_id) if s.experiment == "density"]
    assert rows(before) <= rows(kept)  # nothing measured before was lost
    messages = " ".join(m for _, _, m in store.events(run_id))
    assert "failed again" in messages and "were not measured again" in messages

    world.fault = None
    _, status = runner.execute(
        spec,
        Surroundings(store, paths, said.append, harness),
        runner.Invocation(["run", "--resume"], resume=store.run(run_id)),
    )
    assert status == "completed" and store.run(run_id).status == "completed"
    final = [s for s in store.samples(run_id) if s.experiment == "density"]
    assert rows([s for s in final if s.repetition == 0]) == first
    second = [s for s in final if s.repetition == 1]
    assert not rows(second) & rows(before)  # measured again whole; the cut-short went
    assert [s.value for s in final if s.metric == "density.reached"] == [6.0, 6.0]
    assert not [s for s in final if s.error]  # the failed attempt's samples went with it
    assert world.running == {}


def test_a_run_whose_lock_is_held_is_neither_resumed_nor_cleaned(tmp_path, monkeypatch):
    """While another process holds a run's lock (a clean removing its objects, or the run
    itself), a resume refuses with one line, and the run reads as running, not crashed."""
    world = install(Truth({"fa": RuntimeTruth()}, seed=4))
    store, paths = Store(tmp_path / "results", alive=state.is_alive), tmp_paths(tmp_path)
    store.create_run(
        "held01", "resume", ["run"], parse(SPEC, "test", world.drivers).model_dump(mode="json")
    )
    assert store.run("held01").status == "crashed"  # nobody holds its lock
    with state.holding("held01") as held:
        assert held and state.is_alive("held01")
        assert store.run("held01").status == "running"
        harness = FakeHarness(world, tmp_path)
        with pytest.raises(VirtbenchError, match="in use by another virtbench"):
            plan = resolve(parse(SPEC, "test", world.drivers))
            runner.execute(
                plan,
                Surroundings(store, paths, print, harness),
                runner.Invocation(["run", "--resume"], resume=store.run("held01")),
            )
        with state.holding("held01") as again:
            assert not again  # a second holder (a clean) is refused too
    assert not state.is_alive("held01") and not state.lock_path("held01").exists()
