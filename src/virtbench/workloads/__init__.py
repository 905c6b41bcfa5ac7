"""Workloads: what runs inside an instance. One module each, with a fixed contract:

NAME            the name used in specs
ENDS            "exit" (the instance's exit is the measured event) or "ready"
argv(instance)  the command inside the instance, paths inside the artifact;
                `{probe}` stands for the ready-probe address the runtime fills in
"""

from __future__ import annotations

import importlib
from types import ModuleType

BUILTIN = {"hello": "virtbench.workloads.hello", "sleep": "virtbench.workloads.sleep"}


def names() -> list[str]:
    return list(BUILTIN)


def get(name: str) -> ModuleType:
    return importlib.import_module(BUILTIN[name])
