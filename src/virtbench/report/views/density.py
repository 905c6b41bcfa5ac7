"""`density`: which runtime costs least memory per instance (the slope of host memory
in use against instances running, report/fits.py), with what its liveness probes found;
every per-instance figure summarised, the costs' table, and memory against instances
running."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.experiments import density_figures as fig
from virtbench.experiments.density_bound import PER_GIB_AT_BOUND
from virtbench.experiments.density_liveness import ANSWERED
from virtbench.report import plots_piles, runtimeclass
from virtbench.report.fits import cost_fits, cost_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.views.kind import (
    Shown,
    View,
    heading,
    median_question,
    standings,
    summaries,
)
from virtbench.store.frame import Frame

# The figures that answer "least memory per instance", each a way to measure it: what the
# host loses per instance (the slope of its memory in use over the pile-up), what each
# instance's cgroup is charged, and its processes' PSS.
PER_INSTANCE = (fig.CGROUP_MEMORY.name, fig.PSS.name)


def answers(f: Frame) -> list[Answer]:
    """Least memory per instance, ranked by the sharpest sound estimate of it: of the
    host's cost per instance (the first fitted cost) and the per-instance medians, the one
    whose 95% CIs are the narrowest, among those where every runtime has a CI above the
    method's resolution and that count all another counts; the note says which, and why
    not the others."""
    found = [c for c in [_cost(f), *(_median(f, m) for m in PER_INSTANCE)] if c is not None]
    if not found:
        return []
    found = [c if c.metric not in PER_INSTANCE else _short_of(c, found) for c in found]
    sound = [c for c in found if not c.why]
    chosen = min(sound, key=lambda c: c.width) if sound else found[0]
    others = [
        f"{c.label}: {c.why or f'CIs {c.width * 100:.0f}% of the figure wide'}"
        for c in found
        if c is not chosen
    ]
    said = f"ranked by {chosen.label}" + (
        f", the sharpest estimate here (CIs {chosen.width * 100:.0f}% of the figure wide); "
        f"not by {'; '.join(others)}"
        if sound and others
        else ""
    )
    note = "; ".join(x for x in (said, _alive(f)) if x)
    return ranked(
        "Least memory per instance",
        chosen.label,
        chosen.unit,
        chosen.found,
        True,
        metric=chosen.metric,
        workload=chosen.workload,
        sentence="{a} needs {x} less memory per instance than {b}",
        note=note,
        figure=chosen.figure,
        scale=chosen.scale,
    ) + BOUNDED(f)


# how many fit per GiB while their liveness probes answered within the latency bound
BOUNDED = median_question(
    "Most instances per GiB within the latency bound",
    PER_GIB_AT_BOUND.name,
    "{a} fits {x} more instances per GiB than {b} within the bound",
)


@dataclass(frozen=True)
class Estimate:
    """One way a run measured memory per instance: every runtime's figure and CI, how
    wide those CIs are (the median over runtimes of CI width / figure), and why it cannot
    rank them ("" where it can)."""

    metric: str
    label: str
    unit: str
    found: list[Standing]
    figure: str
    workload: str = ""
    short: str = ""  # why it leaves out memory another estimate counts ("" if it does not)

    @property
    def resolution(self) -> float:
        return metrics.lookup(self.metric, self.workload).resolution or 0.0

    @property
    def width(self) -> float:
        """The median CI width over runtimes, as a share of the figure (of the method's
        resolution, for a figure within it)."""
        res = self.resolution
        widths = [
            (s.high - s.low) / max(abs(s.value), res)
            for s in self.found
            if s.has_ci and max(abs(s.value), res) > 0
        ]
        return float(np.median(widths)) if widths else math.inf

    @property
    def why(self) -> str:
        if self.short:
            return self.short
        if len(self.found) < 2:
            return "fewer than two runtimes"
        if not all(s.has_ci for s in self.found):
            return "not every runtime's figure has a CI"
        return ""

    @property
    def scale(self) -> str:
        """A ratio, unless a runtime's figure is within the method's resolution (a ratio
        to it means nothing): then by how much, a difference."""
        return "difference" if any(s.value <= self.resolution for s in self.found) else "ratio"


def _cost(f: Frame) -> Estimate | None:
    """The host's memory per instance: the first fitted cost's slopes."""
    cost = next(iter(metrics.fitted()), None)
    if cost is None:
        return None
    floor = math.nan if cost.lower_bound is None else cost.lower_bound
    found = [
        Standing(rt, fit.slope, fit.ci_low, fit.ci_high, floor)
        for (name, rt), fit in cost_fits(f).items()
        if name == cost.name
    ]
    if not found:
        return None
    return Estimate(
        cost.name, "the host's memory in use per instance", cost.unit, found, "per instance"
    )


def _short_of(c: Estimate, found: list[Estimate]) -> Estimate:
    """`c`, a per-instance part of the memory, said to fall short where, for a runtime,
    its whole CI lies below another estimate's (it leaves out memory that one counts: a
    container's PSS, its kernel side), so that the answer never ranks by a part of it.
    (The host's cost per instance is the whole, noisy or not: its CIs speak for it.)"""
    for other in found:
        mine = {s.runtime: s for s in c.found}
        for s in other.found:
            m = mine.get(s.runtime)
            if m is not None and m.has_ci and s.has_ci and m.high < s.low:
                short = f"counts less than {other.label} for {s.runtime}: it leaves some out"
                return dataclasses.replace(c, short=short)
    return c


def _median(f: Frame, metric: str) -> Estimate | None:
    """A per-instance figure's medians over the pile-up's instances."""
    rows = f.where("metric", metric) & ~f.warmup
    if not rows.any():
        return None
    sub = f.take(rows)
    workload = sub.labels["workload"][sub.codes["workload"][0]]
    m = metrics.lookup(metric, workload)
    return Estimate(
        metric, metrics.label(metric, workload), m.unit, standings(sub, 0.0), "median", workload
    )


def _alive(f: Frame) -> str:
    """What density's liveness probes found, per runtime ("" without probes)."""
    rows = f.where("metric", ANSWERED.name)
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
    """Each figure summarised, the memory each instance costs, and a RuntimeClass for
    each pod handler (`cri`)."""
    costs = cost_table(f"{heading(shown)}: memory each instance costs", shown.frame, shown.order)
    classes = runtimeclass.table(shown.frame, heading(shown))
    return (
        summaries(shown)
        + ([costs] if costs.row_count else [])
        + ([classes] if classes is not None else [])
    )


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
