"""Experiment procedures: one module per experiment type, each with `run(session, config)`."""

from __future__ import annotations

import importlib
from types import ModuleType

BUILTIN = {
    "boot": "virtbench.experiments.boot",
    "density": "virtbench.experiments.density",
    "throughput": "virtbench.experiments.throughput",
}


def get(kind: str) -> ModuleType:
    return importlib.import_module(BUILTIN[kind])
