"""A spec's `[instance]` and `[runtime.<name>]` tables, and the runtimes a spec names of its
own (`[runtime.uk-nginx] driver = "qemu:q35:tcg"`): their names, drivers and options."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from virtbench import runtimes
from virtbench.runtimes import Drivers
from virtbench.tables.base import Model, option_error

CPUSET_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def cpuset(v: str | None) -> str | None:
    """`cpus` as given: a cpuset list, or none (ValueError: neither)."""
    if v is not None and not CPUSET_RE.match(v):
        raise ValueError("must be a cpuset list like '0' or '0-1,3'")
    return v


class InstanceOptions(Model):
    """Resources and network of every instance (fields left unset keep the default)."""

    network: Literal["none", "host", "bridge"] = "none"
    memory_mib: int | None = Field(default=None, ge=4, le=1 << 20)
    cpus: str | None = None
    pids_limit: int | None = Field(default=None, ge=1, le=1 << 22)

    _cpuset = field_validator("cpus")(cpuset)


class RuntimeOptions(Model):
    """Per-runtime overrides of [instance], plus the driver's own options (e.g. docker's
    `oci_runtime`, runsc's `platform`), which the driver's `Options` model validates.
    With `driver` (a built-in label), the table defines a named runtime of its own: its
    options are the driver's tables' ([runtime.qemu], [runtime."qemu:q35"]), then its own."""

    model_config = ConfigDict(extra="allow", frozen=True)

    driver: str | None = None
    # the guest of the spec's `brings` this runtime is, where its preset or driver does
    # not say it (an image that reads its address elsewhere): `stands_for = "includeos"`
    stands_for: str | None = None

    network: Literal["none", "host", "bridge"] | None = None
    memory_mib: int | None = Field(default=None, ge=4, le=1 << 20)
    cpus: str | None = None
    pids_limit: int | None = Field(default=None, ge=1, le=1 << 22)

    _cpuset = field_validator("cpus")(cpuset)


def check_tables(v: dict[str, RuntimeOptions], drivers: Drivers) -> None:
    """Every `[runtime.X]` table: X is a driver's label, or a named runtime's name with a
    `driver`; its options are valid for its driver (ValueError naming the key)."""
    tables = {k: dict(t.model_extra or {}) for k, t in v.items()}
    for label, table in v.items():
        try:
            if table.driver is not None:
                check_named(label, table.driver, drivers)
            else:
                drivers.check_label(label)
        except ValueError as exc:
            raise ValueError(f".{label} {exc}") from None
        driver = table.driver or label
        cls_ = drivers.get(driver)
        opt = cls_.variant_option
        if table.driver and runtimes.split(driver)[1] and opt in (table.model_extra or {}):
            raise ValueError(f".{label}.{opt} is set by its driver {driver!r}")
        opts = named_options(label, table.driver, tables, drivers)
        try:
            cls_.Options.model_validate(opts)
        except ValidationError as err:
            allowed = list(
                dict.fromkeys([*RuntimeOptions.model_fields, *cls_.Options.model_fields])
            )
            key, msg = option_error(err, allowed)
            raise ValueError(f".{label}.{key} {msg}") from None


def check_named(name: str, driver: str, drivers: Drivers) -> None:
    """A named runtime's name and the built-in label it stands on."""
    if not runtimes.NAMED_RE.match(name):
        raise ValueError(
            "is not a runtime name: lowercase letters, digits and '-', "
            "starting with a letter, at most 32"
        )
    if name in drivers.names():
        raise ValueError(f"is a built-in runtime: give the runtime on {driver} a name of its own")
    try:
        drivers.check_label(driver)
    except ValueError as exc:
        raise ValueError(f"driver {driver!r}: {exc}") from None


def named_options(
    label: str, driver: str | None, tables: dict[str, dict[str, Any]], drivers: Drivers
) -> dict[str, Any]:
    """Driver options: a driver label's (`Drivers.options_for`), or a named runtime's:
    its driver's, then its own table's."""
    if driver is None:
        return drivers.options_for(label, tables)
    merged = drivers.options_for(driver, tables)
    merged.update(tables.get(label, {}))
    variant = runtimes.split(driver)[1]
    if variant is not None:  # the driver label's variant (its table may not say another)
        merged[str(drivers.get(driver).variant_option)] = variant
    return merged
