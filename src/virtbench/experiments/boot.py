"""`boot`: how long an instance takes to come up, and to go away.

Timeline of one measurement (host monotonic clock):
  spawn              the launch call is issued
  spawn_to_started   the launcher returned (detached instances: the runtime's "run -d")
  spawn_to_first_output  VMs: the guest's first byte on the serial console
  phase_*            a pod's launch (`cri`), call by call: its sandbox (pause process and
                     network), its container's create, its start
  spawn_to_ready     the `sleep` workload's probe datagram reached the host listener
  spawn_to_exit      the `hello` workload's main process exited (foreground launch)
  teardown           stopping and deleting a `sleep` instance took this long

Each repetition measures every runtime in turn, starting with a different runtime
each time so slow drift on the host does not favour one. Warm-ups are stored,
flagged, and left out of summaries.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import Field

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session, total_runs
from virtbench.experiments.trial import Trial
from virtbench.figure import MONO, OPEN, SPAWN, boot_metric
from virtbench.runtimes.base import Instance, InstanceSpec, Runtime
from virtbench.tables.base import (
    RepeatedExperiment,
)

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "workload")

# The figures it records (virtbench.figure).
SPAWN_TO_EXIT = boot_metric(
    "boot.spawn_to_exit",
    SPAWN + "the instance's main process exited (`hello`, a foreground launch)" + MONO,
    label="time to run and exit",
)
SPAWN_TO_READY = boot_metric(
    "boot.spawn_to_ready",
    SPAWN + "the `sleep` workload's ready datagram reached the host's probe listener" + MONO,
    label="time to ready",
)
SPAWN_TO_STARTED = boot_metric(
    "boot.spawn_to_started",
    SPAWN + 'the launcher returned (a detached instance\'s "run -d")' + MONO,
    headline=False,
    side=True,
    label="launch call",
)
SPAWN_TO_FIRST_OUTPUT = boot_metric(
    "boot.spawn_to_first_output",
    SPAWN + "the guest's first byte on its serial console (VMs)" + MONO,
    headline=False,
    side=True,
    label="time to first output",
)
PHASE_POD_SANDBOX = boot_metric(
    "boot.phase_pod_sandbox",
    SPAWN + "the pod's sandbox ran: its pause process and its network (the CRI's "
    "RunPodSandbox; `cri` runtimes)" + MONO,
    headline=False,
    side=True,
    label="pod sandbox",
)
PHASE_CONTAINER_CREATE = boot_metric(
    "boot.phase_container_create",
    "the pod's sandbox ran -> its container was created (CreateContainer; `cri` runtimes)" + MONO,
    headline=False,
    side=True,
    label="container create",
)
PHASE_CONTAINER_START = boot_metric(
    "boot.phase_container_start",
    "the container was created -> it started (StartContainer; `cri` runtimes)" + MONO,
    headline=False,
    side=True,
    label="container start",
)
# kept out of the CV target: a side figure, recorded after a failed boot too
TEARDOWN = boot_metric(
    "boot.teardown",
    "stop called -> the instance and all it left on the host removed" + MONO,
    repeated=False,
    headline=False,
    side=True,
    label="teardown",
)
ANY = boot_metric("boot.*", "a boot figure not declared here", label="boot {}", **OPEN)
METRICS = (
    SPAWN_TO_EXIT,
    SPAWN_TO_READY,
    SPAWN_TO_STARTED,
    SPAWN_TO_FIRST_OUTPUT,
    PHASE_POD_SANDBOX,
    PHASE_CONTAINER_CREATE,
    PHASE_CONTAINER_START,
    TEARDOWN,
    ANY,
)


class BootExperiment(RepeatedExperiment):
    """Time to boot: spawn -> exit for `hello`, spawn -> ready for `sleep`; then teardown."""

    type: Literal["boot"]
    workloads: list[Literal["hello", "sleep"]] = Field(default=["hello", "sleep"], min_length=1)
    runs: int = Field(default=10, ge=1, le=100_000)
    warmups: int = Field(default=2, ge=0, le=1000)
    benchmark_times: int = Field(default=1, ge=1, le=10_000)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        """What this experiment's instances run (for runtimes that run only some)."""
        return list(self.workloads)


def _ms(ns: int) -> float:
    return ns / 1e6


# the launch phases a driver may mark (Instance.phases), and the figure of each
PHASES = {
    "pod_sandbox": PHASE_POD_SANDBOX,
    "container_create": PHASE_CONTAINER_CREATE,
    "container_start": PHASE_CONTAINER_START,
}


def _phases(s: Session, inst: Instance, base: dict) -> None:
    """The launch's phases its driver marked, each from the end of the one before."""
    start = inst.t_spawn_ns
    for name, end in inst.phases:
        value = _ms(end - start)
        s.record(PHASES[name].sample(value, **base))
        start = end


