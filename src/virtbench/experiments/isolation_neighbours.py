"""Who runs beside isolation's worker: the conditions (attacker x placement, and the
baseline), the attackers' and a busy baseline's spinners' instances, pinned one per CPU,
with the memory guard and the pids limit they run within, their labels, and the check
that they stayed alive through the measurement."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.errors import InstanceError
from virtbench.experiments.session import Session
from virtbench.experiments.worker import Worker
from virtbench.figure import Metric
from virtbench.measure.topology import Topology, format_cpulist
from virtbench.runtimes.base import Instance, Runtime
from virtbench.workloads import attackers

if TYPE_CHECKING:
    from virtbench.experiments.isolation_config import IsolationExperiment

Condition = tuple[str, str, list[int]]  # attacker, placement, attacker CPUs

SPINNER = "cpu"  # what a busy baseline runs on the CPUs outside the worker's core
MEMORY_SHARE = 0.5  # attackers together may hold at most this share of MemAvailable
# the attackers' own cost, not the worker's performance: not scored across runtimes
TASKS_PEAK = Metric(
    "isolation.attacker_tasks_peak",
    "tasks",
    "lower",
    "host tasks (threads included) of all the attackers' cgroups at their peak (pids.peak), summed",
    resolution=1.0,
    repeated=False,
    compared=False,
    headline=False,
    side=True,
    label="peak attacker tasks",
)


def conditions(s: Session, cfg: IsolationExperiment, topo: Topology, cpu: int) -> list[Condition]:
    """Baseline first (with its spinners' CPUs when busy), then every attacker at every
    placement the host offers."""
    out: list[Condition] = [("", "", spinner_cpus(s, cfg, topo, cpu))]
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
                s.event(
                    "warning",
                    f"isolation: {a} at {placement} skipped: {len(cpus)} "
                    f"attackers would hold {need} MiB, more than "
                    f"{MEMORY_SHARE:.0%} of MemAvailable "
                    f"({available_mib:.0f} MiB)",
                )
                continue
            out.append((a, placement, cpus))
        if placement == "all-other" and out[-1][1] == placement:  # say what the worker keeps
            s.event(
                "info",
                f"isolation: all-other: one attacker on each of {len(cpus)} CPUs "
                f"({format_cpulist(cpus)}); the worker's core "
                f"({format_cpulist(topo.core(cpu))}) is left to it",
            )
    return out


def spinner_cpus(s: Session, cfg: IsolationExperiment, topo: Topology, cpu: int) -> list[int]:
    """The CPUs a busy baseline keeps busy: every one outside the worker's core."""
    if cfg.baseline == "idle":
        return []
    cpus, why = topo.placement("all-other", cpu)
    if not cpus:
        s.event("warning", f"isolation: baseline busy: {why}: the baseline is idle")
    return cpus


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
    if not name and cpus:  # a busy baseline's spinners
        params = {"baseline": "busy", "spinner_cpus": ",".join(map(str, cpus))}
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
            who = f"attacker {self.name}" if self.name else "a busy baseline's spinner"
            raise InstanceError(
                f"{who} stopped during the measurement{limit}: {dead[0].log_tail()}"
            )

    def stop(self, s: Session, worker: Worker, labels: dict[str, Any]) -> None:
        """Record what they cost the host (a runtime may multiply them), then stop each;
        one left running would slow every later condition, baseline too."""
        if self.running and self.name:  # not a busy baseline's spinners
            peaks = [self.rt.observe.tasks(a)[0] for a in self.running]
            if all(p is not None for p in peaks):
                total = float(sum(p for p in peaks if p is not None))
                s.record(TASKS_PEAK.sample(total, **worker.labels("isolation", **labels)))
        errors = self.rt.stop_each(self.running)
        if errors:
            raise RuntimeError(f"isolation: {self.rt.label}: could not stop attacker {errors[0]}")
