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

from virtbench.experiments import density_figures as fig
from virtbench.experiments.density_bound import BOUND_METRICS
from virtbench.experiments.density_idle import IDLE_METRICS
from virtbench.experiments.density_liveness import LIVENESS_METRICS
from virtbench.experiments.density_pile import Pile
from virtbench.experiments.density_sharing import SHARING_METRICS
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.tables.base import CommonExperiment

UNIT = ("runtime", "repetition")

# The figures it records (virtbench.figure): the pile-up's (density_figures.py) and its
# add-ons'.
METRICS = (
    fig.LAUNCH,
    fig.PSS,
    fig.PSS_WITHOUT_GUEST_RAM,
    fig.POD_OVERHEAD,
    *IDLE_METRICS,
    *SHARING_METRICS,
    *BOUND_METRICS,
    fig.CGROUP_MEMORY,
    fig.CGROUP_ANON,
    fig.CGROUP_FILE,
    fig.CGROUP_KERNEL,
    fig.MEM_AVAILABLE,
    fig.HOST_USED,
    fig.KERNEL_USED,
    fig.USER_PSS,
    fig.HOST_COST,
    fig.KERNEL_COST,
    fig.USER_COST,
    fig.HOST_PER_INSTANCE,
    fig.REACHED,
    *LIVENESS_METRICS,
    fig.TEARDOWN_PER_INSTANCE,
    fig.ANY,
)


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
