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
    [runtime.uk-nginx]        # a named runtime: a driver with options of its own
    driver = "qemu:q35:tcg"
    guest = "image"
    [[experiment]]
    type = "boot"
    runs = 10
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from virtbench import experiments, runtimes
from virtbench.errors import SpecError
from virtbench.runtimes import Drivers
from virtbench.spec import brings as brought
from virtbench.spec.runtimes import InstanceOptions, RuntimeOptions, check_tables
from virtbench.tables.base import CommonExperiment, Model, option_error, quick_form

__all__ = [
    "EXPERIMENT_TYPES",
    "Experiment",
    "InstanceOptions",
    "RuntimeOptions",
    "Spec",
    "load",
    "option_error",
    "parse",
]

# Every experiment type's table model by its name, in the types' order: each type declares
# its own (experiments/kind.py).
EXPERIMENT_TYPES: dict[str, type[BaseModel]] = {t.name: t.config for t in experiments.types()}
if TYPE_CHECKING:  # the union below is made at run time: to a checker, what all its tables are
    Experiment: TypeAlias = CommonExperiment
else:
    Experiment = Annotated[Union[tuple(EXPERIMENT_TYPES.values())], Field(discriminator="type")]  # noqa: UP007


class Loadgen(Model):
    """The host the serving workloads' clients run on (`virtbench run --loadgen HOST`):
    an ssh destination (`[user@]host`, or a Host of ~/.ssh/config) and ssh's `-o`
    options for it (`IdentityFile=/root/.ssh/lg`, `Port=2222`)."""

    host: str = Field(pattern=r"^[A-Za-z0-9_.@:%\[\]-]{1,253}$")
    ssh_options: list[Annotated[str, Field(pattern=r"^[A-Za-z]+[= ]\S.*$")]] = []


