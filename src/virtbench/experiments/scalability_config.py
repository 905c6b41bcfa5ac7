"""The scalability experiment's spec table: its worker and background instances, the
final count (`instances`, or S1's `instances_per_benchmark` x `benchmark_times`), the
measurements at each point and the memory guard (scalability.py runs it)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from virtbench.tables.base import (
    WorkerExperiment,
    check_params,
    measuring_worker,
)


class ScalabilityExperiment(WorkerExperiment):
    """A worker measured alone, then again after every `instances_per_benchmark` more
    idle background instances, up to `instances` (S1's scalability runner). The worker
    is `boot` (a hello instance, spawn to exit) or any workload that yields figures."""

    EITHER: ClassVar[dict[str, str]] = {
        "instances": "benchmark_times",
        "benchmark_times": "instances",
    }

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
        return measuring_worker(v, also=("boot",))

    @model_validator(mode="after")
    def _params(self) -> ScalabilityExperiment:
        check_params(self.params, [] if self.worker == "boot" else [self.worker])
        n, times = self.instances, self.benchmark_times
        if n is not None and times is not None and n != self.instances_per_benchmark * times:
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
