"""Experiment procedures: one module per experiment type, each with `run(session, config)`
and optionally `check(session, config)`, which the runner calls for every experiment of the
spec before the first sample is taken (a spec that cannot run fails with nothing measured)."""

from __future__ import annotations

import importlib
from types import ModuleType

BUILTIN = {
    "boot": "virtbench.experiments.boot",
    "density": "virtbench.experiments.density",
    "throughput": "virtbench.experiments.throughput",
    "scalability": "virtbench.experiments.scalability",
    "isolation": "virtbench.experiments.isolation",
    "min_memory": "virtbench.experiments.min_memory",
    "burst": "virtbench.experiments.burst",
    "exec": "virtbench.experiments.exec",
    "pause": "virtbench.experiments.pause",
    "snapshot": "virtbench.experiments.snapshot",
}


def get(kind: str) -> ModuleType:
    return importlib.import_module(BUILTIN[kind])