class Spec(Model):
    """A whole spec file."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str = ""
    # the published study a catalog entry re-runs (authors, title, year), and the code
    # names it is also known by (`virtbench run uk_ng_s` is a part of it)
    study: str = ""
    aliases: list[str] = []
    # the guests the study compared that the user brings as images (spec/brings.py): a
    # run records each that no runtime of it stands for as not run, and says why
    brings: list[brought.Brought] = []
    # a runtime this host cannot run (or cannot run one experiment's workload in):
    # "fail" before anything starts, or "skip" it there and say what and why
    unavailable: Literal["fail", "skip"] = "fail"
    # "quick": `virtbench run --quick` put each experiment's `quick` values in place
    form: Literal["full", "quick"] = "full"
    # the report's DESMET scores: a feature's importance by pattern on its name (fnmatch,
    # first match wins, default 1), e.g. {"boot.*" = 2, "*tps*" = 3}
    desmet_weights: dict[str, float] = {}
    # a sysctl profile for the run's host, instances and guests (host/sysctl.py), e.g.
    # {"net.core.somaxconn" = 1024, "net.ipv4.ip_local_port_range" = "1024 65535"}
    sysctl: dict[str, str] = {}
    runtimes: list[str] = Field(min_length=1)
    instance: InstanceOptions = InstanceOptions()
    runtime: dict[str, RuntimeOptions] = {}
    experiment: list[Experiment] = Field(min_length=1)
    # The host sampler's period (CPU idle %, MemAvailable %, swap free % as time series);
    # at 0.1 s (10 Hz) it costs under 1% of one core (bench/sampler_cpu.py).
    sample_interval_s: float = Field(default=1.0, ge=0.1, le=60)
    # Each timed launch waits for a quiet host first (measure/quiet.py); off: launches
    # follow one another at once (what the previous one left may slow the next).
    quiescence: bool = True
    # Seeds the order runtimes are measured in (experiments/order.py); default: derived
    # from the run id.
    order_seed: int | None = Field(default=None, ge=0, le=2**32 - 1)
    # where the serving workloads' clients run: this host (none), or a load generator
    # of their own reached over ssh (loadgen/remote.py)
    loadgen: Loadgen | None = None
    # the drivers its runtime labels were checked against (`parse(..., drivers)`; default
    # the installed ones): what its resolved plan creates its runtimes with
    _drivers: Drivers | None = PrivateAttr(default=None)

    @field_validator("runtimes")
    @classmethod
    def _once(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists a runtime twice")
        return v

    @field_validator("runtime")
    @classmethod
    def _known_runtime_tables(
        cls, v: dict[str, RuntimeOptions], info: ValidationInfo
    ) -> dict[str, RuntimeOptions]:
        check_tables(v, drivers_in(info))
        return v

    @field_validator("brings")
    @classmethod
    def _brings(cls, v: list[brought.Brought], info: ValidationInfo) -> list[brought.Brought]:
        brought.check(v, drivers_in(info))
        return v

    @field_validator("sysctl", mode="before")
    @classmethod
    def _sysctl(cls, v: object) -> object:
        from virtbench.host.sysctl import KEY, normal

        if not isinstance(v, dict):
            return v
        for key, value in v.items():
            if not isinstance(key, str) or not KEY.match(key):
                raise ValueError(f".{key} is not a sysctl key like net.core.somaxconn")
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise ValueError(f".{key} {value!r}: give a number or a string")
        return {k: normal(val) for k, val in v.items()}

    @field_validator("desmet_weights")
    @classmethod
    def _weights(cls, v: dict[str, float]) -> dict[str, float]:
        for pattern, w in v.items():
            if not 0 <= w <= 1000:
                raise ValueError(f".{pattern} {w:g} is not a weight in 0..1000")
        return v

    @model_validator(mode="after")
    def _known_labels(self, info: ValidationInfo) -> Spec:
        """Every runtime named (in `runtimes` and in experiments' `runtimes`) is a driver's
        label or one the spec defines."""
        self._drivers = drivers_in(info)
        for i, label in enumerate(self.runtimes):
            try:
                self.check_label(label)
            except ValueError as exc:
                raise ValueError(f"runtimes[{i}]: {exc}") from None
        for j, exp in enumerate(self.experiment):
            for i, label in enumerate(exp.runtimes or []):
                try:
                    self.check_label(label)
                except ValueError as exc:
                    raise ValueError(f"experiment[{j}].runtimes[{i}]: {exc}") from None
            other = getattr(exp, "attacker_runtime", None)
            if other is not None and other not in self.runtimes:
                raise ValueError(
                    f"experiment[{j}].attacker_runtime: {other!r} is not one of "
                    f"runtimes ({', '.join(self.runtimes)})"
                )
        return self

    @model_validator(mode="after")
    def _stands_for(self) -> Spec:
        """A runtime's `stands_for` names a guest the spec brings."""
        brought.check_stands_for(self.runtime, self.brings)
        return self

    @model_validator(mode="after")
    def _quick_valid(self) -> Spec:
        """Each experiment's `quick` table yields a valid experiment too (checked here,
        so a catalog entry's --quick form cannot fail only when used)."""
        for i, exp in enumerate(self.experiment):
            if not exp.quick:
                continue
            try:
                data = quick_form(exp.model_dump(exclude={"quick"}), exp.quick, type(exp).EITHER)
                type(exp).model_validate(data)
            except ValidationError as err:
                e = err.errors()[0]
                where = ".".join(str(p) for p in e["loc"])
                msg = e["msg"].removeprefix("Value error, ")
                raise ValueError(f"experiment[{i}].quick.{where}: {msg}") from None
        return self

    @property
    def drivers(self) -> Drivers:
        """The drivers this spec's labels were checked against."""
        assert self._drivers is not None, "a Spec comes from parse() or model_validate()"
        return self._drivers

    @property
    def named(self) -> dict[str, str]:
        """The spec's named runtimes: name -> the built-in label it stands on."""
        return {k: t.driver for k, t in self.runtime.items() if t.driver is not None}

    def check_label(self, label: str) -> None:
        """Raise ValueError naming what is wrong with `label` in this spec."""
        if label in self.named:
            return
        try:
            self.drivers.check_label(label)
        except ValueError as exc:
            if self.named and runtimes.NAMED_RE.match(label):
                raise ValueError(f"{exc}; named runtimes here: {', '.join(self.named)}") from None
            raise


def drivers_in(info: ValidationInfo) -> Drivers:
    """The drivers a validation checks labels against: its context's `drivers`, else the
    installed ones."""
    given = (info.context or {}).get("drivers")
    return given if given is not None else Drivers.installed()


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
        elif model is Spec and key == "brings":
            model, i = brought.Brought, i + 2
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
    text = f"{where}: {field}: {msg}" if field else f"{where}: {msg}"
    # a key or value of the user's may hold a line break: the error stays one line
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def parse(data: dict[str, Any], where: str, drivers: Drivers | None = None) -> Spec:
    """`data` as a Spec, its runtime labels checked against `drivers` (default: the
    installed ones); SpecError in one line naming `where`."""
    try:
        return Spec.model_validate(data, context={"drivers": drivers})
    except ValidationError as err:
        raise SpecError(describe(err, where)) from None


def catalog_names() -> list[str]:
    files = resources.files("virtbench.catalog")
    return sorted(p.name.removesuffix(".toml") for p in files.iterdir() if p.name.endswith(".toml"))


def load(name_or_path: str) -> tuple[Spec, dict[str, Any], str]:
    """Load a spec file, or a catalog entry by name. Returns (spec, raw dict, where)."""
    path = Path(name_or_path)
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long for a path, say: not a file
        raise SpecError(
            f"{name_or_path[:60]}...: not a spec file or a catalog entry ({exc.strerror})"
        ) from None
    if path.suffix == ".toml" or exists:
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
