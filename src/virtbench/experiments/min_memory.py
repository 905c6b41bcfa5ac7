"""`min_memory`: the smallest memory an instance runs its workload in without losing
performance (S3 searched a VM's memory in 8 MiB steps; Unikraft's tools bisect 1-64 MiB).

Per runtime (a VM's guest memory; a container's cgroup limit):
  reference   the workload measured `runs` times with `high_mib`: the median of its
              primary figure (at its first level)
  probe m     the same at `m` MiB. It passes when every measurement completes (the
              instance starts, the server answers, the program exits 0) and the median is
              worse than the reference by at most `tolerance_pct`, in the figure's own
              direction
  search      bisection between `low_mib` and `high_mib` on multiples of `step_mib`,
              keeping "the upper end passes, the lower end fails" (the lower end starts
              one step below `low_mib`, as untried)
The result, `min_memory.mib`, is the smallest passing size found: the true minimum lies
within one step below it (its resolution is `step_mib`). Every probe is stored too
(`min_memory.probe`: its median, or the failure that decided it), so the search can be
read back. `high_mib` must pass, else the search says so and stores nothing else.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Literal

from pydantic import Field, field_validator, model_validator

from virtbench.analysis.stats import slowdown
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.experiments.worker import Job, Worker, check_reachable
from virtbench.figure import Metric
from virtbench.tables.base import (
    WorkerExperiment,
    check_params,
    measuring_worker,
)

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime",)

# The figures it records (virtbench.figure).
MINIMUM = Metric(
    "min_memory.mib",
    "MiB",
    "lower",
    "the smallest memory (a VM's guest RAM, a container's cgroup limit) whose probe "
    "passed: the workload completed and its figure stayed within the tolerance of the one "
    "at high_mib; the true minimum is within one step (params.step_mib) below",
    repeated=False,
    headline=False,
    label="smallest working memory",
)
# min_memory.probe: the workload's primary figure (median of the probe's measurements,
# in the workload's unit) at one memory size (params.memory_mib), or the failure that
# decided it; the family takes the unit and direction its samples carry
ANY = Metric(
    "min_memory.*",
    "",
    None,
    "a probe of the search at params.memory_mib, in the workload's unit",
    lower_bound=None,
    repeated=False,
    summary="series",
    compared=False,
    ab_compared=False,
    headline=False,
    label="{} at one memory size",
)
PROBE = ANY.of("probe")
METRICS = (MINIMUM, ANY)


class MinMemoryExperiment(WorkerExperiment):
    """The smallest memory (MiB) each runtime's instance runs `workload` in, its figure
    within `tolerance_pct` of the one with `high_mib` (bisection in `step_mib` steps)."""

    type: Literal["min_memory"]
    workload: str = "nginx"
    low_mib: int = Field(default=16, ge=4, le=1 << 20)
    high_mib: int = Field(default=512, ge=8, le=1 << 20)
    step_mib: int = Field(default=8, ge=1, le=1 << 16)
    tolerance_pct: float = Field(default=10.0, gt=0, le=100)
    runs: int = Field(default=3, ge=1, le=100)  # measurements per probe (their median)

    @field_validator("workload")
    @classmethod
    def _workload(cls, v: str) -> str:
        return measuring_worker(v)

    @model_validator(mode="after")
    def _range(self) -> MinMemoryExperiment:
        check_params(self.params, [self.workload])
        if self.low_mib >= self.high_mib:
            raise ValueError(f"low_mib: {self.low_mib} is not below high_mib ({self.high_mib})")
        for name in ("low_mib", "high_mib"):
            if getattr(self, name) % self.step_mib:
                raise ValueError(
                    f"{name}: {getattr(self, name)} is not a multiple of step_mib ({self.step_mib})"
                )
        return self

    def workloads_needed(self) -> list[str]:
        return [self.workload]

    def instance_workloads(self) -> list[str]:
        return [self.workload]


def check(s: Session, cfg: MinMemoryExperiment) -> None:
    """Before any measurement: the workload's clients are there and it is reachable."""
    check_reachable(s, "min_memory", cfg.workload, s.spec.runtimes)


