"""A run's sweeps (before it starts, and at its end) ask only the engines its runtimes
stand on; `virtbench clean` asks every installed runtime's."""

from __future__ import annotations

from typing import Any

from tests.fakehost import FakeHarness
from tests.fakeruntime import install, tmp_paths
from tests.faketruth import RuntimeTruth, Truth

from virtbench.host import cgroups
from virtbench.run import cleanup, runner
from virtbench.run.harness import Surroundings
from virtbench.spec import flags as spec_flags
from virtbench.spec.resolved import resolve
from virtbench.store import Store


class _Asked(FakeHarness):
    """The fake host's harness, noting the engines each sweep asks of."""

    asked: list[Any]

    def leftovers(self, *args: Any, **kwargs: Any) -> list[cleanup.Leftover]:
        self.asked.append(kwargs.get("engines"))
        return super().leftovers(*args, **kwargs)


def test_a_run_sweeps_only_the_engines_its_runtimes_stand_on(tmp_path):
    """A run on two of the three runtimes installed: its sweep at the start and the one at
    its end each ask those two, never the third."""
    world = install(Truth({"fa": RuntimeTruth(), "fb": RuntimeTruth(), "fc": RuntimeTruth()}))
    boot = {"type": "boot", "runs": 2, "warmups": 0, "workloads": ["hello"]}
    raw = {"name": "s", "runtimes": ["fa", "fb"], "instance": {"network": "none"}}
    spec = spec_flags.with_overrides(
        {**raw, "experiment": [boot]}, "s", None, {}, drivers=world.drivers
    )
    store = Store(tmp_path / "results")
    harness = _Asked(world, tmp_path)
    harness.asked = []
    where = Surroundings(store, tmp_paths(tmp_path), lambda m: None, harness)
    _, status = runner.execute(resolve(spec), where)
    store.close()
    assert status == "completed"
    assert harness.asked == [frozenset({"fa", "fb"})] * 2


class _Engine:
    """A runtime whose engine holds one object of run zz0001's, and notes that it was asked."""

    asked: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def list_objects(self) -> list[tuple[str, str]]:
        _Engine.asked.append(self.name)
        return [("instance", f"vb-zz0001-{self.name}")]


def test_scan_asks_the_engines_named_or_every_one(tmp_path, monkeypatch):
    """scan(engines=...) lists those runtimes' engines alone; without it, every one."""
    engines = {n: _Engine(n) for n in ("one", "two", "three")}
    monkeypatch.setattr(cleanup.runtimes, "names", lambda: list(engines))
    monkeypatch.setattr(cleanup.runtimes, "get", lambda n: engines[n])
    paths, layout = tmp_paths(tmp_path), cgroups.Layout(0, {}, None)
    _Engine.asked = []
    found = cleanup.scan(paths, run_id="zz0001", layout=layout, engines={"two"})
    assert _Engine.asked == ["two"]
    assert [(x.kind, x.name, x.detail) for x in found] == [("instance", "vb-zz0001-two", "two")]
    _Engine.asked = []
    found = cleanup.scan(paths, run_id="zz0001", layout=layout)
    assert _Engine.asked == ["one", "two", "three"]
    assert sorted(x.detail for x in found) == ["one", "three", "two"]
