"""`density`: which runtime costs least memory per instance (the slope of host memory
in use against instances running, report/fits.py), with what its liveness probes found;
every per-instance figure summarised, the costs' table, and memory against instances
running."""

from __future__ import annotations

import math

from rich.table import Table

from virtbench import metrics
from virtbench.report import plots_piles
from virtbench.report.fits import cost_fits, cost_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.views.kind import Shown, View, heading, summaries
from virtbench.store.frame import Frame


def answers(f: Frame) -> list[Answer]:
    """Least memory per instance: the first fitted cost (host memory in use)."""
    fits = cost_fits(f)
    cost = next(iter(metrics.fitted()), None)
    if cost is None:
        return []
    floor = math.nan if cost.lower_bound is None else cost.lower_bound
    found = [
        Standing(rt, fit.slope, fit.ci_low, fit.ci_high, floor)
        for (name, rt), fit in fits.items()
        if name == cost.name
    ]
    return ranked(
        "Least memory per instance",
        metrics.label(cost.name),
        cost.unit,
        found,
        True,
        metric=cost.name,
        sentence="{a} needs {x} less memory per instance than {b}",
        note=_alive(f),
        figure="per instance",
    )


def _alive(f: Frame) -> str:
    """What density's liveness probes found, per runtime ("" without probes)."""
    rows = f.where("metric", "density.answered")
    if not rows.any():
        return ""
    said = []
    probes = f.take(rows)
    for (runtime,), idx in probes.groups("runtime"):
        sub = probes.take(idx)
        probed = sum(int(sub.params_of(int(c)).get("probed", 0)) for c in sub.codes["params"])
        ok = sub.value[sub.ok]
        said.append(
            f"{runtime} {int(ok.sum())} of {probed}" if ok.size else f"{runtime} could not be asked"
        )
    return f"probed instances that answered: {', '.join(said)}"


def tables(shown: Shown) -> list[Table]:
    """Each figure summarised, then the memory each instance costs."""
    costs = cost_table(f"{heading(shown)}: memory each instance costs", shown.frame, shown.order)
    return summaries(shown) + ([costs] if costs.row_count else [])


VIEW = View(
    "density",
    title="Memory per instance",
    about=(
        "Idle instances are started one after another: what each new one adds to the "
        "host's memory in use, its kernel side and its processes' PSS."
    ),
    order=60,
    answers=answers,
    tables=tables,
    plots=(lambda d: plots_piles.density(d.samples, d.order),),
)
