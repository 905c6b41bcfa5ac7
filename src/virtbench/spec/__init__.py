"""Specs: a TOML file (or catalog entry) validated into typed models.

`load` and `parse` (spec/whole.py) give the whole `Spec`; the models of its parts live
beside it: instance and runtime options (runtimes.py). What every table shares, with its
one-line errors, is tables/base.py, below the experiment types whose table models
(experiments/kind.py) the spec validates.
"""

from virtbench.spec.whole import (
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
