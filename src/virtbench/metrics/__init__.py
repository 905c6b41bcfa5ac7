"""The metric registry: every figure virtbench records, declared once.

A `Metric` says what a figure is -- its unit, which way is better, what it includes, the
smallest value it can take and the smallest difference its method can tell -- and how the
rest of virtbench treats it: whether repetitions of it measure one thing again (adaptive
repetition's CV target), how the tables summarise it, whether the report and `virtbench
compare` compare it, which plot draws it and how DESMET scores it.

Names are exactly as stored. A family of names is one fnmatch pattern (`*` matches dots
too), such as the latency workload's `*.*B.rtt_p*`. A level suffix (`tps@16`,
`read_only.tps@t40`: experiments/worker.py adds it when a workload sweeps a parameter) is
no part of a declared name. `lookup` tries exact names first, then patterns in the order
declared, so a narrower pattern comes before a broader one. Each experiment's prefix
ends with a pattern (`boot.*`, `host.*`, ...) that treats a figure not declared yet as its
family; any other name is a workload figure this registry does not name (a new
workload's, say) and gets DEFAULT's treatment: repeated, compared, summarised by the
median. Where a declaration leaves `unit` and `direction` open, a sample carries its own.
"""

from __future__ import annotations

import dataclasses
import functools

from virtbench import experiments, workloads
from virtbench.figure import (
    CHARGE_BATCH_MIB,
    KIB_MIB,
    NS_MS,
    DesmetKind,
    Metric,
    PlotKind,
    Summary,
    first_match,
)
from virtbench.metrics.run import RUN

__all__ = [
    "CHARGE_BATCH_MIB",
    "DEFAULT",
    "KIB_MIB",
    "NS_MS",
    "DesmetKind",
    "Metric",
    "PlotKind",
    "Summary",
    "find",
    "fitted",
    "is_compared",
    "is_repeated",
    "label",
    "lookup",
    "plotted",
    "registry",
]


@functools.cache
def registry() -> tuple[Metric, ...]:
    """Every declaration, in the order `lookup` tries them: each experiment type's own
    figures (experiments/kind.py), the run's, then each workload's (workloads/kind.py), in
    their `metrics_order`. This package is the one place they are put together: it sits
    above the experiment types and the workloads, which declare their figures with
    virtbench.figure and never read the registry."""
    return (
        *(m for t in experiments.types() for m in t.metrics),
        *RUN,
        *(m for w in sorted(workloads.every(), key=_figures_order) for m in w.metrics),
    )


def _figures_order(w: workloads.Workload) -> tuple[int, str]:
    return (w.order if w.metrics_order is None else w.metrics_order, w.name)


# A workload figure this registry does not name: measured again each repetition, compared,
# drawn against a swept level like any other.
DEFAULT = Metric(
    "*",
    "",
    None,
    "a workload figure the registry does not name",
    lower_bound=None,
    plot="concurrency",
)


def find(name: str, workload: str = "") -> Metric | None:
    """The declaration of `name` (a level suffix ignored): an exact name first, then the
    first pattern that matches; None when neither does. `workload` (the sample's) tells
    workloads' figures of one name apart; "" considers every workload's."""
    return _find(name, workload)


@functools.lru_cache(maxsize=4096)  # reports look up every sample's metric
def _find(name: str, workload: str) -> Metric | None:
    mine = [m for m in registry() if not workload or m.workload in ("", workload)]
    return first_match(mine, name.partition("@")[0])


def lookup(name: str, workload: str = "") -> Metric:
    """What `name` is: its declaration (`find`), or DEFAULT's treatment under that name."""
    found = _find(name, workload)
    return found if found is not None else _default(name, workload)


@functools.lru_cache(maxsize=1024)
def _default(name: str, workload: str) -> Metric:
    return dataclasses.replace(DEFAULT, name=name, workload=workload)


def label(name: str, workload: str = "") -> str:
    """What a person reads for figure `name`: its declared label (`Metric.label_of`),
    and where the name has a level suffix, the level ("requests/s at 16")."""
    base, _, level = name.partition("@")
    text = lookup(base, workload).label_of(base)
    return f"{text} at {level}" if level else text


def is_repeated(name: str, workload: str = "") -> bool:
    """Do repetitions of it measure one thing again (so its CV counts)?"""
    return lookup(name, workload).repeated


def is_compared(name: str, workload: str = "") -> bool:
    """Does the report compare runtimes on it (tests, DESMET scores, spread warnings)?"""
    return lookup(name, workload).compared


def fitted() -> list[Metric]:
    """The figures read as the slope of a series (summary "fit"), in the order declared."""
    return [m for m in registry() if m.summary == "fit"]


def plotted(kind: PlotKind) -> list[Metric]:
    """The figures declared by name that plot `kind` draws, in the order declared."""
    return [m for m in registry() if m.plot == kind and not m.is_pattern]