def _first_output(s: Session, inst: Instance, base: dict) -> None:
    """VMs: spawn -> the first byte of the guest's serial console, when there was one."""
    t = inst.console.t_first_output_ns
    if t is not None:
        value = _ms(t - inst.t_spawn_ns)
        s.record(SPAWN_TO_FIRST_OUTPUT.sample(value, **base))


def measure_once(
    s: Session,
    trial: Trial,
    timeout: float,
    experiment: str = "boot",
    params: dict | None = None,
    **labels: int,
) -> None:
    """One boot of `trial`'s workload under its runtime; records its samples (or a
    failed one). `experiment`, `params` (added to the instance options) and `labels`
    (e.g. `background`) let scalability reuse it."""
    runtime = trial.runtime
    rt = s.runtimes[runtime]
    wl = workloads.get(trial.workload)
    assert wl.argv is not None, f"{trial.workload} runs no argv of its own"
    spec = s.instance_spec(runtime, wl.argv)
    merged = {**s.params(runtime), **(params or {})}
    base = dict(
        experiment=experiment,
        runtime=runtime,
        workload=trial.workload,
        repetition=trial.repetition,
        warmup=trial.warmup,
        params=merged,
        **labels,
    )
    timed = s.timed(experiment, runtime, merged)  # quiet host, recorded in params
    launch = Launch(rt, spec, timed, timeout)
    if wl.ends == "exit":
        to_exit(s, launch, base)
    else:
        to_ready(s, launch, base)


@dataclasses.dataclass(frozen=True)
class Launch:
    """One timed boot: the runtime that starts it, the instance's spec, the timed
    context (`Session.timed`) it starts within, and how long it may take (s)."""

    rt: Runtime
    spec: InstanceSpec
    timed: Any
    timeout: float


def to_exit(s: Session, launch: Launch, base: dict) -> None:
    """A foreground boot: spawn -> the instance's exit (its status must be 0)."""
    metric = SPAWN_TO_EXIT
    rt = launch.rt
    try:
        with launch.timed:
            inst = rt.run_to_exit(launch.spec, launch.timeout)
    except InstanceError as exc:
        s.record(metric.sample(None, error=str(exc), **base))
        raise
    try:
        if inst.exit_code != 0:
            err = f"exit status {inst.exit_code}: {inst.log_tail()}"
            s.record(metric.sample(None, error=err, **base))
            raise InstanceError(f"{base['runtime']}: {base['workload']} {err}")
        assert inst.t_exit_ns is not None
        value = _ms(inst.t_exit_ns - inst.t_spawn_ns)
        _first_output(s, inst, base)
        _phases(s, inst, base)
        s.record(metric.sample(value, **base))
    finally:
        rt.stop(inst)


def to_ready(s: Session, launch: Launch, base: dict) -> None:
    """A detached boot: spawn -> the launcher returned, and -> the ready datagram; then
    its teardown."""
    metric = SPAWN_TO_READY
    rt = launch.rt
    inst = None
    try:
        with launch.timed:
            inst = rt.start(launch.spec, detach=True)
            t_ready = rt.wait_ready(inst, launch.timeout)
        s.record(SPAWN_TO_STARTED.sample(_ms(inst.t_started_ns - inst.t_spawn_ns), **base))
        _first_output(s, inst, base)
        _phases(s, inst, base)
        s.record(metric.sample(_ms(t_ready - inst.t_spawn_ns), **base))
    except InstanceError as exc:
        s.record(metric.sample(None, error=str(exc), **base))
        raise
    finally:
        if inst is not None:
            seconds = rt.stop(inst)
            s.record(TEARDOWN.sample(seconds * 1e3, **base))


def run(s: Session, cfg: BootExperiment) -> None:
    failures = Failures(s, "boot")
    for rep, warmup, order in s.repetitions("boot", cfg):
        for runtime in order:
            for workload in cfg.workloads:
                unit = {"runtime": runtime, "repetition": rep, "workload": workload}
                if not s.pending("boot", warmup, **unit):
                    continue
                for _ in range(cfg.benchmark_times):
                    if failures.skip(runtime):
                        break
                    with failures.attempt(runtime):
                        measure_once(s, Trial(runtime, workload, rep, warmup), cfg.timeout_s)
                s.finished("boot", warmup, **unit)
        kind, total = ("warm-up", cfg.warmups) if warmup else ("repetition", total_runs(cfg))
        s.say(f"boot: {kind} {rep + 1}/{total} done")


def estimate(cfg: BootExperiment, cost: Costs) -> Estimate:
    """(warmups + runs) x workloads x benchmark_times timed launches."""
    n = (cfg.warmups + cfg.runs) * len(cfg.workloads) * cfg.benchmark_times
    return Estimate(n, n * cost.timed_launch(), f"{n} timed launches")


TYPE = ExperimentType(
    "boot",
    BootExperiment,
    run,
    UNIT,
    order=10,
    estimate=estimate,
    metrics=METRICS,
)
