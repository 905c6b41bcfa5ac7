"""Plug-ins found by walking a package on purpose: every module of it imported by name,
in name order, and the value each declares under one attribute kept.

The experiment types, the workloads and the report's views are found this way, and each
registry is put together above the modules it walks (the metric registry in metrics/,
the spec in spec/), so no module reads its own package's registry while it is being
imported: the layout test forbids the upward import that would take. A walk that asks
for the same package's registry again while it is walking it (a module that reads it at
import) is an error, not a registry quietly missing that module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

_walking: set[str] = set()  # the packages whose modules are being imported


class DiscoveryError(RuntimeError):
    """A registry was read while one of the modules it walks was still importing."""


def declared(package: str, path: Iterable[str], attribute: str, kind: type[T]) -> list[T]:
    """The `attribute` of every module of `package` (its `__path__`) that is a `kind`,
    in the modules' name order."""
    if package in _walking:
        raise DiscoveryError(
            f"{package}'s registry was read while its modules were being imported "
            "(move that read into a function)"
        )
    _walking.add(package)
    try:
        modules = sorted(pkgutil.iter_modules(path), key=lambda i: i.name)
        found = [
            getattr(importlib.import_module(f"{package}.{i.name}"), attribute, None)
            for i in modules
        ]
    finally:
        _walking.discard(package)
    return [value for value in found if isinstance(value, kind)]
