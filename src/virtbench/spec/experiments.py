"""The experiment tables of a spec (`[[experiment]]`, by `type`): one model each, with
the repetition, worker and workload-parameter rules they share. spec/load.py holds the whole
spec and its loading; it re-exports these.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from virtbench.measure.topology import PLACEMENTS
from virtbench.spec.base import CommonExperiment, RepeatedExperiment, option_error
from virtbench.spec.sandbox import (
    BurstExperiment,
    ExecExperiment,
    PauseExperiment,
    SnapshotExperiment,
)
from virtbench.workloads.attackers import ATTACKERS, S1_ATTACKERS


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

    def instance_workloads(self) -> list[str]:
        return [self.workload]


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
        _check_params(self.params, self.workloads)
        return self

    def params_for(self, name: str) -> Any:
        return _params_for(self.params, name)

    def workloads_needed(self) -> list[str]:
        return list(self.workloads)

    def instance_workloads(self) -> list[str]:
        return list(self.workloads)


def _check_params(params: dict[str, dict[str, Any]], names: list[str]) -> None:
    """`[experiment.params.<workload>]` tables: only for this experiment's workloads, and
    valid for the workload's Params model."""
    from virtbench import workloads

    for name, table in params.items():
        if name not in names:
            these = ", ".join(names) or "none takes params"
            raise ValueError(f"params.{name}: not a workload of this experiment ({these})")
        model = workloads.get(name).Params
        try:
            model.model_validate(table)
        except ValidationError as err:
            key, msg = option_error(err, list(model.model_fields))
            raise ValueError(f"params.{name}.{key}: {msg}") from None


def _params_for(params: dict[str, dict[str, Any]], name: str) -> Any:
    from virtbench import workloads

    return workloads.get(name).Params.model_validate(params.get(name, {}))


def _measuring_worker(v: str, also: tuple[str, ...] = ()) -> str:
    """A worker name: one of `also`, or a workload that yields figures (aliases resolved)."""
    from virtbench import workloads

    v = workloads.ALIASES.get(v, v)
    allowed = [*also, *workloads.measuring()]
    if v not in allowed:
        raise ValueError(f"unknown worker {v!r} (allowed: {', '.join(allowed)})")
    return v


class _WorkerExperiment(CommonExperiment):
    """What experiments that measure a worker share: the worker's parameters and the
    time limits for instances (ready signal), servers (port and readiness) and clients."""

    params: dict[str, dict[str, Any]] = {}
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    ready_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    client_timeout_s: float = Field(default=900.0, gt=0, le=86_400)

    def params_for(self, name: str) -> Any:
        return _params_for(self.params, name)


class ScalabilityExperiment(_WorkerExperiment):
    """A worker measured alone, then again after every `instances_per_benchmark` more
    idle background instances, up to `instances` (S1's scalability runner). The worker
    is `boot` (a hello instance, spawn to exit) or any workload that yields figures."""

    type: Literal["scalability"]
    worker: str = "boot"
    background: Literal["sleep", "nginx", "redis"] = "sleep"
    background_network: Literal["none", "host", "bridge"] = "none"
    instances_per_benchmark: int = Field(default=10, ge=1, le=100_000)
    # the final count: `instances`, or S1's way, `instances_per_benchmark` x `benchmark_times`
    instances: int | None = Field(default=None, ge=0, le=100_000)
    benchmark_times: int | None = Field(default=None, ge=1, le=100_000)
    runs: int = Field(default=3, ge=1, le=1000)
    # default: 5 boots (a point is their median: one slow boot in five is no trend), 1
    # measurement of a serving workload (each is a whole wrk or redis-benchmark run)
    measurements_per_point: int | None = Field(default=None, ge=1, le=1000)
    warmups: int = Field(default=1, ge=0, le=100)
    settle_s: float = Field(default=1.0, ge=0, le=600)
    # before each pile-up, as density's: the previous pile-up's teardown of 1200 crun
    # sleepers made 4 of the next run's 5 first boots 2-4x slower
    memory_settle_s: float = Field(default=15.0, ge=0, le=600)
    guard_available_pct: float = Field(default=10.0, ge=0, le=90)
    guard_available_mib: int = Field(default=1024, ge=0)
    # growth stops once the host's swap in use grew by this much; raise it to reach the
    # regime where the host swaps (S1 saw it past ~800 instances)
    guard_swap_growth_mib: int = Field(default=64, ge=0, le=1 << 30)

    @field_validator("worker")
    @classmethod
    def _worker(cls, v: str) -> str:
        return _measuring_worker(v, also=("boot",))

    @model_validator(mode="after")
    def _params(self) -> ScalabilityExperiment:
        _check_params(self.params, [] if self.worker == "boot" else [self.worker])
        both = self.instances is not None and self.benchmark_times is not None
        if both and self.instances != self.instances_per_benchmark * self.benchmark_times:
            raise ValueError(
                "instances: give instances (the final count) or benchmark_times (steps "
                "of instances_per_benchmark), not both"
            )
        return self

    @property
    def per_point(self) -> int:
        """The worker's measurements at each point."""
        if self.measurements_per_point is not None:
            return self.measurements_per_point
        return 5 if self.worker == "boot" else 1

    @property
    def target(self) -> int:
        """Background instances at the last point."""
        if self.instances is not None:
            return self.instances
        return self.instances_per_benchmark * (self.benchmark_times or 10)

    def workloads_needed(self) -> list[str]:
        return [w for w in (self.worker, self.background) if w not in ("boot", "sleep")]

    def instance_workloads(self) -> list[str]:
        return ["hello" if self.worker == "boot" else self.worker, self.background]


