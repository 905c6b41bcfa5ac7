"""Plug-ins found by walking a package on purpose: every module of it imported by name,
in name order, and the value each declares under one attribute kept.

The experiment types, the workloads and the report's views are found this way. The
result never depends on what was imported first: it is read only once every module it
walks has finished importing, and a read during one of their imports (a module that
asks for the registry while it is itself being imported) is an error, not a registry
quietly missing that module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType
from typing import TypeVar

T = TypeVar("T")


class DiscoveryError(RuntimeError):
    """A registry was read while one of the modules it walks was still importing."""


def declared(package: str, path: Iterable[str], attribute: str, kind: type[T]) -> list[T]:
    """The `attribute` of every module of `package` (its `__path__`) that is a `kind`,
    in the modules' name order."""
    found = []
    for info in sorted(pkgutil.iter_modules(path), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        if _initializing(module):
            raise DiscoveryError(
                f"{package}.{info.name} is still being imported: its package's registry "
                "was read during an import (move that read into a function)"
            )
        value = getattr(module, attribute, None)
        if isinstance(value, kind):
            found.append(value)
    return found


def _initializing(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