def probe(s: Session, cfg: MinMemoryExperiment, runtime: str, mib: int) -> tuple[float, str]:
    """The median primary figure of `runs` measurements at `mib`; (nan, why) if one of
    them did not complete."""
    job = Job.of(cfg, cfg.workload)
    values: list[float] = []
    for _ in range(cfg.runs):
        worker = Worker(s, runtime, job, memory_mib=mib)
        with worker:
            try:
                worker.start()
                metrics = worker.measure(worker.levels[0])
            except InstanceError as exc:
                return float("nan"), str(exc)
        name = worker.measures.primary.name
        primary = next((m for m in metrics if m.name == name), None)
        if primary is None:
            return float("nan"), f"{cfg.workload} gave no {name}"
        values.append(primary.value)
    return statistics.median(values), ""


def _recorder(
    s: Session, cfg: MinMemoryExperiment, runtime: str, primary: Metric
) -> Callable[..., None]:
    """How `search` records a sample of `runtime`: (figure, value, error="", **params),
    the search's settings in every sample's params; a probe's figure in the workload's
    primary figure's unit and direction, the minimum found as MINIMUM is declared."""
    base = {
        **s.params(runtime),
        "tolerance_pct": cfg.tolerance_pct,
        "step_mib": cfg.step_mib,
        "low_mib": cfg.low_mib,
        "high_mib": cfg.high_mib,
    }

    def record(metric: Metric, value: float | None, error: str = "", **params: object) -> None:
        open_ = {"unit": primary.unit, "direction": primary.direction} if metric is PROBE else {}
        s.record(
            metric.sample(
                value,
                **open_,
                experiment="min_memory",
                runtime=runtime,
                workload=cfg.workload,
                repetition=0,
                params={**base, **params},
                error=error,
            )
        )

    return record


def search(s: Session, cfg: MinMemoryExperiment, runtime: str) -> None:
    from virtbench import workloads

    wl = workloads.get(cfg.workload)
    assert wl.measures is not None, f"{cfg.workload} yields no figures"
    primary = wl.measures.primary
    direction = primary.direction or "lower"
    record = _recorder(s, cfg, runtime, primary)
    ref, why = probe(s, cfg, runtime, cfg.high_mib)
    record(PROBE, None if why else ref, why, memory_mib=cfg.high_mib, passed=not why)
    if why:
        s.event(
            "warning",
            f"min_memory: {runtime} does not run {cfg.workload} even with "
            f"{cfg.high_mib} MiB (high_mib): {why}",
        )
        return
    step = cfg.step_mib
    lo, hi = cfg.low_mib - step, cfg.high_mib  # hi passes; lo is untried, taken to fail
    tried = 1
    while hi - lo > step:
        mid = lo + (hi - lo) // step // 2 * step
        value, why = probe(s, cfg, runtime, mid)
        passed = False
        if not why:  # it completed: is it as fast as with high_mib?
            worse = slowdown(value, ref, direction)
            passed = worse <= cfg.tolerance_pct / 100
            why = "" if passed else f"{worse * 100:.1f}% worse than with {cfg.high_mib} MiB"
            record(PROBE, value, memory_mib=mid, passed=passed, why=why)
        else:  # it did not: no figure, the reason instead
            record(PROBE, None, why, memory_mib=mid, passed=False)
        s.say(
            f"min_memory: {runtime} {cfg.workload} at {mid} MiB: "
            + ("passes" if passed else f"fails ({why})")
        )
        tried += 1
        lo, hi = (lo, mid) if passed else (mid, hi)
    record(MINIMUM, float(hi), reference=ref, probes=tried)
    s.say(
        f"min_memory: {runtime} runs {cfg.workload} in {hi} MiB (the minimum is within "
        f"{step} MiB below; {tried} probes)"
    )


def run(s: Session, cfg: MinMemoryExperiment) -> None:
    for runtime in s.spec.runtimes:
        if not s.pending("min_memory", False, runtime=runtime):
            continue
        search(s, cfg, runtime)
        s.finished("min_memory", False, runtime=runtime)


def estimate(cfg: MinMemoryExperiment, cost: Costs) -> Estimate:
    """About log2((high - low) / step) + 2 probes x runs x (a launch + the workload's
    measurement)."""
    probes = 2 + math.ceil(math.log2(max(2, (cfg.high_mib - cfg.low_mib) // cfg.step_mib)))
    one = cost.launch(True) + cost.worker(cfg.workload, cfg.params_for(cfg.workload))
    n = probes * cfg.runs
    return Estimate(n, n * one, f"about {probes} probes x {cfg.runs}")


TYPE = ExperimentType(
    "min_memory",
    MinMemoryExperiment,
    run,
    UNIT,
    order=60,
    check=check,
    estimate=estimate,
    metrics=METRICS,
)
