"""`boot`: which runtime starts fastest, each headline boot figure (time to run and
exit, time to ready) ranked with its ratios; every figure summarised; its distribution
per runtime (strip and CDF) and the startup figure of every runtime on one axis."""

from __future__ import annotations

from virtbench import metrics
from virtbench.report import plots, plots_studies
from virtbench.report.standing import Answer, ranked
from virtbench.report.views.kind import View, measure, standings
from virtbench.store.frame import Frame


def answers(f: Frame) -> list[Answer]:
    """Fastest to start: each headline figure summarised as a median, per workload."""
    out = []
    several = len(f.distinct("workload")) > 1
    for (metric, workload, unit, direction), rows in f.groups(
        "metric", "workload", "unit", "direction"
    ):
        m = metrics.lookup(metric, workload)
        if not m.headline or m.summary != "median":
            continue
        out += ranked(
            "Fastest to start",
            measure(metric, workload, several),
            unit,
            standings(f.take(rows)),
            direction == "lower",
            metric=metric,
            workload=workload,
            sentence="{a} starts {x} faster than {b}",
        )
    return out


VIEW = View(
    "boot",
    title="Startup time",
    about=(
        "Each runtime starts an instance again and again: the time from the launch call "
        "to the instance's exit (hello) or its ready signal (sleep), and its teardown."
    ),
    order=50,
    answers=answers,
    plots=(
        lambda d: plots_studies.startup(d.samples, d.order),
        lambda d: plots.boot(d.samples, d.order),
    ),
)
