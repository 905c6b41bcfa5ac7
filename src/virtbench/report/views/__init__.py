"""How each experiment type's results are shown: one module per type, found by what it
declares (views/kind.py), never by a list of type names.

A module of this package whose `VIEW` is a `View` presents the experiment type it names:
its answers, its tables and its plots. The report, `show` and `compare` iterate the
views of the types a run holds; a type without a module of its own gets the plain
`View` (its figures summarised, no answers, no plots). Adding a type's figures touches
its module here and nothing else.
"""

from __future__ import annotations

import functools

from virtbench import discovery
from virtbench.report.views.kind import View


@functools.cache
def _declared() -> dict[str, View]:
    """Every module's `VIEW`, by the type it presents (virtbench.discovery)."""
    return {v.type: v for v in discovery.declared(__name__, __path__, "VIEW", View)}


def of(experiment: str) -> View:
    """The view of experiment type `experiment` (the plain one where it has none)."""
    return _declared().get(experiment) or View(experiment)


def of_run(experiments: list[str]) -> list[View]:
    """The views of a run's experiment types, in the order their answers are read."""
    return sorted((of(e) for e in dict.fromkeys(experiments)), key=lambda v: v.order)
