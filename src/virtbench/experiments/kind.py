"""What an experiment type declares about itself, once, in its own module.

A module of this package whose `TYPE` is an `ExperimentType` is an experiment type:
`experiments.get(name)` finds it, the spec validates its `[[experiment]]` tables with its
`config` model, the plan asks its `estimate`, and the metric registry holds its
`metrics`; how its results are shown is its view's (report/views). Nothing else lists
experiment types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from virtbench.experiments.estimate import Costs, Estimate
from virtbench.figure import Metric


@dataclass(frozen=True)
class ExperimentType:
    """An experiment type: its name, its spec table, its procedure and what it records.

    name      the `type` of its `[[experiment]]` tables and of its samples' `experiment`
    config    the model its tables are validated with (a CommonExperiment)
    run       the procedure: `run(session, config)` records its samples
    unit      a sample's fields that name one unit of measurement (`run --resume` skips
              the units finished)
    order     where it stands among the types (spec errors, `virtbench catalog`)
    check     `check(session, config)`, before any experiment of the run measures: raise
              SpecError where the spec cannot run
    estimate  `estimate(config, costs)`: the launches and seconds it takes on one runtime
    metrics   the figures it records, declared once (metrics/model.py)

    How its results are shown (answers, tables, plots) is its view's: report/views.
    """

    name: str
    config: type[BaseModel]
    run: Callable[[Any, Any], None]  # (Session, its config)
    unit: tuple[str, ...]
    order: int = 100
    check: Callable[[Any, Any], None] | None = None
    estimate: Callable[[Any, Costs], Estimate] | None = None
    metrics: tuple[Metric, ...] = ()
