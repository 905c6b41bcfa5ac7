"""`scalability`: which runtime's worker is least slowed as idle instances pile up (the
worker's trend per 100 background instances, in the worse direction: a difference, as
a slope can be 0 or negative); per worker, its figure at each background count and the
trend, then the pile-up's own figures; S1's figures."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.report import plots_piles
from virtbench.report.fits import PER, trend, trend_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.tables import by_worker, scalability_table, worker_metric
from virtbench.report.views.kind import (
    Shown,
    View,
    first,
    heading,
    measure,
    summaries,
    workers,
)
from virtbench.store.frame import Frame


def answers(f: Frame) -> list[Answer]:
    """Per worker: each runtime's slope in the worse direction, least first."""
    out = []
    for worker, mine, metric in workers(f):
        head = mine.take(mine.where("metric", metric))
        unit, direction = first(head, "unit"), first(head, "direction")
        sign = 1 if direction == "lower" else -1
        found = []
        for runtime in mine.distinct("runtime"):
            fit = trend(mine, metric, runtime)
            if fit is not None:
                lo, hi = sorted((sign * fit.ci_low, sign * fit.ci_high))
                found.append(Standing(runtime, sign * fit.slope, lo, hi))
        out += ranked(
            "Least slowed as instances pile up",
            f"{measure(metric, worker)}, lost per {PER} background instances (a gain: negative)",
            unit,
            found,
            True,
            metric=metric,
            workload=worker,
            scale="difference",
            figure="lost",
            sentence="{a} loses {x} less per " + f"{PER} background instances than " + "{b}",
        )
    return out


def tables(shown: Shown) -> list[Table]:
    """Per worker: its figure at each background count, and its trend; then the
    pile-up's own figures summarised (the worker's are in the per-point table)."""
    out = []
    workers = by_worker(shown.frame)
    for worker, theirs in workers:
        named = f"{heading(shown)} ({worker})" if len(workers) > 1 else heading(shown)
        title = f"{named}: by background instances"
        out.append(scalability_table(title, theirs, shown.order, shown.seen))
        metric = worker_metric(theirs.take(~theirs.warmup))
        if metric is not None:
            out.append(trend_table(f"{named}: trend", theirs, metric, shown.order))
    f = shown.frame
    piled = [
        rows for (m, w), rows in f.groups("metric", "workload") if metrics.lookup(m, w).pile_up
    ]
    rest = f.take(np.sort(np.concatenate(piled)) if piled else np.zeros(0, int))
    return out + summaries(replace(shown, frame=rest))


VIEW = View(
    "scalability",
    title="Scalability",
    about=(
        "A worker measured alone, then after each step of idle background instances: how "
        "its figure changes as they pile up."
    ),
    order=90,
    answers=answers,
    tables=tables,
    plots=(lambda d: plots_piles.scalability(d.samples, d.order),),
)
