"""A fake runtime driver with known truth (tests/faketruth.py), for tests only.

Handed to a test's specs and runs by `install` (a registry of drivers where the test's
labels stand for it), never offered to users. Its instances run nothing: a launch draws
its duration from the Truth and sets the instance's timestamps from it (`_wait` sets
t_exit_ns, `wait_ready` returns the ready time) instead of sleeping for it; a measuring
worker (`sqlite`) gets the figure it would print written to its console log, which
virtbench parses as it parses the real program's. Memory, stops that have not settled and
attackers act through the World, which the fake host (Session.host) reads, so virtbench's
experiments, the quiet wait and the runner run unchanged: what they report can be checked
against what was injected.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from tests.fakecontrols import FakeExec, FakePause, FakeSnapshot
from tests.fakehost import FakeHarness
from tests.faketruth import Truth, World, classify

from virtbench import experiments, metrics, runtimes
from virtbench.errors import InstanceError
from virtbench.experiments.session import Session
from virtbench.host.state import RunState
from virtbench.measure.probe import Heartbeats
from virtbench.measure.quiet import Quiet
from virtbench.paths import Paths
from virtbench.runtimes.base import Availability, Family, Instance, Runtime, RuntimeContext
from virtbench.spec import Spec, parse
from virtbench.spec.resolved import resolve
from virtbench.store import Sample, Store

RUN_ID = "fake01"


class FakeObserve(runtimes.observe.Observe):
    """What the host reads of a fake instance: the World's processes, a ready time drawn
    from the truth at launch, and whether the label's last stop has settled."""

    rt: FakeRuntime

    def wait_ready(self, inst: Instance, timeout: float, abort: Any = None) -> int:
        world = self.rt.world
        if inst.name not in world.running:
            raise InstanceError(f"{self.rt.label}: {inst.name} is not running")
        if inst.spec.argv[3:4] == ("--beat",):  # the beat workload: two heartbeats so far
            inst.own.token = f"{abs(hash(inst.name)):016x}"[:16]
            for _ in range(2):
                self.rt._beat(inst, inst.own.done_ns)
        return inst.own.done_ns

    def settled(self) -> bool:
        return self.rt.world.settled(self.rt.label)

    def exit_reason(self, inst: Instance) -> str | None:
        return None if inst.name in self.rt.world.running else "exited with status 0"

    def pids(self, inst: Instance) -> list[int]:
        i = self.rt.world.running.get(inst.name)
        return [] if i is None else [i.pid]

    def tasks(self, inst: Instance) -> tuple[int | None, int]:
        return (1 if inst.name in self.rt.world.running else None), 0


class FakeMemory(runtimes.observe.Memory):
    """A fake instance's memory, as the World holds it."""

    rt: FakeRuntime

    def pss_bytes(self, inst: Instance) -> int | None:
        i = self.rt.world.running.get(inst.name)
        return None if i is None else i.pss

    def cgroup_bytes(self, inst: Instance) -> int | None:
        i = self.rt.world.running.get(inst.name)
        return None if i is None else (i.pss or 0) + i.kernel

    def overhead_bytes(self, inst: Instance) -> int | None:
        i = self.rt.world.running.get(inst.name)
        return None if i is None else i.overhead

    def cpu_counters(self, inst: Instance, pids: list[int]) -> dict[str, int] | None:
        """Its CPU time: exactly `idle_mcpu` since it started."""
        i = self.rt.world.running.get(inst.name)
        if i is None:
            return None
        return {"cgroup": round((time.monotonic_ns() - i.t0_ns) * i.idle_mcpu / 1000)}

    def overhead_cpu(self, inst: Instance) -> dict[str, int] | None:
        """Its overhead's CPU time: exactly `overhead_mcpu` since it started."""
        i = self.rt.world.running.get(inst.name)
        if i is None or i.overhead_mcpu is None:
            return None
        return {"sandbox": round((time.monotonic_ns() - i.t0_ns) * i.overhead_mcpu / 1000)}

    def cgroup_parts(self, inst: Instance) -> dict[str, int] | None:
        """Its cgroup's memory by part: the process's as anonymous memory, and its kernel
        memory (no page cache)."""
        i = self.rt.world.running.get(inst.name)
        return None if i is None else {"anon": i.pss or 0, "file": 0, "kernel": i.kernel}


