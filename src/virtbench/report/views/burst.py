"""`burst`: which runtime brings many instances to ready soonest when they start at
once (the median instance's time to ready, at the highest level two runtimes reached);
every figure summarised; time to ready and instances ready per second against the
instances launched at once."""

from __future__ import annotations

from virtbench import metrics
from virtbench.experiments import burst
from virtbench.report import plots_sandbox
from virtbench.report.standing import Answer, ranked
from virtbench.report.views.kind import View, standings
from virtbench.store.frame import Frame

P50 = burst.P50.name


def answers(f: Frame) -> list[Answer]:
    """At the highest level two runtimes reached: each burst's p50, over the
    repetitions."""
    levels = {int(m.rpartition("@")[2]) for m in f.distinct("metric") if m.startswith(f"{P50}@")}
    for level in sorted(levels, reverse=True):
        metric = f"{P50}@{level}"
        found = standings(f.take(f.where("metric", metric)))
        if sum(1 for s in found if s.ok) >= 2:
            return ranked(
                f"Fastest to ready, {level} started at once",
                metrics.label(P50),
                "ms",
                found,
                True,
                metric=metric,
                sentence="{a} brings them to ready {x} sooner than {b}",
            )
    return []


VIEW = View(
    "burst",
    title="Many starts at once",
    about=(
        "Many instances launched together: each one's time to ready, and instances ready "
        "per second."
    ),
    order=70,
    answers=answers,
    plots=(lambda d: plots_sandbox.burst(d.samples, d.order),),
)
