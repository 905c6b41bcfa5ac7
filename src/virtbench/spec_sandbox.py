"""The experiment tables of the questions people choosing a sandbox ask, beyond the five
studies: many starts at once (`burst`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from virtbench.spec_base import _Common


class BurstExperiment(_Common):
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
