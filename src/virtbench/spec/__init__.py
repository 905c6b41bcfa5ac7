"""Specs: a TOML file (or catalog entry) validated into typed models.

`load` and `parse` (spec/load.py) give the whole `Spec`; the models of its parts live
beside it: instance and runtime options (runtimes.py), and what every table shares, with its
one-line errors (base.py). Each experiment type's table model is declared in its own
module (experiments/kind.py).
"""

from virtbench.spec.load import (
    EXPERIMENT_TYPES,
    Experiment,
    InstanceOptions,
    RuntimeOptions,
    Spec,
    catalog_names,
    describe,
    load,
    option_error,
    parse,
)

__all__ = [
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
]
