"""The isolation experiment's spec table: its worker, attackers and placements, how many
repetitions (and the CI target they adapt to), and its baseline (isolation.py runs it)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from virtbench.measure.topology import PLACEMENTS, Placement
from virtbench.tables.base import (
    RepeatedExperiment,
    WorkerExperiment,
    check_params,
    measuring_worker,
)
from virtbench.workloads import attackers
from virtbench.workloads.attackers import ATTACKERS, S1_ATTACKERS


class IsolationExperiment(WorkerExperiment, RepeatedExperiment):
    """A worker pinned to one CPU, measured alone and next to each attacker at each
    placement (S1's performance isolation); slowdown against the alone measurements."""

    type: Literal["isolation"]
    worker: str = "sqlite"
    attackers: list[str] = Field(default=list(S1_ATTACKERS), min_length=1)
    placements: list[Placement] = Field(default=list(PLACEMENTS), min_length=1)
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
    # repetitions go on until every slowdown's 95% CI is at most this many percentage
    # points wide, or max_runs (default 3 x runs) are done (isolation_precision.py);
    # 0: off, `runs` repetitions
    ci_target_pct: float = Field(default=10, ge=0, le=1000)
    # the worker's measurements alone, per runtime, before any attack: is its spread
    # narrow enough for the target? (0: no check)
    pilot: int = Field(default=5, ge=0, le=100)
    # what the attacked figures are compared with: the worker alone on an idle host, or
    # alone with a spinner (the cpu attacker) on every CPU outside its core, so that a
    # host whose idle states or frequency favour a busy machine favours both sides
    baseline: Literal["idle", "busy"] = "idle"

    ADAPT_FACTOR: ClassVar[int] = 3
    TARGETS: ClassVar[str] = "target_cv or ci_target_pct (what to repeat until)"

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

    def adaptive(self) -> bool:
        return self.target_cv is not None or self.ci_target_pct > 0

    def workloads_needed(self) -> list[str]:
        return [self.worker, *(w for a in self.attackers for w in ATTACKERS[a].needs)]

    def instance_workloads(self) -> list[str]:
        if self.attacker_runtime is not None:  # the attackers run there (checked apart)
            return [self.worker]
        return [self.worker, *self.attacker_workloads()]

    def attacker_workloads(self) -> list[str]:
        spinner = ["cpu"] if self.baseline == "busy" and "cpu" not in self.attackers else []
        return [attackers.workload_name(a) for a in [*self.attackers, *spinner]]
