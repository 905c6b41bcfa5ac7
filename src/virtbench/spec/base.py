"""What every spec table's model shares: no unknown key, frozen; what every experiment
table may say (`runtimes`, `quick`); adaptive repetition; and how a table's first error
reads."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


def option_error(err: ValidationError, allowed: list[str]) -> tuple[str, str]:
    """(dotted key, message) of the first error in a table validated by a model of its
    own (a driver's Options, a workload's Params); `allowed` names the keys it takes."""
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"])
    if e["type"] == "extra_forbidden":
        return key, f"unknown key (allowed: {', '.join(allowed)})"
    if e["type"] == "literal_error":
        return key, f"got {e.get('input')!r}, expected {e['ctx']['expected']}"
    return key, e["msg"].removeprefix("Value error, ")


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommonExperiment(Model):
    """What every experiment table may say besides its own fields.

    runtimes   only these of the spec's runtimes run this experiment (a study's parts
               that apply to some of its systems); the rest skip it
    quick      field values `virtbench run --quick` puts in place of the table's: every
               step kept, counts and durations shrunk (a `params` table merges per key)
    """

    runtimes: list[str] | None = None  # [] where a study skipped every one of them
    quick: dict[str, Any] = {}
    # the labels are checked by the spec (which knows its named runtimes)


class RepeatedExperiment(CommonExperiment):
    """Adaptive repetition: after `runs`, go on until every measured group's CV is at most
    `target_cv` % or `max_runs` repetitions are done (default 10 x runs, at most 1000)."""

    target_cv: float | None = Field(default=None, gt=0, le=100)
    max_runs: int | None = Field(default=None, ge=1, le=100_000)

    @model_validator(mode="after")
    def _adaptive(self) -> RepeatedExperiment:
        runs = getattr(self, "runs", 1)
        if self.max_runs is not None and self.target_cv is None:
            raise ValueError("max_runs: needs target_cv (the CV to repeat until)")
        if self.max_runs is not None and self.max_runs < runs:
            raise ValueError(f"max_runs: {self.max_runs} is below runs ({runs})")
        return self

    def run_limit(self) -> int | None:
        """The most repetitions adaptive repetition may do; None when it is off."""
        if self.target_cv is None:
            return None
        runs = getattr(self, "runs", 1)
        return self.max_runs if self.max_runs is not None else max(runs, min(10 * runs, 1000))
