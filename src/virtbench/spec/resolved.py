"""A spec resolved once into what a run does: each runtime label with its driver, merged
options and instance options, each experiment with the runtimes that run it.

Preflight narrows a plan to what this host can run (run/preflight.py), `--plan` and the
catalog estimate its parts (run/plan.py), and the runner creates its drivers and runs its
parts from it (run/runner.py): none of them merges a spec's tables again.

    plan = resolve(spec)                  # the drivers the spec was parsed with
    plan.runtimes["docker:crun"].options  # {"image": ..., "oci_runtime": "crun"}
    plan.parts[0].runtimes                # ("runc", "crun")
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench import experiments
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.runtimes import Drivers, split
from virtbench.spec.runtimes import InstanceOptions, named_options

if TYPE_CHECKING:
    from pydantic import BaseModel

    from virtbench.runtimes.base import Availability, Runtime
    from virtbench.spec.whole import Spec

# the options of a named runtime that name a file its record traces (a kernel, a disk)
FILE_OPTIONS = ("kernel", "initrd", "disk")


@dataclass(frozen=True)
class RuntimePlan:
    """One runtime label of a spec, as its instances will be made."""

    label: str
    driver: str  # the driver's label it stands on: a named runtime's driver, else itself
    cls: type[Runtime]
    options: dict[str, Any]  # the driver's options, merged from the spec's tables
    instance: InstanceOptions  # [instance] with the label's overrides
    named: bool  # defined by the spec (`[runtime.<name>] driver = ...`)
    stands_for: str | None = None  # the guest of the spec's `brings` its table says it is

    @cached_property
    def settings(self) -> BaseModel:
        """The options as the driver's `Options` model validates them."""
        return self.cls.Options(**self.options)

    def available(self) -> Availability:
        """Whether it can run here (the driver's check, with these options)."""
        return self.cls.available(self.settings)

    def cannot_run(self, workload: str) -> str | None:
        """Why it cannot run `workload` (None: it can)."""
        return self.cls.cannot_run(workload, self.settings)

    def create(self, ctx: Any) -> Runtime:
        """Its driver, for one run."""
        return self.cls(ctx, self.settings, label=self.label)

    def record(self) -> dict[str, Any]:
        """What a named runtime stood for, for the run's record: its driver, its options,
        and every file an option names (a kernel, an initrd, a disk) with its size and
        SHA-256, so that a result can be traced to the very image it measured."""
        files = {}
        for key, value in self.options.items():
            if isinstance(value, str) and key in FILE_OPTIONS and Path(value).is_file():
                files[key] = file_record(Path(value))
        return {"driver": self.driver, "options": self.options, "files": files}


@dataclass(frozen=True)
class Part:
    """One experiment of a spec (its `index`-th), with the runtimes that run it."""

    index: int
    experiment: Any  # its table's model (experiments/kind.py)
    runtimes: tuple[str, ...]

    @property
    def type(self) -> str:
        return str(self.experiment.type)

    @property
    def workloads(self) -> list[str]:
        """What its instances run."""
        return list(self.experiment.instance_workloads())

    def estimate(self, runtime: RuntimePlan, known: dict[str, float]) -> Estimate | None:
        """Its cost on `runtime`, as its type models it (None: the type has no model);
        `known`: start + stop seconds per runtime measured here before."""
        model = experiments.get(self.type).estimate
        if model is None:
            return None
        family = runtime.cls.family.value
        typical = runtime.cls.typical_launch_s
        return model(self.experiment, Costs(runtime.label, runtime.driver, known, family, typical))


@dataclass(frozen=True)
class Plan:
    """A whole spec, resolved."""

    spec: Spec
    runtimes: dict[str, RuntimePlan]  # in the spec's order
    parts: tuple[Part, ...]
    drivers: Drivers = field(repr=False)

    def instances(self) -> dict[str, InstanceOptions]:
        """Each runtime's instance options."""
        return {label: r.instance for label, r in self.runtimes.items()}

    def engines(self) -> frozenset[str]:
        """The runtime names its runtimes' drivers stand on: the engines that can hold
        what the run makes (its sweeps ask no other)."""
        return frozenset(split(r.driver)[0] for r in self.runtimes.values())

    def narrowed(self, spec: Spec) -> Plan:
        """This plan for `spec`, the same spec with fewer runtimes or experiments naming
        fewer (what preflight keeps): its runtimes' resolutions are kept as they are."""
        kept = {label: self.runtimes[label] for label in spec.runtimes}
        return Plan(spec, kept, parts_of(spec), self.drivers)


def resolve(spec: Spec, drivers: Drivers | None = None) -> Plan:
    """`spec` resolved, its runtimes made by `drivers` (default: those it was parsed
    with)."""
    drivers = drivers if drivers is not None else spec.drivers
    tables = {k: dict(t.model_extra or {}) for k, t in spec.runtime.items()}
    named = spec.named
    runtimes = {}
    for label in spec.runtimes:
        driver = named.get(label, label)
        runtimes[label] = RuntimePlan(
            label=label,
            driver=driver,
            cls=drivers.get(driver),
            options=named_options(label, named.get(label), tables, drivers),
            instance=instance_options(spec, label, driver),
            named=label in named,
            stands_for=table.stands_for if (table := spec.runtime.get(label)) else None,
        )
    return Plan(spec, runtimes, parts_of(spec), drivers)


def parts_of(spec: Spec) -> tuple[Part, ...]:
    """Each experiment with the runtimes that run it: the spec's, or those of them it
    names."""
    out = []
    for i, exp in enumerate(spec.experiment):
        chosen = (
            spec.runtimes
            if exp.runtimes is None
            else [r for r in spec.runtimes if r in exp.runtimes]
        )
        out.append(Part(i, exp, tuple(chosen)))
    return tuple(out)


def instance_options(spec: Spec, label: str, driver: str) -> InstanceOptions:
    """[instance] with the runtime's overrides applied ([runtime.<name>], then the label's
    own table, e.g. [runtime."docker:crun"]; a named runtime: its driver's, then its
    own)."""
    opts = spec.instance
    for key in dict.fromkeys((split(driver)[0], driver, label)):
        over = spec.runtime.get(key)
        if over is not None:
            fields = over.model_dump(include=set(InstanceOptions.model_fields))
            opts = opts.model_copy(update={k: v for k, v in fields.items() if v is not None})
    return opts


def file_record(path: Path) -> dict[str, Any]:
    """A file's resolved path, size and SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return {"path": str(path.resolve()), "bytes": path.stat().st_size, "sha256": digest.hexdigest()}
