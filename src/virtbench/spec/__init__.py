"""Specs: a TOML file (or catalog entry) validated into typed models.

`load` and `parse` (spec/load.py) give the whole `Spec`; the models of its parts live
beside it: instance and runtime options (runtimes.py), experiments (experiments.py and
sandbox.py), and the shared base with its one-line errors (base.py).
"""

from virtbench.spec.load import (
    EXPERIMENT_TYPES,
    BootExperiment,
    BurstExperiment,
    DensityExperiment,
    ExecExperiment,
    Experiment,
    InstanceOptions,
    IsolationExperiment,
    PauseExperiment,
    RuntimeOptions,
    ScalabilityExperiment,
    SnapshotExperiment,
    Spec,
    ThroughputExperiment,
    catalog_names,
    describe,
    load,
    option_error,
    parse,
)

__all__ = [
    "EXPERIMENT_TYPES",
    "BootExperiment",
    "BurstExperiment",
    "DensityExperiment",
    "ExecExperiment",
    "Experiment",
    "InstanceOptions",
    "IsolationExperiment",
    "PauseExperiment",
    "RuntimeOptions",
    "ScalabilityExperiment",
    "SnapshotExperiment",
    "Spec",
    "ThroughputExperiment",
    "catalog_names",
    "describe",
    "load",
    "option_error",
    "parse",
]
