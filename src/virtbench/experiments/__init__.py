"""Experiment types: one module each, found by what it declares (experiments/kind.py).

A module of this package whose `TYPE` is an `ExperimentType` is a type; nothing lists
them. `get(name)` is one, `types()` all of them in their declared order. Modules that
declare no `TYPE` are the types' shared parts (session, worker, held, ...).
"""

from __future__ import annotations

import functools

from virtbench import discovery
from virtbench.experiments.kind import ExperimentType


@functools.cache
def types() -> tuple[ExperimentType, ...]:
    """Every experiment type, in their declared order."""
    found = discovery.declared(__name__, __path__, "TYPE", ExperimentType)
    return tuple(sorted(found, key=lambda t: (t.order, t.name)))


def names() -> list[str]:
    """Every experiment type's name, in order."""
    return [t.name for t in types()]


def get(name: str) -> ExperimentType:
    """The experiment type `name` (KeyError if there is none)."""
    for t in types():
        if t.name == name:
            return t
    raise KeyError(name)
