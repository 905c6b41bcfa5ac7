"""Specs: a TOML file (or catalog entry) validated into typed models.

`load` and `parse` (spec/whole.py) give the whole `Spec`; the models of its parts live
beside it: instance and runtime options (runtimes.py), and what every table shares, with its
one-line errors (base.py). Each experiment type's table model is declared in its own
module (experiments/kind.py).
"""

from typing import Any

# What `from virtbench import spec; spec.parse(...)` reads, from spec/whole.py, imported when
# first read: an experiment type's module imports spec.base, and so this package, while
# the types are being found; importing whole.py then would read their registry midway.
EXPORTED = (
    "EXPERIMENT_TYPES",
    "Experiment",
    "InstanceOptions",
    "RuntimeOptions",
    "Spec",
    "catalog_names",
    "describe",
    "load",
    "option_error",
    "parse",
)
__all__ = list(EXPORTED)


def __getattr__(name: str) -> Any:
    if name in EXPORTED:
        from virtbench.spec import whole

        return getattr(whole, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
