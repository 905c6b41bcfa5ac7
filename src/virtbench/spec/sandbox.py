"""The experiment tables of the questions people choosing a sandbox ask, beyond the five
studies: many starts at once (`burst`), a command in a running instance (`exec`), pause
and resume (`pause`), checkpoint and restore (`snapshot`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from virtbench.spec.base import CommonExperiment


class BurstExperiment(CommonExperiment):
    """`levels`: at each, that many instances are launched at the same moment, each timed
    from its own launch call to its ready probe; every level `runs` times."""

    type: Literal["burst"]
    workload: Literal["sleep"] = "sleep"
    levels: list[int] = Field(default=[1, 10, 50, 100], min_length=1)
    runs: int = Field(default=3, ge=1, le=1000)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    settle_s: float = Field(default=1.0, ge=0, le=600)  # after a level's instances are stopped

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        for i, n in enumerate(v):
            if not 1 <= n <= 2000:
                raise ValueError(f"[{i}]: {n} instances at once is outside 1..2000")
        if len(set(v)) != len(v):
            raise ValueError("a level is given twice")
        return sorted(v)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


class ExecExperiment(CommonExperiment):
    """Commands run in an already running instance: `count` times each per repetition,
    one that prints a line and one that writes `stdout_bytes` to standard output."""

    type: Literal["exec"]
    workload: Literal["sleep"] = "sleep"
    runs: int = Field(default=3, ge=1, le=1000)
    count: int = Field(default=50, ge=1, le=100000)
    stdout_bytes: int = Field(default=1 << 20, ge=1, le=1 << 30)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


class PauseExperiment(CommonExperiment):
    """Pause -> hold `hold_s` -> resume -> the next heartbeat, `cycles` times per
    repetition on one instance."""

    type: Literal["pause"]
    workload: Literal["beat"] = "beat"
    runs: int = Field(default=3, ge=1, le=1000)
    cycles: int = Field(default=10, ge=1, le=10000)
    hold_s: float = Field(default=0.2, ge=0.01, le=600)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


class SnapshotExperiment(CommonExperiment):
    """Checkpoint a running instance to disk, then restore it: one fresh instance per
    repetition. `gone_s`: how long after the checkpoint no heartbeat may come."""

    type: Literal["snapshot"]
    workload: Literal["beat"] = "beat"
    runs: int = Field(default=3, ge=1, le=1000)
    gone_s: float = Field(default=0.2, ge=0.01, le=600)
    timeout_s: float = Field(default=300.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]
