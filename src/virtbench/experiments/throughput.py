"""`throughput`: a server in the instance, a client on the host, figures from the client.

For each repetition, runtime (rotated as in boot) and serving workload: start a fresh
instance running the server, wait until its TCP port accepts connections, run the
workload's client once per level of its swept parameter (e.g. wrk's connections), parse
the client's output and store every figure, then stop the instance. Clients run on the
host, outside the instance's cgroup, and talk to the instance over the host network or
the run's bridge (never anything else); `none` cannot be reached, so it is an error.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.experiments.trial import Trial
from virtbench.experiments.worker import Job, Worker, check_reachable
from virtbench.tables.base import (
    RepeatedExperiment,
    check_params,
    params_for,
)

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "workload")


class ThroughputExperiment(RepeatedExperiment):
    """A server in each instance, a client on the host (nginx+wrk, redis+redis-benchmark,
    ...). `workloads = ["all"]` means every serving workload; `[experiment.params.<name>]`
    sets that workload's client parameters (validated by the workload)."""

    type: Literal["throughput"]
    workloads: list[str] = Field(default=["all"], min_length=1, validate_default=True)
    runs: int = Field(default=3, ge=1, le=10_000)
    warmups: int = Field(default=0, ge=0, le=1000)
    params: dict[str, dict[str, Any]] = {}
    ready_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    client_timeout_s: float = Field(default=900.0, gt=0, le=86_400)

    @field_validator("workloads")
    @classmethod
    def _serving(cls, v: list[str]) -> list[str]:
        from virtbench import workloads

        serving = workloads.measuring()
        if v == ["all"]:
            return serving
        for i, name in enumerate(v):
            if name not in serving:
                raise ValueError(
                    f"[{i}] unknown workload {name!r} (allowed: all, {', '.join(serving)})"
                )
        if len(set(v)) != len(v):
            raise ValueError("lists a workload twice")
        return v

    @model_validator(mode="after")
    def _params(self) -> ThroughputExperiment:
        check_params(self.params, self.workloads)
        return self

    def params_for(self, name: str) -> Any:
        return params_for(self.params, name)

    def workloads_needed(self) -> list[str]:
        return list(self.workloads)

    def instance_workloads(self) -> list[str]:
        return list(self.workloads)


def check(s: Session, cfg: ThroughputExperiment) -> None:
    """Before any measurement: clients installed, every server reachable from the host."""
    for name in cfg.workloads:
        check_reachable(s, "throughput", name, s.spec.runtimes)


def measure(s: Session, cfg: ThroughputExperiment, trial: Trial) -> None:
    """One repetition of one workload: a fresh server (or a fresh measuring instance per
    level), every level measured, every figure stored as soon as it is parsed."""
    worker = Worker(s, trial.runtime, Job.of(cfg, trial.workload))
    labels: dict[str, Any] = {"repetition": trial.repetition, "warmup": trial.warmup}
    with worker:
        try:
            worker.start()
        except InstanceError as exc:  # stored with its reason: counted, never averaged
            s.record(worker.failed("throughput", worker.levels[0], str(exc), **labels))
            raise
        worker.measure_levels("throughput", **labels)


def run(s: Session, cfg: ThroughputExperiment) -> None:
    failures = Failures(s, "throughput")
    for rep, warmup, order in s.repetitions("throughput", cfg):
        for runtime in order:
            for name in cfg.workloads:
                if failures.skip(runtime):
                    break
                unit = {"runtime": runtime, "repetition": rep, "workload": name}
                if not s.pending("throughput", warmup, **unit):
                    continue
                kind = "warm-up" if warmup else "run"
                s.say(f"throughput: {name} on {runtime} ({kind} {rep + 1})")
                with failures.attempt(runtime, name):
                    measure(s, cfg, Trial(runtime, name, rep, warmup))
                s.finished("throughput", warmup, **unit)


def estimate(cfg: ThroughputExperiment, cost: Costs) -> Estimate:
    """runs x per workload (a server launch + each level's measurement)."""
    reps = cfg.warmups + cfg.runs
    each = sum(cost.launch(True) + cost.worker(w, cfg.params_for(w)) for w in cfg.workloads)
    n = reps * len(cfg.workloads)
    return Estimate(n, reps * each, f"{reps} x {len(cfg.workloads)} workloads")


TYPE = ExperimentType(
    "throughput",
    ThroughputExperiment,
    run,
    UNIT,
    order=30,
    check=check,
    estimate=estimate,
)
