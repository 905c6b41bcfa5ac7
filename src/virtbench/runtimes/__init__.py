"""Runtime registry: names to driver classes, imported lazily.

Adding a runtime is one module plus one line in BUILTIN. Third-party drivers register
through the `virtbench.runtimes` entry-point group (name = "module:Class").

A runtime *label* is a name, optionally with a variant: `docker:crun` is the `docker`
driver with its variant option (`oci_runtime`) set to `crun`. Labels are what specs,
the CLI and every sample use. A spec may also define *named runtimes* of its own on top
of a driver (`[runtime.uk-nginx] driver = "qemu:q35:tcg"`, spec/whole.py): their label is the
name, their driver the label given, and they are used like built-in labels everywhere.

`Drivers` is one such registry: `Drivers.installed()` (built in, plus entry points) is what
virtbench runs with; a caller may hand a spec and its run another (a test's fake driver
under the labels it stands for, `installed().replaced(...)`). The module's functions ask
the installed one.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from virtbench.runtimes.base import Availability, Runtime

BUILTIN: dict[str, str] = {
    "native": "virtbench.runtimes.process.native:Native",
    "runc": "virtbench.runtimes.oci.runc:Runc",
    "crun": "virtbench.runtimes.oci.crun:Crun",
    "youki": "virtbench.runtimes.oci.youki:Youki",
    "runsc": "virtbench.runtimes.oci.runsc:Runsc",
    "docker": "virtbench.runtimes.engines.docker:Docker",
    "podman": "virtbench.runtimes.engines.podman:Podman",
    "cri": "virtbench.runtimes.engines.cri:Cri",
    "lxc": "virtbench.runtimes.lxc.lxc:Lxc",
    "lxd": "virtbench.runtimes.lxc.lxd:Lxd",
    "nspawn": "virtbench.runtimes.process.nspawn:Nspawn",
    "bwrap": "virtbench.runtimes.process.bwrap:Bwrap",
    "wasmtime": "virtbench.runtimes.process.wasmtime:Wasmtime",
    "qemu": "virtbench.runtimes.vm.qemu:Qemu",
    "firecracker": "virtbench.runtimes.vm.firecracker:Firecracker",
    "cloud-hypervisor": "virtbench.runtimes.vm.cloud_hypervisor:CloudHypervisor",
    "solo5-hvt": "virtbench.runtimes.vm.solo5:Solo5Hvt",
    "solo5-spt": "virtbench.runtimes.vm.solo5:Solo5Spt",
}

# a named runtime's name: no colon (not a variant), usable in the names virtbench creates
NAMED_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


def split(label: str) -> tuple[str, str | None]:
    """`docker:crun` -> ("docker", "crun"); `runc` -> ("runc", None)."""
    base, sep, variant = label.partition(":")
    return base, (variant if sep else None)


class Drivers:
    """Runtime names to their driver classes ("module:Class", imported when first asked
    for, or the class itself)."""

    def __init__(self, targets: Mapping[str, str | type[Runtime]]) -> None:
        self.targets = dict(targets)

    @classmethod
    def installed(cls) -> Drivers:
        """The built-in drivers, then those other packages register."""
        found: dict[str, str | type[Runtime]] = dict(BUILTIN)
        for name, value in _registered(tuple(sys.path)):
            found.setdefault(name, value)
        return cls(found)

    def replaced(self, targets: Mapping[str, str | type[Runtime]]) -> Drivers:
        """These drivers with some names standing for other classes (or added)."""
        return Drivers({**self.targets, **targets})

    def names(self) -> list[str]:
        """Every runtime name known (available here or not), without variants."""
        return list(self.targets)

    def get(self, label: str) -> type[Runtime]:
        """The driver class for a name or label (KeyError if the name is unknown)."""
        target = self.targets[split(label)[0]]
        if not isinstance(target, str):
            return target
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def check_label(self, label: str) -> None:
        """Raise ValueError naming what is wrong with a runtime label."""
        base, variant = split(label)
        if base not in self.targets:
            raise ValueError(f"unknown runtime {label!r} (allowed: {', '.join(self.names())})")
        if variant is None:
            return
        cls = self.get(base)
        if cls.variant_option is None:
            raise ValueError(f"runtime {base} has no variants ({label!r})")
        known = dict.fromkeys([*cls.variants, *cls.host_variants()])
        if variant not in known:
            raise ValueError(
                f"unknown variant {label!r} (allowed: "
                + ", ".join(f"{base}:{v}" for v in known)
                + ")"
            )

    def labels(self) -> list[str]:
        """Every name plus every declared variant label (for doctor and error messages)."""
        out = []
        for base in self.names():
            out.append(base)
            try:
                cls = self.get(base)
            except Exception:  # a broken third-party driver is reported by doctor
                continue
            known = dict.fromkeys([*cls.variants, *cls.host_variants()])
            out += [f"{base}:{v}" for v in known if v != cls.default_variant]
        return out

    def availability(self) -> Iterator[tuple[str, Availability | Exception]]:
        """Every label (as `labels`) with whether it can run here, or the exception its
        driver raised on loading (a broken third-party driver must not break doctor)."""
        for name in self.labels():
            try:
                cls = self.get(name)
                yield name, cls.available(cls.Options(**self.options_for(name, {})))
            except Exception as exc:
                yield name, exc

    def options_for(self, label: str, tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Driver options for `label`: `[runtime.<name>]`, then `[runtime."<label>"]`, then
        the variant itself."""
        base, variant = split(label)
        merged: dict[str, Any] = {}
        merged.update(tables.get(base, {}))
        if label != base:
            merged.update(tables.get(label, {}))
        if variant is not None:
            opt = self.get(base).variant_option
            assert opt is not None
            merged[opt] = variant
        return merged

    def create(self, label: str, ctx: Any) -> Runtime:
        """The driver for `label` with just what its variant sets (a spec's runtimes are
        made from its resolved plan: spec/resolved.py)."""
        cls = self.get(label)
        return cls(ctx, cls.Options(**self.options_for(label, {})), label=label)


@functools.lru_cache(maxsize=4)
def _registered(path: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(name, "module:Class") of the drivers other packages register, as found on the
    import path `path` (read once per path: each read scans every installed package)."""
    del path  # the cache's key: a path changed since (a venv activated) is read again
    return tuple((ep.name, ep.value) for ep in entry_points(group="virtbench.runtimes"))


def installed() -> Drivers:
    """The drivers virtbench runs with (other packages' read once per import path)."""
    return Drivers.installed()


def names() -> list[str]:
    """Every installed runtime name (available here or not), without variants."""
    return installed().names()


def get(label: str) -> type[Runtime]:
    """The installed driver class for a name or label (KeyError if unknown)."""
    return installed().get(label)


def check_label(label: str) -> None:
    """Raise ValueError naming what is wrong with a runtime label (installed drivers)."""
    installed().check_label(label)


def labels() -> list[str]:
    """Every installed name plus every declared variant label."""
    return installed().labels()


def availability() -> Iterator[tuple[str, Availability | Exception]]:
    """Every installed label with whether it can run here (`Drivers.availability`)."""
    return installed().availability()


def options_for(label: str, tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Driver options for `label` (`Drivers.options_for`, installed drivers)."""
    return installed().options_for(label, tables)


def create(label: str, ctx: Any) -> Runtime:
    """The installed driver for `label` (`Drivers.create`)."""
    return installed().create(label, ctx)
