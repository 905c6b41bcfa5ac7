"""Experiment specs: TOML files validated into typed models.

A spec names the runtimes, instance options (with per-runtime overrides) and one or
more experiments. Unknown keys, unknown runtimes and out-of-range values are rejected
with one line that names the file, the field and what is allowed.

    name = "quickstart"
    runtimes = ["native", "runc", "crun"]
    [instance]                # defaults for every instance
    network = "none"          # none | host | bridge (native always uses the host's)
    [runtime.runc]            # overrides for one runtime
    network = "host"
    [[experiment]]
    type = "boot"
    runs = 10
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from virtbench import runtimes
from virtbench.errors import SpecError
from virtbench.measure.topology import PLACEMENTS
from virtbench.workloads.attackers import ATTACKERS, S1_ATTACKERS

CPUSET_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InstanceOptions(_Model):
    """Resources and network of every instance (fields left unset keep the default)."""

    network: Literal["none", "host", "bridge"] = "none"
    memory_mib: int | None = Field(default=None, ge=4, le=1 << 20)
    cpus: str | None = None
    pids_limit: int | None = Field(default=None, ge=1, le=1 << 22)

    @field_validator("cpus")
    @classmethod
    def _cpuset(cls, v: str | None) -> str | None:
        if v is not None and not CPUSET_RE.match(v):
            raise ValueError("must be a cpuset list like '0' or '0-1,3'")
        return v


class RuntimeOptions(_Model):
    """Per-runtime overrides of [instance], plus the driver's own options (e.g. docker's
    `oci_runtime`, runsc's `platform`), which the driver's `Options` model validates."""

    model_config = ConfigDict(extra="allow", frozen=True)

    network: Literal["none", "host", "bridge"] | None = None
    memory_mib: int | None = Field(default=None, ge=4, le=1 << 20)
    cpus: str | None = None
    pids_limit: int | None = Field(default=None, ge=1, le=1 << 22)

    _cpuset = field_validator("cpus")(InstanceOptions._cpuset.__func__)  # type: ignore[attr-defined]


class _Repeated(_Model):
    """Adaptive repetition: after `runs`, go on until every measured group's CV is at most
    `target_cv` % or `max_runs` repetitions are done (default 10 x runs, at most 1000)."""

    target_cv: float | None = Field(default=None, gt=0, le=100)
    max_runs: int | None = Field(default=None, ge=1, le=100_000)

    @model_validator(mode="after")
    def _adaptive(self) -> _Repeated:
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


class BootExperiment(_Repeated):
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


class DensityExperiment(_Model):
    """Start idle instances one after another up to `instances`; memory after each."""

    type: Literal["density"]
    workload: Literal["sleep"] = "sleep"
    instances: int = Field(default=50, ge=1, le=100_000)
    runs: int = Field(default=1, ge=1, le=1000)
    instances_per_benchmark: int = Field(default=10, ge=1, le=100_000)
    guard_available_pct: float = Field(default=10.0, ge=0, le=90)
    guard_available_mib: int = Field(default=1024, ge=0)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


class ThroughputExperiment(_Repeated):
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


class _WorkerExperiment(_Model):
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
    measurements_per_point: int = Field(default=1, ge=1, le=1000)
    warmups: int = Field(default=1, ge=0, le=100)
    settle_s: float = Field(default=1.0, ge=0, le=600)
    guard_available_pct: float = Field(default=10.0, ge=0, le=90)
    guard_available_mib: int = Field(default=1024, ge=0)

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
    def target(self) -> int:
        """Background instances at the last point."""
        if self.instances is not None:
            return self.instances
        return self.instances_per_benchmark * (self.benchmark_times or 10)

    def workloads_needed(self) -> list[str]:
        return [w for w in (self.worker, self.background) if w not in ("boot", "sleep")]

    def instance_workloads(self) -> list[str]:
        return ["hello" if self.worker == "boot" else self.worker, self.background]


class IsolationExperiment(_WorkerExperiment, _Repeated):
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
        return [self.worker, *(f"attacker {a}" for a in self.attackers)]


Experiment = Annotated[
    BootExperiment
    | DensityExperiment
    | ThroughputExperiment
    | ScalabilityExperiment
    | IsolationExperiment,
    Field(discriminator="type"),
]
EXPERIMENT_TYPES = {
    "boot": BootExperiment,
    "density": DensityExperiment,
    "throughput": ThroughputExperiment,
    "scalability": ScalabilityExperiment,
    "isolation": IsolationExperiment,
}


class Spec(_Model):
    """A whole spec file."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str = ""
    runtimes: list[str] = Field(min_length=1)
    instance: InstanceOptions = InstanceOptions()
    runtime: dict[str, RuntimeOptions] = {}
    experiment: list[Experiment] = Field(min_length=1)
    # The host sampler's period (CPU idle %, MemAvailable %, swap free % as time series);
    # at 0.1 s (10 Hz) it costs under 1% of one core (bench/sampler_cpu.py).
    sample_interval_s: float = Field(default=1.0, ge=0.1, le=60)

    @field_validator("runtimes")
    @classmethod
    def _known_runtimes(cls, v: list[str]) -> list[str]:
        for i, label in enumerate(v):
            try:
                runtimes.check_label(label)
            except ValueError as exc:
                raise ValueError(f"[{i}] {exc}") from None
        if len(set(v)) != len(v):
            raise ValueError("lists a runtime twice")
        return v

    @field_validator("runtime")
    @classmethod
    def _known_runtime_tables(cls, v: dict[str, RuntimeOptions]) -> dict[str, RuntimeOptions]:
        for label, table in v.items():
            try:
                runtimes.check_label(label)
            except ValueError as exc:
                raise ValueError(f".{label} {exc}") from None
            driver = runtimes.get(label)
            extra = dict(table.model_extra or {})
            try:
                driver.Options.model_validate(runtimes.options_for(label, {label: extra}))
            except ValidationError as err:
                allowed = [*RuntimeOptions.model_fields, *driver.Options.model_fields]
                key, msg = option_error(err, allowed)
                raise ValueError(f".{label}.{key} {msg}") from None
        return v

    def options_for(self, label: str) -> dict[str, Any]:
        """The driver options of `label` (tables for its name and its label, then variant)."""
        tables = {k: dict(t.model_extra or {}) for k, t in self.runtime.items()}
        return runtimes.options_for(label, tables)

    def instance_for(self, runtime: str) -> InstanceOptions:
        """[instance] with the runtime's overrides applied ([runtime.<name>], then the
        label's own table, e.g. [runtime."docker:crun"])."""
        opts = self.instance
        base = runtimes.split(runtime)[0]
        for key in dict.fromkeys((base, runtime)):
            over = self.runtime.get(key)
            if over is not None:
                fields = over.model_dump(include=set(RuntimeOptions.model_fields))
                opts = opts.model_copy(update={k: v for k, v in fields.items() if v is not None})
        return opts


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class a validation error location points into (for 'allowed' keys)."""
    model: type[BaseModel] | None = Spec
    i = 0
    while model is not None and i < len(loc) - 1:
        key = loc[i]
        if model is Spec and key == "experiment":
            model = EXPERIMENT_TYPES.get(loc[i + 2]) if len(loc) > i + 2 else None
            i += 3
        elif model is Spec and key == "instance":
            model, i = InstanceOptions, i + 1
        elif model is Spec and key == "runtime":
            model, i = RuntimeOptions, i + 2
        else:
            return None
    return model


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    skip_tag = False
    for part in loc:
        if skip_tag:
            skip_tag = False
            if part in EXPERIMENT_TYPES:
                continue
        if isinstance(part, int):
            out += f"[{part}]"
            skip_tag = True
        else:
            out += ("." if out else "") + str(part)
    return out


def describe(err: ValidationError, where: str) -> str:
    """One line for the first error: `<where>: <field>: <problem>`."""
    e = err.errors()[0]
    loc = tuple(e["loc"])
    field = _format_loc(loc)
    if e["type"] == "extra_forbidden":
        model = _model_at(loc)
        allowed = f" (allowed: {', '.join(model.model_fields)})" if model else ""
        msg = f"unknown key{allowed}"
    elif e["type"] == "union_tag_invalid":
        msg = f"unknown experiment type (allowed: {', '.join(EXPERIMENT_TYPES)})"
    elif e["type"] == "union_tag_not_found":
        msg = f"missing 'type' (allowed: {', '.join(EXPERIMENT_TYPES)})"
    elif e["type"] == "literal_error":
        msg = f"got {e.get('input')!r}, expected {e['ctx']['expected']}"
    else:
        msg = e["msg"].removeprefix("Value error, ")
        if msg.startswith(("[", ".")):  # validator pointing inside the field
            field, msg = field + msg.split(" ", 1)[0], msg.split(" ", 1)[1]
    return f"{where}: {field}: {msg}" if field else f"{where}: {msg}"


def parse(data: dict[str, Any], where: str) -> Spec:
    try:
        return Spec.model_validate(data)
    except ValidationError as err:
        raise SpecError(describe(err, where)) from None


def catalog_names() -> list[str]:
    files = resources.files("virtbench.catalog")
    return sorted(p.name.removesuffix(".toml") for p in files.iterdir() if p.name.endswith(".toml"))


def load(name_or_path: str) -> tuple[Spec, dict[str, Any], str]:
    """Load a spec file, or a catalog entry by name. Returns (spec, raw dict, where)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise SpecError(f"{name_or_path}: no such spec file")
        where = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(f"{where}: cannot read ({exc.strerror})") from None
        except UnicodeDecodeError as exc:
            raise SpecError(
                f"{where}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
            ) from None
    elif name_or_path in catalog_names():
        res = resources.files("virtbench.catalog") / f"{name_or_path}.toml"
        text, where = res.read_text(encoding="utf-8"), f"catalog/{name_or_path}.toml"
    else:
        raise SpecError(
            f"{name_or_path}: not a spec file or catalog entry "
            f"(catalog: {', '.join(catalog_names())})"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: {exc}") from None
    return parse(data, where), data, where


# CLI flag -> experiment field it overrides (--step and --max are the scalability
# experiment's words for the same fields).
FLAG_FIELDS = {
    "--runs": "runs",
    "--warmups": "warmups",
    "--benchmark-times": "benchmark_times",
    "--instances-per-benchmark": "instances_per_benchmark",
    "--step": "instances_per_benchmark",
    "--instances": "instances",
    "--max": "instances",
    "--workloads": "workloads",
    "--worker": "worker",
    "--background": "background",
    "--attackers": "attackers",
    "--placements": "placements",
    "--target-cv": "target_cv",
    "--max-runs": "max_runs",
}


# The scalability experiment's final count is given one way or the other.
SCALABILITY_EITHER = {"instances": "benchmark_times", "benchmark_times": "instances"}


def flags_set(flags: dict[str, Any], field: str) -> bool:
    """Whether any CLI flag for `field` was given."""
    return any(v is not None for f, v in flags.items() if FLAG_FIELDS[f] == field)


def with_overrides(
    data: dict[str, Any], where: str, runtimes_: list[str] | None, flags: dict[str, Any]
) -> Spec:
    """Apply CLI flags to the raw spec and validate again; errors name the flag."""
    data = {**data, "experiment": [dict(e) for e in data.get("experiment", [])]}
    if runtimes_ is not None:
        data["runtimes"] = runtimes_
    for flag, value in flags.items():
        if value is None:
            continue
        field = FLAG_FIELDS[flag]
        targets = [
            e
            for e in data["experiment"]
            if field in EXPERIMENT_TYPES.get(e.get("type", ""), BootExperiment).model_fields
        ]
        if not targets:
            kinds = sorted(k for k, m in EXPERIMENT_TYPES.items() if field in m.model_fields)
            raise SpecError(f"{flag}: does not apply to this spec (applies to: {', '.join(kinds)})")
        for e in targets:
            e[field] = value
            if field in ("worker", "workloads") and isinstance(e.get("params"), dict):
                from virtbench import workloads

                # the file's parameters of workloads the flag leaves out go with them
                names = value if isinstance(value, list) else [value]
                keep = {workloads.ALIASES.get(v, v) for v in names if isinstance(v, str)}
                if "all" not in keep:
                    e["params"] = {k: v for k, v in e["params"].items() if k in keep}
            other = SCALABILITY_EITHER.get(field)
            if e.get("type") == "scalability" and other and not flags_set(flags, other):
                e.pop(other, None)  # the command line's final count wins over the file's
    try:
        return Spec.model_validate(data)
    except ValidationError as err:
        line = describe(err, where)
        for flag, field in FLAG_FIELDS.items():
            m = re.search(rf"[.\s]{field}(\[\d+\])?: (.*)$", line)
            if flags.get(flag) is not None and m:
                index = f"{m.group(1)} " if m.group(1) else ""
                raise SpecError(f"{flag}: {index}{m.group(2)}") from None
        if runtimes_ is not None and ": runtimes" in line:
            raise SpecError(f"--runtimes: {line.split(': ', 2)[-1]}") from None
        raise SpecError(line) from None
