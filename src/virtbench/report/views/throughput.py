"""`throughput`: which runtime serves best, each workload's headline figures at its
highest level; every figure summarised; round-trip distributions, figures against the
swept level, each workload's headline per runtime, syscall cost against payload, and
each server's CPU and RSS over its measurements."""

from __future__ import annotations

from virtbench import metrics
from virtbench.report import plots, plots_studies
from virtbench.report.standing import Answer, ranked
from virtbench.report.views.kind import View, measure, standings
from virtbench.store.frame import Frame


def answers(f: Frame) -> list[Answer]:
    """Per workload and headline figure: each runtime's median at the highest level."""
    out = []
    level = f.param("level")
    for (metric, workload, unit, direction), rows in f.groups(
        "metric", "workload", "unit", "direction"
    ):
        m = metrics.lookup(metric, workload)
        if not m.headline or not m.compared or m.summary != "median":
            continue
        levels = [x for x in set(level[rows].tolist()) if x is not None]
        numeric = [x for x in levels if isinstance(x, int | float)]
        top = max(numeric) if numeric and len(numeric) == len(levels) else None
        keep = rows if top is None else rows[level[rows] == top]
        at = f" at level {top}" if top is not None and len(levels) > 1 else ""
        label = metrics.label(metric, workload)
        says = f"gives {{x}} more {label}" if direction == "higher" else f"has {{x}} lower {label}"
        out += ranked(
            "Serves best",
            f"{measure(metric, workload)}{at}",
            unit,
            standings(f.take(keep)),
            direction == "lower",
            metric=metric,
            workload=workload,
            sentence=f"{{a}} {says} than {{b}}",
        )
    return out


VIEW = View(
    "throughput",
    title="Server throughput",
    about=(
        "Real servers inside each runtime, driven by their clients: requests, "
        "transactions or operations per second and their latency."
    ),
    order=70,
    answers=answers,
    plots=(
        lambda d: plots.latency(d.samples, d.order),
        lambda d: plots.concurrency(d.samples, d.order),
        lambda d: plots_studies.bars(d.samples, d.order),
        lambda d: plots_studies.payload(d.samples, d.order),
        lambda d: plots_studies.resources(d.series, d.order),
    ),
)
