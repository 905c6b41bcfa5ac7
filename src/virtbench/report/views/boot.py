"""`boot`: which runtime starts fastest, each headline boot figure (time to run and
exit, time to ready) ranked with its ratios; every figure summarised; its distribution
per runtime (strip and CDF) and the startup figure of every runtime on one axis."""

from __future__ import annotations

from virtbench.report import lightplots, plots, plots_studies
from virtbench.report.views.kind import View, medians

VIEW = View(
    "boot",
    title="Startup time",
    about=(
        "Each runtime starts an instance again and again: the time from the launch call to "
        "the instance's exit (hello) or its ready signal (sleep), and its teardown."
    ),
    order=50,
    # each headline figure summarised as a median, per workload
    answers=medians(
        "Fastest to start",
        "{a} starts {x} faster than {b}",
        lambda m, _name: m.headline and m.summary == "median",
    ),
    plots=(
        lambda d: plots_studies.startup(d.samples, d.order),
        lambda d: plots.boot(d.samples, d.order),
    ),
    light=(
        lambda d: lightplots.startup(d.samples, d.order),
        lambda d: lightplots.boot(d.samples, d.order),
    ),
)
