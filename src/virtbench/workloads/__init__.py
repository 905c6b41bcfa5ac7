"""Workloads: what runs inside an instance. One module each, found by what it declares.

A module of this package whose `WORKLOAD` is a `Workload` (workloads/kind.py: its fields
say what each part of the contract is) is a workload; nothing lists them. `get(name)` is
one (an alias resolved), `names()` all of them and `measuring()` those that yield
figures, in their declared order. Modules that declare no `WORKLOAD` are what the others
share (kind) or no workload (attackers: the isolation experiment's neighbours).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from virtbench import discovery
from virtbench.workloads.kind import Metric, ParseError, Serves, Workload, first_line

__all__ = [
    "Metric",
    "ParseError",
    "Workload",
    "canonical",
    "every",
    "first_line",
    "get",
    "image_services",
    "measuring",
    "names",
]


@functools.cache
def every() -> tuple[Workload, ...]:
    """Every workload, in their declared order."""
    found = discovery.declared(__name__, __path__, "WORKLOAD", Workload)
    return tuple(sorted(found, key=lambda w: (w.order, w.name)))


@functools.cache
def _by_name() -> dict[str, Workload]:
    """Every workload by its name and by each of its aliases."""
    named = {w.name: w for w in every()}
    aliases = {a: w for w in every() for a in w.aliases}
    return {**aliases, **named}


def names() -> list[str]:
    """Every workload's name, in order."""
    return [w.name for w in every()]


def get(name: str) -> Workload:
    """The workload `name`, or the one it is an alias of (KeyError if there is none)."""
    return _by_name()[name]


def canonical(name: str) -> str:
    """The name of the workload `name` stands for (an alias resolved); any other name as
    given."""
    found = _by_name().get(name)
    return found.name if found is not None else name


def measuring() -> list[str]:
    """Workloads that yield figures (the throughput experiment's): servers a host-side
    client drives, and programs that measure inside the instance and print the result."""
    return [w.name for w in every() if w.measures is not None]


@dataclass(frozen=True)
class ImageService:
    """What an image built elsewhere may serve (`serves = "http"`), as the workloads it
    serves declare it: those workloads, the port it listens on by convention (0: none, an
    image that answers ping), how its readiness is probed, and for a workload whose client
    it answers at some levels only, which (`only`)."""

    workloads: tuple[str, ...]
    port: int
    protocol: str
    only: dict[str, Callable[[Any], bool]] = field(default_factory=dict)

    def answers(self, workload: str, level: Any) -> bool:
        """Whether such an image answers `workload`'s client at `level`."""
        test = self.only.get(workload)
        return test is None or test(level)


@functools.cache
def image_services() -> dict[str, ImageService]:
    """Each kind of service an image may declare, by name, from the workloads that say
    an image may serve them (`Serves.image_serves`)."""
    found: dict[str, list[Serves]] = {}
    names: dict[str, list[str]] = {}
    for w in every():
        if w.serves is not None and w.serves.image_serves:
            found.setdefault(w.serves.image_serves, []).append(w.serves)
            names.setdefault(w.serves.image_serves, []).append(w.name)
    out = {}
    for kind, serves in sorted(found.items()):
        ports = {s.image_port for s in serves}
        port = ports.pop() if len(ports) == 1 else None
        if port is None:
            raise ValueError(f"the workloads an image serving {kind} runs disagree on its port")
        pairs = zip(names[kind], serves, strict=True)
        only = {name: s.image_levels for name, s in pairs if s.image_levels is not None}
        protocol = serves[0].image_protocol or serves[0].protocol
        out[kind] = ImageService(tuple(names[kind]), port, protocol, only)
    return out
