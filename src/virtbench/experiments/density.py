"""`density`: what each additional idle instance costs, as instances pile up.

For each runtime (one at a time, so instances of different runtimes never share the
host) and each run: drop caches and read MemAvailable, then start `sleep` instances
one after another. After each start, record:
  density.launch          spawn -> ready of the new instance (ms)
  density.pss             PSS summed over the new instance's host processes (MiB)
  density.pss_without_guest_ram   VMs: the same less the PSS of the guest's RAM mapping
  density.cgroup_memory   memory charged to its cgroup (MiB)
  density.pod_overhead    a pod's (`cri`): its cost beyond its container (MiB)
  density.idle_cpu, density.pod_idle_cpu   with idle_cpu_s: CPU while idle (density_idle.py)
  density.cgroup_anon, density.cgroup_file, density.cgroup_kernel
                          that memory by part, from the cgroup's memory.stat (MiB)
  density.mem_available   host MemAvailable (MiB)
Before the first instance, every `instances_per_benchmark` instances and at the end,
drop caches and record, at the instances running then (the sample's `background`):
  density.host_used       host memory in use: MemTotal - MemAvailable, less the free
                          pages on the per-CPU lists (MiB)
  density.kernel_used     the kernel's: Slab + PageTables + KernelStack + Percpu (MiB)
  density.user_pss        PSS over every host process of every running instance, plus
                          the daemons this run started (a share of which is each one's)
The report fits a line through each of these against the instances running (report/
fits.py): its slope is the memory each instance costs the host, its kernel side and its
user side, with a 95% CI.
The memory guard stops growth before the host runs short: when MemAvailable falls below
`guard_available_pct` % of MemTotal or `guard_available_mib`, whichever is larger. Why
growth stopped is stored as an event and as `density.reached` (instances running).
With `liveness_probes` = K, the pile-up's instances must still answer: K of them drawn
at random (all, if fewer run; seeded by the run) each run vb-hello through the runtime's
exec, in turn:
  density.liveness        per probed instance: the exec call -> its line read and its
                          exit 0 seen (ms); one that did not answer is a failed sample
                          with its reason
  density.answered        how many of the probed instances answered
A runtime whose instances cannot run a command (no exec; a VM's minimal guest has no
agent) is said so, as a failed density.answered. With `latency_bound_ms`, the probes are
asked at every step too and the pile-up stops where their p99 is above the bound
(density_bound.py); with `sharing = ["off", "ksm"]`, KSM is switched on once it is up
(density_sharing.py).
Then every instance is stopped; `density.teardown_per_instance` is the mean stop time (ms).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from virtbench.experiments.density_bound import BOUND_METRICS
from virtbench.experiments.density_idle import IDLE_METRICS
from virtbench.experiments.density_pile import Pile
from virtbench.experiments.density_sharing import SHARING_METRICS
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.figure import (
    CHARGE_BATCH_MIB,
    KIB_MIB,
    MONO,
    NS_MS,
    SPAWN,
    STEP,
    Metric,
    pile_metric,
)
from virtbench.tables.base import CommonExperiment

UNIT = ("runtime", "repetition")

# The figures it records (metrics/model.py).
# fmt: off
METRICS: tuple[Metric, ...] = (
    pile_metric("density.launch", "ms", "lower", SPAWN + "the new instance's ready datagram "
          "reached the host" + MONO, resolution=NS_MS, side=True,
          label="time to ready in a pile-up"),
    pile_metric("density.pss", "MiB", "lower", "PSS summed over the new instance's host processes "
          "(runtime and VMM included), from /proc/<pid>/smaps_rollup", resolution=KIB_MIB,
          plot="density", label="PSS of each new instance"),
    pile_metric("density.pss_without_guest_ram", "MiB", "lower", "VMs: density.pss less the PSS "
          "of the guest's RAM mapping, the VMM's own cost", resolution=KIB_MIB,
          label="PSS without guest RAM"),
    pile_metric("density.pod_overhead", "MiB", "lower", "a pod's cost beyond its container "
          "(`cri`): what its cgroup is charged beyond its container's own cgroup (the pause "
          "sandbox; runsc's sentry and gofer), plus the PSS of its processes outside its "
          "cgroup (the shim): what a RuntimeClass's overhead.podFixed must cover",
          resolution=CHARGE_BATCH_MIB, label="pod overhead"),
    *IDLE_METRICS,
    *SHARING_METRICS,
    *BOUND_METRICS,
    pile_metric("density.cgroup_memory", "MiB", "lower", "memory charged to the new instance's "
          "cgroup (memory.current, v1 usage_in_bytes: page cache included); the kernel "
          "charges a cgroup 64 pages at a time and keeps the rest per CPU, so the figure "
          "moves in steps of 0.25 MiB", resolution=CHARGE_BATCH_MIB,
          label="cgroup memory of each instance"),
    *(
        pile_metric(name, "MiB", "lower", f"{what}, of the memory charged to the new "
              f"instance's cgroup ({keys} in memory.stat); the kernel counts these per CPU "
              "and adds them up 64 pages at a time, so a part moves in steps of 0.25 MiB",
              resolution=CHARGE_BATCH_MIB, compared=False, label=f"{label} in its cgroup")
        for name, what, keys, label in (
            ("density.cgroup_anon", "anonymous memory", "v2 anon, v1 total_rss",
             "anonymous memory"),
            ("density.cgroup_file", "the page cache, shmem and tmpfs included",
             "v2 file, v1 total_cache", "page cache"),
            ("density.cgroup_kernel", "the kernel's memory for it",
             "v2 kernel, v1 memory.kmem.usage_in_bytes", "kernel memory"),
        )
    ),
    pile_metric("density.mem_available", "MiB", "higher", "the host's MemAvailable after the new "
          "instance got ready", resolution=KIB_MIB, repeated=False, summary="series",
          compared=False, side=True, label="memory available after launch"),
    # the host at each step of a pile-up (caches dropped), at the instances running then
    pile_metric("density.host_used", "MiB", "lower", "host memory in use: MemTotal - MemAvailable, "
          "less the free pages on the per-CPU lists (/proc/zoneinfo)", label="host memory in use",
          **STEP),
    pile_metric("density.kernel_used", "MiB", "lower", "the kernel's memory that grows with "
          "instances: Slab + PageTables + KernelStack + Percpu from /proc/meminfo",
          label="kernel memory in use", **STEP),
    pile_metric("density.user_pss", "MiB", "lower", "PSS summed over every host process of every "
          "running instance (shims, monitors, sandboxes, VMMs) and the daemons the run "
          "started for the runtime", label="PSS of instances and daemons", **STEP),
    # what each instance costs: the slope of a step series against instances running
    # (report/fits.py), computed when read, not stored
    pile_metric("density.host_cost", "MiB", "lower", "host memory per instance: the slope of "
          "host memory in use against instances running over every step (their increments pooled)",
          summary="fit", plot="density", label="memory per instance", fits="density.host_used",
          resolution=KIB_MIB),
    pile_metric("density.kernel_cost", "MiB", "lower", "its kernel side: the slope of "
          "kernel memory in use", summary="fit", plot="density", label="kernel memory per instance",
          fits="density.kernel_used", resolution=KIB_MIB),
    pile_metric("density.user_cost", "MiB", "lower", "its user side: the slope of "
          "the PSS of instances and daemons", summary="fit", fits="density.user_pss",
          resolution=KIB_MIB, label="process memory per instance"),
    # an earlier virtbench's per-step ratio, kept so its runs still read
    pile_metric("density.host_per_instance", "MiB", "lower", "(MemAvailable before the first "
          "instance - now) / instances running, caches dropped before each reading (runs "
          "of an earlier virtbench; replaced by density.host_cost)", lower_bound=None,
          repeated=False, summary="series", compared=False, ab_compared=False,
          label="memory per instance, old method"),
    # counts of how far a pile-up got: reported, not scored across runtimes
    pile_metric("density.reached", "instances", "higher", "instances running when growth stopped "
          "(the target, the memory guard, or an instance that failed)", resolution=1.0,
          repeated=False, compared=False, side=True, label="instances reached"),
    pile_metric("density.liveness", "ms", "lower", "liveness_probes: the exec call in a "
          "probed instance of the pile-up -> vb-hello's line read and its exit seen" + MONO,
          resolution=NS_MS, label="liveness probe"),
    pile_metric("density.answered", "instances", "higher", "liveness_probes: the probed "
          "instances that answered", resolution=1.0, repeated=False, compared=False, side=True,
          label="instances that answered"),
    pile_metric("density.teardown_per_instance", "ms", "lower", "stopping every instance of the "
          "pile-up, one after another, / their count" + MONO, resolution=NS_MS, side=True,
          label="teardown per instance"),
    pile_metric("density.*", "", None, "a density figure not declared here", lower_bound=None,
          label="density {}"),
)
# fmt: on


class DensityExperiment(CommonExperiment):
    """Start idle instances one after another up to `instances`; memory after each."""

    type: Literal["density"]
    workload: Literal["sleep"] = "sleep"
    instances: int = Field(default=50, ge=1, le=100_000)
    runs: int = Field(default=1, ge=1, le=1000)
    instances_per_benchmark: int = Field(default=10, ge=1, le=100_000)
    guard_available_pct: float = Field(default=10.0, ge=0, le=90)
    guard_available_mib: int = Field(default=1024, ge=0)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # before each pile-up, memory in use must hold still this long (caches dropped): the
    # kernel frees what an earlier teardown left in bursts, up to ~10 s later here
    memory_settle_s: float = Field(default=15.0, ge=0, le=600)
    liveness_probes: int = Field(default=0, ge=0, le=100_000)  # after the pile-up
    idle_cpu_s: float = Field(default=0.0, ge=0, le=3600)  # density_idle.py
    sharing: list[Literal["off", "ksm"]] = Field(default=["off"], min_length=1)  # ..._sharing.py
    ksm_settle_timeout_s: float = Field(default=300.0, gt=0, le=3600)
    # stop where the liveness probes' p99 at a step is above it (density_bound.py)
    latency_bound_ms: float | None = Field(default=None, gt=0, le=3_600_000)

    @model_validator(mode="after")
    def _bound_needs_probes(self) -> DensityExperiment:
        if self.latency_bound_ms is not None and not self.liveness_probes:
            raise ValueError("latency_bound_ms needs liveness_probes (how many to ask a step)")
        return self

    def instance_workloads(self) -> list[str]:
        return [self.workload]


def run(s: Session, cfg: DensityExperiment) -> None:
    # A pile-up stops at its own first failure; only a dead engine (EngineGone) skips
    # a runtime's remaining repetitions.
    failures = Failures(s, "density")
    for runtime in s.spec.runtimes:
        for rep in range(cfg.runs):  # a pile-up stopped half-way is redone whole on --resume
            if failures.skip(runtime):
                break
            if s.pending("density", False, runtime=runtime, repetition=rep):
                Pile(s, cfg, runtime, rep).run()
                s.finished("density", False, runtime=runtime, repetition=rep)


def estimate(cfg: DensityExperiment, cost: Costs) -> Estimate:
    """runs x (memory settle window + `instances` launches + their stops)."""
    n = cfg.runs * cfg.instances
    t = cfg.runs * cfg.memory_settle_s + n * cost.launch()
    what = f"{cfg.runs} x {cfg.instances} instances"
    if cfg.liveness_probes:
        what += f", then {min(cfg.liveness_probes, cfg.instances)} of them asked to answer"
    return Estimate(n, t, what)


TYPE = ExperimentType(
    "density",
    DensityExperiment,
    run,
    UNIT,
    order=20,
    estimate=estimate,
    metrics=METRICS,
)
