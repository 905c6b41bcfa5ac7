"""`isolation`: how much a misbehaving neighbour slows a well-behaved instance (S1).

The worker's instance is pinned to one CPU (`worker_cpu`, default the last online one).
Each repetition, for each runtime (rotated as in boot), the worker is measured under
every condition, in an order rotated by repetition so slow drift favours none:
  baseline             no attacker                      (attacker = "", placement = "")
  <attacker>/<place>   attacker instances of the same runtime (or of `attacker_runtime`:
                       an image that serves one program cannot run an attacker), pinned
                       as the placement
                       says (measure/topology.py), each started and waited for until its
                       ready datagram arrives, then `settle_s` before the worker runs
Every figure the worker yields is stored with its attacker and placement labels. After
each attacked measurement the attackers must still be running (a neighbour that died
early would flatter the runtime); if one is not, the measurement is stored as failed with
its console output. Attackers are stopped after every measurement. Placements the host
cannot offer, or that would pin the attackers exactly as an earlier placement does (all-other
on a 2-CPU host is other-cpu), are skipped, with the reason stored as an event; so is a
memory-holding attacker (memory, mempressure, disk) whose instances at a placement would
together hold more than half of MemAvailable (all-other on a host with many CPUs).

Slowdown (report/tables.py) compares the medians of attacked and baseline measurements of
the workload's primary metric, in the direction that metric improves:
  slowdown = worse / better - 1, with a bootstrap 95% CI; positive means slower.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from virtbench.errors import InstanceError, SpecError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session, total_runs
from virtbench.experiments.worker import Worker, check_reachable
from virtbench.measure.topology import PLACEMENTS, Topology
from virtbench.metrics.model import Metric
from virtbench.runtimes.base import Instance, Runtime
from virtbench.spec.base import (
    RepeatedExperiment,
    WorkerExperiment,
    check_params,
    measuring_worker,
)
from virtbench.workloads import attackers
from virtbench.workloads.attackers import ATTACKERS, S1_ATTACKERS

Condition = tuple[str, str, list[int]]  # attacker, placement, attacker CPUs
# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "attacker", "placement")

# The figures it records (metrics/model.py).
# fmt: off
METRICS: tuple[Metric, ...] = (
    # the attackers' own cost, not the worker's performance: not scored across runtimes
    Metric("isolation.attacker_tasks_peak", "tasks", "lower", "host tasks (threads included) "
           "of all the attackers' cgroups at their peak (pids.peak), summed", resolution=1.0,
           repeated=False, compared=False, headline=False, side=True),
    Metric("isolation.*", "", None, "an isolation figure not declared here", lower_bound=None,
           headline=False),
)
# fmt: on


class IsolationExperiment(WorkerExperiment, RepeatedExperiment):
    """A worker pinned to one CPU, measured alone and next to each attacker at each
    placement (S1's performance isolation); slowdown against the alone measurements."""

    type: Literal["isolation"]
    worker: str = "sqlite"
    attackers: list[str] = Field(default=list(S1_ATTACKERS), min_length=1)
    placements: list[Literal["same-cpu", "smt-sibling", "other-cpu", "all-other"]] = Field(
        default=list(PLACEMENTS), min_length=1
    )
    worker_cpu: int | None = Field(default=None, ge=0)
    # Host tasks (threads too) each attacker may have; None: a quarter of the host's
    # pid_max shared by the placement's attackers, at most 8192 (isolation.pids_limit).
    attacker_pids_limit: int | None = Field(default=None, ge=8, le=1 << 22)
    # where the attackers run when not in the worker's runtime (one of the spec's runtimes):
    # an image that serves one program cannot run an attacker
    attacker_runtime: str | None = None
    runs: int = Field(default=20, ge=1, le=10_000)
    warmups: int = Field(default=1, ge=0, le=100)
    settle_s: float = Field(default=0.5, ge=0, le=600)

    @field_validator("worker")
    @classmethod
    def _worker(cls, v: str) -> str:
        return measuring_worker(v)

    @field_validator("attackers")
    @classmethod
    def _attackers(cls, v: list[str]) -> list[str]:
        for i, name in enumerate(v):
            if name not in ATTACKERS:
                allowed = ", ".join(ATTACKERS)
                raise ValueError(f"[{i}] unknown attacker {name!r} (allowed: {allowed})")
        if len(set(v)) != len(v):
            raise ValueError("lists an attacker twice")
        return v

    @field_validator("placements")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists a placement twice")
        return v

    @model_validator(mode="after")
    def _params(self) -> IsolationExperiment:
        check_params(self.params, [self.worker])
        return self

    def workloads_needed(self) -> list[str]:
        return [self.worker, *(w for a in self.attackers for w in ATTACKERS[a].needs)]

    def instance_workloads(self) -> list[str]:
        if self.attacker_runtime is not None:  # the attackers run there (checked apart)
            return [self.worker]
        return [self.worker, *self.attacker_workloads()]

    def attacker_workloads(self) -> list[str]:
        return [f"attacker {a}" for a in self.attackers]


MEMORY_SHARE = 0.5  # attackers together may hold at most this share of MemAvailable
TASKS = "isolation.attacker_tasks_peak"  # host tasks (threads too) of all attackers at peak


def worker_cpu(cfg: IsolationExperiment, topo: Topology) -> int:
    cpu = topo.default_worker_cpu() if cfg.worker_cpu is None else cfg.worker_cpu
    if cpu not in topo.cpus:
        online = ",".join(map(str, topo.cpus))
        raise SpecError(f"isolation: worker_cpu {cpu} is not an online CPU (online: {online})")
    return cpu


def check(s: Session, cfg: IsolationExperiment) -> None:
    """Before any measurement: the worker CPU exists and a serving worker is reachable."""
    worker_cpu(cfg, s.host.topology())
    check_reachable(s, "isolation", cfg.worker, s.spec.runtimes)


def conditions(s: Session, cfg: IsolationExperiment, topo: Topology, cpu: int) -> list[Condition]:
    """Baseline first, then every attacker at every placement the host offers."""
    out: list[Condition] = [("", "", [])]
    available_mib = s.host.mem_available() / 2**20
    taken: dict[tuple[int, ...], str] = {}
    for placement in cfg.placements:
        cpus, why = topo.placement(placement, cpu)
        if cpus and tuple(cpus) in taken:  # e.g. all-other on a 2-CPU host is other-cpu
            same = ",".join(map(str, cpus))
            why = f"the same attacker CPUs ({same}) as {taken[tuple(cpus)]} on this host"
            cpus = []
        if not cpus:
            s.event("warning", f"isolation: placement {placement} skipped: {why}")
            continue
        taken[tuple(cpus)] = placement
        for a in cfg.attackers:
            need = attackers.ATTACKERS[a].memory_mib * len(cpus)
            if need > MEMORY_SHARE * available_mib:  # many CPUs x a memory hog: no OOM
                s.event("warning", f"isolation: {a} at {placement} skipped: {len(cpus)} "
                                   f"attackers would hold {need} MiB, more than "
                                   f"{MEMORY_SHARE:.0%} of MemAvailable "
                                   f"({available_mib:.0f} MiB)")  # fmt: skip
                continue
            out.append((a, placement, cpus))
    return out


def pids_limit(cfg: IsolationExperiment, attackers: int) -> int:
    """Host tasks each attacker may have: the spec's `attacker_pids_limit`, else a quarter
    of the host's pid_max shared among the attackers, at most 8192. gVisor's ptrace platform
    turns a guest fork loop into thousands of host threads (~4,000 in 20 s here), so a
    limit of tens would end the sandbox, not bound the loop."""
    if cfg.attacker_pids_limit is not None:
        return cfg.attacker_pids_limit
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 32768
    return max(64, min(8192, pid_max // 4 // max(1, attackers)))


def start_attackers(
    s: Session, cfg: IsolationExperiment, runtime: str, name: str, cpus: list[int]
) -> list[Instance]:
    """One attacker instance per CPU, each pinned there and ready; all stopped if one fails."""
    rt = s.runtimes[runtime]
    attacker = attackers.ATTACKERS[name]
    started: list[Instance] = []
    try:
        for cpu in cpus:
            spec = s.instance_spec(
                runtime,
                lambda inst: attackers.argv(name, inst),
                data=attacker.data,
                cpus=str(cpu),
                pids_limit=pids_limit(cfg, len(cpus)),
            )
            started.append(s.start_ready(runtime, spec, cfg.timeout_s)[0])
    except BaseException:
        rt.stop_each(started)
        raise
    return started


def condition_labels(
    cfg: IsolationExperiment, cond: Condition, rep: int, warmup: bool, rt: Runtime
) -> dict[str, Any]:
    """The labels of the worker's samples under one condition (`rt`: the attackers')."""
    name, placement, cpus = cond
    params: dict[str, Any] = {}
    if name:
        params = {
            "attacker_cpus": ",".join(map(str, cpus)),
            **({"attacker_runtime": rt.label} if cfg.attacker_runtime else {}),
            # None where the runtime cannot enforce one (podman:runsc)
            "attacker_pids_limit": pids_limit(cfg, len(cpus)) if rt.applies_pids_limit() else None,
        }
    return {
        "repetition": rep,
        "warmup": warmup,
        "attacker": name,
        "placement": placement,
        "params": params,
    }


class Neighbours:
    """The attackers of one condition, for one measurement of the worker."""

    def __init__(self, cfg: IsolationExperiment, rt: Runtime, name: str, cpus: list[int]) -> None:
        self.cfg, self.rt, self.name, self.cpus = cfg, rt, name, cpus
        self.running: list[Instance] = []

    def alive(self) -> None:
        """Raise when one has died: a neighbour that died early would flatter the runtime."""
        dead = [a for a in self.running if not self.rt.observe.pids(a)]
        if dead:
            _, refused = self.rt.observe.tasks(dead[0])
            limit = (
                f" (its pids limit of {pids_limit(self.cfg, len(self.cpus))} host tasks "
                f"refused {refused} forks: raise attacker_pids_limit)"
                if refused
                else ""
            )
            raise InstanceError(
                f"attacker {self.name} stopped during the measurement{limit}: {dead[0].log_tail()}"
            )

    def stop(self, s: Session, worker: Worker, labels: dict[str, Any]) -> None:
        """Record what they cost the host (a runtime may multiply them), then stop each;
        one left running would slow every later condition, baseline too."""
        if self.running:
            peaks = [self.rt.observe.tasks(a)[0] for a in self.running]
            if all(p is not None for p in peaks):
                total = float(sum(p for p in peaks if p is not None))
                sample = worker.sample("isolation", TASKS, total, "tasks", "lower", None, **labels)
                s.record(dataclasses.replace(sample, metric=TASKS))
        errors = self.rt.stop_each(self.running)
        if errors:
            raise RuntimeError(f"isolation: {self.rt.label}: could not stop attacker {errors[0]}")


def measure(
    s: Session,
    cfg: IsolationExperiment,
    worker: Worker,
    cond: Condition,
    rep: int,
    warmup: bool,
) -> None:
    """The worker once (every level) under one condition; samples stored as they come."""
    name, _, cpus = cond
    attacker_runtime = cfg.attacker_runtime or worker.runtime
    rt = s.runtimes[attacker_runtime]  # the attackers' runtime
    labels = condition_labels(cfg, cond, rep, warmup, rt)
    neighbours = Neighbours(cfg, rt, name, cpus)
    try:
        if name:
            try:
                neighbours.running = start_attackers(s, cfg, attacker_runtime, name, cpus)
            except InstanceError as exc:  # stored with its reason: counted, never averaged
                s.record(worker.failed("isolation", worker.levels[0], str(exc), **labels))
                raise
            time.sleep(cfg.settle_s)
        worker.measure_levels("isolation", check=neighbours.alive, quiet=not name, **labels)
    finally:
        neighbours.stop(s, worker, labels)


def run(s: Session, cfg: IsolationExperiment) -> None:
    topo = s.host.topology()
    cpu = worker_cpu(cfg, topo)
    conds = conditions(s, cfg, topo, cpu)
    if len(topo.cpus) < 4:
        s.event(
            "info",
            f"isolation: {len(topo.cpus)} CPUs: the host's clients and virtbench itself share "
            "CPUs with the worker and the attackers",
        )
    failures = Failures(s, "isolation")
    params = cfg.params_for(cfg.worker)
    for rep, warmup, order in s.schedule(
        cfg.warmups, cfg.runs, "isolation", cfg.target_cv, cfg.run_limit()
    ):
        shift = rep % len(conds)
        for runtime in order:
            units = [
                {"runtime": runtime, "repetition": rep, "attacker": a, "placement": p}
                for a, p, *_ in conds[shift:] + conds[:shift]
            ]
            todo = [u for u in units if s.pending("isolation", warmup, **u)]
            if failures.skip(runtime) or not todo:
                continue
            worker = Worker(
                s, runtime, cfg.worker, params, cfg.ready_timeout_s, cfg.client_timeout_s,
                cpus=str(cpu),
            )  # fmt: skip
            with worker:
                try:
                    worker.start()
                except InstanceError as exc:
                    s.record(worker.failed("isolation", worker.levels[0], str(exc),
                                           repetition=rep, warmup=warmup))  # fmt: skip
                    failures.failed(runtime, exc)
                    for u in todo:  # settled as in an uninterrupted run: not retried
                        s.finished("isolation", warmup, **u)
                    continue
                for cond, unit in zip(conds[shift:] + conds[:shift], units, strict=True):
                    if failures.skip(runtime):
                        break
                    if unit not in todo:
                        continue
                    with failures.attempt(runtime, cond[0] or "baseline"):
                        measure(s, cfg, worker, cond, rep, warmup)
                    s.finished("isolation", warmup, **unit)
        kind, total = ("warm-up", cfg.warmups) if warmup else ("repetition", total_runs(cfg))
        s.say(f"isolation: {kind} {rep + 1}/{total} done")


def offered(cfg: IsolationExperiment) -> int:
    """How many of the placements this host offers (distinct CPU sets: all-other on a
    2-CPU host is other-cpu; no SMT sibling, no smt-sibling)."""
    try:
        topo = Topology.detect()
    except OSError:
        return len(cfg.placements)
    cpu = topo.default_worker_cpu() if cfg.worker_cpu is None else cfg.worker_cpu
    sets = {tuple(c) for p in cfg.placements if (c := topo.placement(p, cpu)[0])}
    return len(sets)


def estimate(cfg: IsolationExperiment, cost: Costs) -> Estimate:
    """runs x conditions (attackers x placements, plus the baseline) x (attacker launches
    + settle_s + the worker's measurement)."""
    reps = cfg.warmups + cfg.runs
    places = offered(cfg)
    conds = 1 + len(cfg.attackers) * places
    one = cost.worker(cfg.worker, cfg.params_for(cfg.worker)) + cost.launch()
    attack = len(cfg.attackers) * places * (cost.launch() + cfg.settle_s)
    n = reps * (conds + len(cfg.attackers) * places)
    return Estimate(n, reps * (conds * one + attack), f"{reps} x {conds} conditions")


TYPE = ExperimentType(
    "isolation", IsolationExperiment, run, UNIT, order=50, check=check, estimate=estimate,
    metrics=METRICS, answers="isolation",
)  # fmt: skip
