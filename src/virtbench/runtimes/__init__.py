"""Runtime registry: names to driver classes, imported lazily.

Adding a runtime is one module plus one line here. Third-party drivers register through
the `virtbench.runtimes` entry-point group (name = "module:Class").

A runtime *label* is a name, optionally with a variant: `docker:crun` is the `docker`
driver with its variant option (`oci_runtime`) set to `crun`. Labels are what specs,
the CLI and every sample use. A spec may also define *named runtimes* of its own on top
of a driver (`[runtime.uk-nginx] driver = "qemu:q35:tcg"`, spec/load.py): their label is the
name, their driver the label given, and they are used like built-in labels everywhere.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from virtbench.runtimes.base import Availability, Runtime

BUILTIN: dict[str, str] = {
    "native": "virtbench.runtimes.native:Native",
    "runc": "virtbench.runtimes.runc:Runc",
    "crun": "virtbench.runtimes.crun:Crun",
    "runsc": "virtbench.runtimes.runsc:Runsc",
    "docker": "virtbench.runtimes.docker:Docker",
    "podman": "virtbench.runtimes.podman:Podman",
    "lxc": "virtbench.runtimes.lxc:Lxc",
    "lxd": "virtbench.runtimes.lxd:Lxd",
    "nspawn": "virtbench.runtimes.nspawn:Nspawn",
    "qemu": "virtbench.runtimes.qemu:Qemu",
    "firecracker": "virtbench.runtimes.firecracker:Firecracker",
    "cloud-hypervisor": "virtbench.runtimes.cloud_hypervisor:CloudHypervisor",
}


def _all() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group="virtbench.runtimes"):
        found.setdefault(ep.name, ep.value)
    return found


def names() -> list[str]:
    """Every runtime name virtbench knows (available here or not), without variants."""
    return list(_all())


def split(label: str) -> tuple[str, str | None]:
    """`docker:crun` -> ("docker", "crun"); `runc` -> ("runc", None)."""
    base, sep, variant = label.partition(":")
    return base, (variant if sep else None)


def get(label: str) -> type[Runtime]:
    """The driver class for a name or label (KeyError if the name is unknown)."""
    target = _all()[split(label)[0]]
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


# a named runtime's name: no colon (not a variant), usable in the names virtbench creates
NAMED_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


def check_label(label: str) -> None:
    """Raise ValueError naming what is wrong with a runtime label."""
    base, variant = split(label)
    if base not in _all():
        raise ValueError(f"unknown runtime {label!r} (allowed: {', '.join(names())})")
    if variant is None:
        return
    cls = get(base)
    if cls.variant_option is None:
        raise ValueError(f"runtime {base} has no variants ({label!r})")
    if variant not in cls.variants:
        raise ValueError(
            f"unknown variant {label!r} (allowed: "
            + ", ".join(f"{base}:{v}" for v in cls.variants)
            + ")"
        )


def labels() -> list[str]:
    """Every name plus every declared variant label (for doctor and error messages)."""
    out = []
    for base in names():
        out.append(base)
        try:
            cls = get(base)
        except Exception:  # a broken third-party driver is reported by doctor
            continue
        out += [f"{base}:{v}" for v in cls.variants if v != cls.default_variant]
    return out


def availability() -> Iterator[tuple[str, Availability | Exception]]:
    """Every label (as `labels`) with whether it can run here, or the exception its driver
    raised on loading (a broken third-party driver must not break doctor)."""
    for name in labels():
        try:
            cls = get(name)
            yield name, cls.available(cls.Options(**options_for(name, {})))
        except Exception as exc:
            yield name, exc


def options_for(label: str, tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Driver options for `label`: `[runtime.<name>]`, then `[runtime."<label>"]`, then the
    variant itself."""
    base, variant = split(label)
    merged: dict[str, Any] = {}
    merged.update(tables.get(base, {}))
    if label != base:
        merged.update(tables.get(label, {}))
    if variant is not None:
        opt = get(base).variant_option
        assert opt is not None
        merged[opt] = variant
    return merged


def create(
    label: str, ctx: Any, options: dict[str, Any] | None = None, driver: str | None = None
) -> Runtime:
    """Instantiate the driver for `label` with its options (e.g. `Spec.options_for(label)`;
    default: just what the label's variant sets). `driver`: the built-in label a named
    runtime stands on (`Spec.driver_of(label)`); default the label itself."""
    cls = get(driver or label)
    opts = options if options is not None else options_for(driver or label, {})
    return cls(ctx, cls.Options(**opts), label=label)