@dataclass
class FakeState:
    """What the fake driver keeps of an instance: when its drawn launch ends, its
    heartbeats' token and count, its pause's thaw, and how many copies were restored
    from it."""

    done_ns: int = 0
    token: str = ""
    seq: int = 0
    thawed: threading.Event | None = None
    copies: int = 0
    cold: bool = False  # its last restore read its image from the disk


class FakeRuntime(Runtime):
    """Every label registered by `install` is this driver; its truth is the label's."""

    name = "fake"
    family = Family.CONTAINER
    description = "test-only: instances that follow an injected truth"
    networks = ("none", "host")  # no bridge: nothing may touch the host's network
    Exec = FakeExec
    Pause = FakePause
    Snapshot = FakeSnapshot
    Memory = FakeMemory
    Observe = FakeObserve
    State = FakeState
    world: World  # the test's: `install` binds a subclass of this class to it

    @property
    def truth(self) -> Any:
        return self.world.of(self.label)

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        return Availability(True, "fake 1.0")

    @classmethod
    def cannot_run(cls, workload: str, options: BaseModel | None = None) -> str | None:
        if workload in ("hello", "sleep", "beat", "sqlite") or workload.startswith("attacker "):
            return None
        return "the fake runtime runs hello, sleep, beat, sqlite and attackers only"

    _lock = threading.Lock()  # a burst launches from many threads: one World change at a time

    def _start(self, inst: Instance, detach: bool) -> None:
        with self._lock:
            self._start_locked(inst, detach)

    def _start_locked(self, inst: Instance, detach: bool) -> None:
        try:
            kind, what = classify(inst.argv)
        except ValueError as exc:
            raise InstanceError(str(exc)) from None
        needs = self.world.of(self.label).needs_mib
        if inst.spec.memory_mib is not None and inst.spec.memory_mib < needs:
            raise InstanceError(f"fake: out of memory in {inst.spec.memory_mib} MiB")
        if detach == (kind == "exit"):
            raise InstanceError(f"fake: {what} cannot run {'detached' if detach else 'attached'}")
        ms = self.world.duration_ms(self.label, kind, inst.t_spawn_ns)
        inst.own.done_ns = inst.t_spawn_ns + round(ms * 1e6)
        if kind == "exit":
            if what == "sqlite":  # the figure it prints is taken now, beside what runs now
                self._print_sqlite(inst)
            return
        self.world.add(inst.name, self.label, kind, what, inst.spec.cpus)

    def _print_sqlite(self, inst: Instance) -> None:
        """What vb-sqlite prints (workloads/sqlite.py parses it), with the injected figure."""
        rows, per_txn = int(inst.argv[1]), int(inst.argv[2])
        ips = self.world.figure(self.label, inst.spec.cpus, inst.spec.memory_mib)
        line = (
            f"sqlite rows={rows} per_txn={per_txn} dir=/tmp seconds={rows / ips:.6f} "
            f"inserts_per_s={ips:.4f}\n"
        )
        inst.log_path.write_text(line)

    def _wait(self, inst: Instance, timeout: float) -> int:
        inst.t_exit_ns = inst.own.done_ns
        return 0

    def _beat(
        self, inst: Instance, t_ns: int, token: str | None = None, touched_ns: int = 0
    ) -> None:
        """A heartbeat of `inst` arriving at `t_ns` (its own token unless told), carrying
        a touch time (`touched_ns`) where it has one."""
        inst.own.seq += 1
        self.ctx.probe.beat(inst.name, token or inst.own.token, inst.own.seq, t_ns, touched_ns)

    def _stop(self, inst: Instance) -> None:
        self.world.stop(inst.name, self.label)

    def image_size(self) -> tuple[int, str] | None:
        return 4096, "fake"


