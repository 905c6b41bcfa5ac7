"""`isolation`: which runtime's worker is least slowed by a neighbour (each runtime's
worst slowdown over the attacks, in % with its 95% CI: a difference, never a ratio of
slowdowns); per worker, its figure and slowdown beside every attacker and placement;
bars per runtime and every runtime relative to its baseline."""

from __future__ import annotations

import math

import numpy as np
from rich.table import Table

from virtbench.analysis.stats import slowdown_ci
from virtbench.report import plots_piles
from virtbench.report.cells import median_rows, unit_keys
from virtbench.report.isolation_table import isolation_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.tables import by_worker
from virtbench.report.views.kind import Shown, View, first, heading, measure, workers
from virtbench.store.frame import Frame


def answers(f: Frame) -> list[Answer]:
    """Per worker: each runtime's worst slowdown, least first."""
    out = []
    for worker, mine, metric in workers(f):
        mine = mine.take(mine.where("metric", metric) & mine.ok)
        found = [w for (rt,), idx in mine.groups("runtime") if (w := _worst(mine.take(idx), rt))]
        out += ranked(
            "Least slowed by a neighbour",
            f"{measure(metric, worker)}, the worst attack",
            "% slower",
            found,
            True,
            metric=metric,
            workload=worker,
            scale="difference",
            figure="worst slowdown",
            sentence="{a} is slowed {x} less than {b}",
        )
    return out


def _worst(sub: Frame, runtime: str) -> Standing | None:
    """The runtime's largest slowdown over the attacks against its baseline, in %."""
    direction = first(sub, "direction")
    base = np.flatnonzero(sub.where("attacker", ""))
    if not base.size or math.isnan(median_rows(sub, base)[0]):
        return None
    worst: Standing | None = None
    for (attacker, _), hit in sub.groups("attacker", "placement"):
        if not attacker:
            continue
        point, lo, hi = slowdown_ci(
            sub.value[base],
            sub.value[hit],
            direction,
            units_b=unit_keys(sub, base),
            units_a=unit_keys(sub, hit),
        )
        if worst is None or point * 100 > worst.value:
            worst = Standing(runtime, point * 100, lo * 100, hi * 100)
    return worst


def tables(shown: Shown) -> list[Table]:
    """Per worker, the slowdown table (a summary over all conditions would mix them)."""
    workers = by_worker(shown.frame)
    title = heading(shown)
    return [
        isolation_table(
            f"{title} ({worker}): slowdown" if len(workers) > 1 else f"{title}: slowdown",
            theirs,
            shown.order,
        )
        for worker, theirs in workers
    ]


VIEW = View(
    "isolation",
    title="Performance isolation",
    about=(
        "A worker measured alone, then next to each misbehaving neighbour at each "
        "placement: how much slower it gets."
    ),
    order=80,
    answers=answers,
    tables=tables,
    plots=(
        lambda d: plots_piles.isolation(d.samples, d.order),
        lambda d: plots_piles.isolation_relative(d.samples, d.order),
    ),
)
