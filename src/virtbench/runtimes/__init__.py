"""Runtime registry: names to driver classes, imported lazily.

Adding a runtime is one module plus one line here. Third-party drivers register through
the `virtbench.runtimes` entry-point group (name = "module:Class").
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtbench.runtimes.base import Runtime

BUILTIN: dict[str, str] = {
    "native": "virtbench.runtimes.native:Native",
    "runc": "virtbench.runtimes.runc:Runc",
    "crun": "virtbench.runtimes.crun:Crun",
}


def _all() -> dict[str, str]:
    found = dict(BUILTIN)
    for ep in entry_points(group="virtbench.runtimes"):
        found.setdefault(ep.name, ep.value)
    return found


def names() -> list[str]:
    """Every runtime name virtbench knows (available here or not)."""
    return list(_all())


def get(name: str) -> type[Runtime]:
    """The driver class for `name` (KeyError if unknown)."""
    target = _all()[name]
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