class FakeProbe(Heartbeats):
    """The probe listener's address and its heartbeats, without its sockets: fake
    instances beat by calling `beat` with the arrival time the truth says."""

    def __init__(self, unix_dir: Path) -> None:
        super().__init__()
        self.port, self.unix_dir, self.unix_name = 0, unix_dir, "probe.sock"


def install(truth: Truth) -> World:
    """The World the fake's instances live in, with the drivers a test hands its specs
    (`parse(..., world.drivers)`) and so its runs: the installed ones, every label of
    `truth` standing for the fake runtime bound to this World."""
    world = World(truth)
    bound = type("FakeRuntime", (FakeRuntime,), {"world": world})
    world.drivers = runtimes.installed().replaced(dict.fromkeys(truth.runtimes, bound))
    return world


def tmp_paths(root: Path) -> Paths:
    """Every host location of a run under `root`."""
    return Paths(
        state=root / "state", cache=root / "cache", guest_src=root / "guest", data=root / "data"
    )


@contextlib.contextmanager
def fake_session(
    tmp_path: Path,
    truth: Truth,
    runtimes_: list[str],
    experiment: dict[str, Any] | list[dict[str, Any]],
    **spec: Any,
) -> Iterator[tuple[Session, World]]:
    """A Session on the fake runtime, as runner.execute builds one (a fake host through
    the same seams), but with a fast quiet wait (1 ms window) and no run around it."""
    world = install(truth)
    tables = experiment if isinstance(experiment, list) else [experiment]
    parsed: Spec = parse(
        {"name": "truth", "runtimes": runtimes_, "experiment": tables, **spec},
        "test",
        world.drivers,
    )
    plan = resolve(parsed)
    store = Store(tmp_path / "results")
    store.create_run(RUN_ID, parsed.name, [], parsed.model_dump(mode="json"))
    paths = tmp_paths(tmp_path)
    state = RunState(paths.run_dir(RUN_ID)).open()
    harness = FakeHarness(world, tmp_path)
    artifact = harness.artifact(parsed.experiment, paths)
    probe: Any = FakeProbe(tmp_path / "probe")
    ctx = RuntimeContext(RUN_ID, state, paths, harness.layout(), probe=probe, rootfs=artifact.path)
    drivers = {label: r.create(ctx) for label, r in plan.runtimes.items()}
    s = Session(
        RUN_ID,
        parsed,
        store,
        artifact,
        probe,
        drivers,
        metrics.is_repeated,
        say=lambda m: None,
        host=harness.host,
        instances=plan.instances(),
    )
    s.quiet = Quiet(
        running=s.host.running,
        settled=lambda: all(d.settled() for d in drivers.values()),
        enabled=parsed.quiescence,
        window_s=0.001,
        step_s=0.0005,
    )
    try:
        yield s, world
    finally:
        for d in drivers.values():
            d.close()
        state.close()
        store.close()


def run(s: Session) -> list[Sample]:
    """Every experiment of the session's spec (check, then run), as the runner does; the
    run's successful, non-warm-up samples."""
    for exp in s.spec.experiment:
        kind = experiments.get(exp.type)
        if kind.check is not None:
            kind.check(s, exp)
        kind.run(s, exp)
    return [x for x in s.store.samples(s.run_id) if not x.warmup and not x.error]


def values(samples: list[Sample], metric: str, runtime: str, **labels: Any) -> list[float]:
    """The values of `metric` on `runtime` whose sample fields match `labels`."""
    return [
        x.value
        for x in samples
        if x.metric == metric
        and x.runtime == runtime
        and x.value is not None
        and all(getattr(x, k) == v for k, v in labels.items())
    ]
