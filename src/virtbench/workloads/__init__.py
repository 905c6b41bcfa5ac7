"""Workloads: what runs inside an instance. One module each, found by what it declares.

A module of this package whose `WORKLOAD` is a `Workload` (workloads/kind.py: its fields
say what each part of the contract is) is a workload; nothing lists them. `get(name)` is
one (an alias resolved), `names()` all of them and `measuring()` those that yield
figures, in their declared order. Modules that declare no `WORKLOAD` are what the others
share (kind) or no workload (attackers: the isolation experiment's neighbours).
"""

from __future__ import annotations

import functools

from virtbench import discovery
from virtbench.workloads.kind import Metric, ParseError, Workload, first_line

__all__ = [
    "Metric",
    "ParseError",
    "Workload",
    "canonical",
    "every",
    "first_line",
    "get",
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
