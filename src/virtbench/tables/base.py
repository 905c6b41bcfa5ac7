"""What every spec table's model shares: no unknown key, frozen; what every experiment
table may say (`runtimes`, `quick`); adaptive repetition; and how a table's first error
reads."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

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

    # keys given one or the other (a quick form or a flag that sets one drops the other)
    EITHER: ClassVar[dict[str, str]] = {}
    # it runs commands in running instances (exec): a VM boots its Linux guest for them
    RUNS_COMMANDS: ClassVar[bool] = False

    runtimes: list[str] | None = None  # [] where a study skipped every one of them
    quick: dict[str, Any] = {}
    # the labels are checked by the spec (which knows its named runtimes)


class RepeatedExperiment(CommonExperiment):
    """Adaptive repetition: after `runs`, go on until every measured group's CV is at most
    `target_cv` % (and an experiment's own targets are met: `adaptive`) or `max_runs`
    repetitions are done (default ADAPT_FACTOR x runs, at most 1000)."""

    ADAPT_FACTOR: ClassVar[int] = 10
    # what max_runs needs, for its error
    TARGETS: ClassVar[str] = "target_cv (the CV to repeat until)"

    target_cv: float | None = Field(default=None, gt=0, le=100)
    max_runs: int | None = Field(default=None, ge=1, le=100_000)

    @model_validator(mode="after")
    def _adaptive(self) -> RepeatedExperiment:
        runs = getattr(self, "runs", 1)
        if self.max_runs is not None and not self.adaptive():
            raise ValueError(f"max_runs: needs {self.TARGETS}")
        if self.max_runs is not None and self.max_runs < runs:
            raise ValueError(f"max_runs: {self.max_runs} is below runs ({runs})")
        return self

    def adaptive(self) -> bool:
        """Do repetitions go on past `runs` until a target is met?"""
        return self.target_cv is not None

    def run_limit(self) -> int | None:
        """The most repetitions adaptive repetition may do; None when it is off."""
        if not self.adaptive():
            return None
        runs = getattr(self, "runs", 1)
        if self.max_runs is not None:
            return self.max_runs
        return max(runs, min(self.ADAPT_FACTOR * runs, 1000))


def check_params(params: dict[str, dict[str, Any]], names: list[str]) -> None:
    """`[experiment.params.<workload>]` tables: only for this experiment's workloads, and
    valid for the workload's Params model."""
    for name, table in params.items():
        if name not in names:
            these = ", ".join(names) or "none takes params"
            raise ValueError(f"params.{name}: not a workload of this experiment ({these})")
        model = measured(name).params
        try:
            model.model_validate(table)
        except ValidationError as err:
            key, msg = option_error(err, list(model.model_fields))
            raise ValueError(f"params.{name}.{key}: {msg}") from None


def measured(name: str) -> Any:
    """How the workload `name` yields figures (its `measures`: its parameters' model)."""
    from virtbench import workloads

    measures = workloads.get(name).measures
    if measures is None:
        raise ValueError(f"{name} yields no figures and takes no params")
    return measures


def params_for(params: dict[str, dict[str, Any]], name: str) -> Any:
    return measured(name).params.model_validate(params.get(name, {}))


def measuring_worker(v: str, also: tuple[str, ...] = ()) -> str:
    """A worker name: one of `also`, or a workload that yields figures (aliases resolved)."""
    from virtbench import workloads

    v = workloads.canonical(v)
    allowed = [*also, *workloads.measuring()]
    if v not in allowed:
        raise ValueError(f"unknown worker {v!r} (allowed: {', '.join(allowed)})")
    return v


class Measuring(Protocol):
    """What a worker's job reads of the experiment measuring it (WorkerExperiment's, or
    an experiment's of its own, as throughput's)."""

    ready_timeout_s: float
    client_timeout_s: float

    def params_for(self, name: str) -> Any: ...


class WorkerExperiment(CommonExperiment):
    """What experiments that measure a worker share: the worker's parameters and the
    time limits for instances (ready signal), servers (port and readiness) and clients."""

    params: dict[str, dict[str, Any]] = {}
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    ready_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    client_timeout_s: float = Field(default=900.0, gt=0, le=86_400)

    def params_for(self, name: str) -> Any:
        return params_for(self.params, name)


def quick_form(
    table: dict[str, Any], quick: dict[str, Any], either: dict[str, str] | None = None
) -> dict[str, Any]:
    """An experiment table with its `quick` values in place (params merged per workload);
    `either`: the table's pairs of keys given one or the other (its model's EITHER)."""
    out = {k: v for k, v in table.items() if k != "quick"}
    for key, value in quick.items():
        if key == "params" and isinstance(value, dict):
            params = {k: dict(v) for k, v in (out.get("params") or {}).items()}
            for name, over in value.items():
                params[name] = {**params.get(name, {}), **(over if isinstance(over, dict) else {})}
            out["params"] = params
        else:
            out[key] = value
            other = (either or {}).get(key)
            if other and other not in quick:  # the final count is given one way or the other
                out.pop(other, None)
    return out