class IsolationExperiment(_WorkerExperiment, RepeatedExperiment):
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
        return _measuring_worker(v)

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
        _check_params(self.params, [self.worker])
        return self

    def workloads_needed(self) -> list[str]:
        return [self.worker, *(w for a in self.attackers for w in ATTACKERS[a].needs)]

    def instance_workloads(self) -> list[str]:
        if self.attacker_runtime is not None:  # the attackers run there (checked apart)
            return [self.worker]
        return [self.worker, *self.attacker_workloads()]

    def attacker_workloads(self) -> list[str]:
        return [f"attacker {a}" for a in self.attackers]


class MinMemoryExperiment(_WorkerExperiment):
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
        return _measuring_worker(v)

    @model_validator(mode="after")
    def _range(self) -> MinMemoryExperiment:
        _check_params(self.params, [self.workload])
        if self.low_mib >= self.high_mib:
            raise ValueError(f"low_mib: {self.low_mib} is not below high_mib ({self.high_mib})")
        for name in ("low_mib", "high_mib"):
            if getattr(self, name) % self.step_mib:
                raise ValueError(f"{name}: {getattr(self, name)} is not a multiple of step_mib "
                                 f"({self.step_mib})")  # fmt: skip
        return self

    def workloads_needed(self) -> list[str]:
        return [self.workload]

    def instance_workloads(self) -> list[str]:
        return [self.workload]


Experiment = Annotated[
    BootExperiment
    | DensityExperiment
    | ThroughputExperiment
    | ScalabilityExperiment
    | IsolationExperiment
    | MinMemoryExperiment
    | BurstExperiment
    | ExecExperiment
    | PauseExperiment
    | SnapshotExperiment,
    Field(discriminator="type"),
]
EXPERIMENT_TYPES = {
    "boot": BootExperiment,
    "density": DensityExperiment,
    "throughput": ThroughputExperiment,
    "scalability": ScalabilityExperiment,
    "isolation": IsolationExperiment,
    "min_memory": MinMemoryExperiment,
    "burst": BurstExperiment,
    "exec": ExecExperiment,
    "pause": PauseExperiment,
    "snapshot": SnapshotExperiment,
}


# The scalability experiment's final count is given one way or the other.
SCALABILITY_EITHER = {"instances": "benchmark_times", "benchmark_times": "instances"}


def quick_form(table: dict[str, Any], quick: dict[str, Any]) -> dict[str, Any]:
    """An experiment table with its `quick` values in place (params merged per workload)."""
    out = {k: v for k, v in table.items() if k != "quick"}
    for key, value in quick.items():
        if key == "params" and isinstance(value, dict):
            params = {k: dict(v) for k, v in (out.get("params") or {}).items()}
            for name, over in value.items():
                params[name] = {**params.get(name, {}), **(over if isinstance(over, dict) else {})}
            out["params"] = params
        else:
            out[key] = value
            other = SCALABILITY_EITHER.get(key)
            if other and other not in quick:  # the final count is given one way or the other
                out.pop(other, None)
    return out
