"""Figures read as slopes: memory each instance costs, and trends with background load.

Density records the host's memory at each step of a pile-up (virtbench.metrics: the series
`density.host_used`, `.kernel_used`, `.user_pss`); what one instance costs is the slope of
each against the instances running, over every step of every pile-up of that runtime
(analysis/fit.py `increment_fit`: the steps' increments pooled, a t interval from their spread,
since what the kernel frees or takes on its own moves every later reading). A slope whose
CI includes zero, or below the fit's resolution, reads "< X MiB": never a negative figure,
never a baseline.

Scalability's worker figure is fitted against the background instances, one point per
pile-up and background count (the median of its boots), and read per 100 background instances
with a verdict: grows, shrinks, flat, or undecided.
"""

from __future__ import annotations

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.fit import Fit, increment_fit, resolution, resolved, sen_fit, verdict
from virtbench.report.cells import Rows, add_columns, fmt, quantity, span
from virtbench.store.frame import Frame, as_frame

PER = 100  # trends are read per this many background instances


def _ok(samples: Rows) -> Frame:
    f = as_frame(samples)
    return f.take(~f.warmup & f.ok)


def cost_fits(samples: Rows) -> dict[tuple[str, str], Fit]:
    """(cost metric, runtime) -> the slope of its series against instances running."""
    ok = _ok(samples)
    out = {}
    by = dict(ok.groups("metric", "runtime"))
    for m in metrics.fitted():
        for (metric, runtime), rows in by.items():
            if metric != m.fits:
                continue
            found = increment_fit(
                ok.background[rows].tolist(), ok.value[rows].tolist(), ok.repetition[rows].tolist()
            )
            if found is not None:
                out[(m.name, runtime)] = found
    return out


def cost_cells(fit: Fit, metric: str) -> tuple[str, str]:
    """(per instance, 95% CI) of a memory cost: the slope, or "< X" below resolution."""
    m = metrics.lookup(metric)
    value, ci = quantity(fit.slope, m.unit, fit.ci_low, fit.ci_high)
    if not fit.has_ci:
        return value, "n/a (too few steps)"
    if resolved(fit, m.resolution):
        return value, ci
    return f"< {quantity(resolution(fit, m.resolution), m.unit)[0]}", "below resolution"


def baseline_refusal(fit: Fit | None, metric: str, what: str) -> str | None:
    """Why `fit` cannot be divided by (a ratio against it would mean nothing), or None."""
    m = metrics.lookup(metric)
    if fit is None or not fit.has_ci:
        return f"{what}'s slope has too few steps for a CI: a ratio to it means nothing"
    if not resolved(fit, m.resolution):
        return (
            f"{what}'s slope is below the method's resolution "
            f"({fmt(resolution(fit, m.resolution))} {m.unit}): a ratio to it means "
            "nothing"
        )
    return None


def cost_table(title: str, samples: Rows, runtime_order: list[str]) -> Table:
    """Per runtime: host memory per instance, its kernel side and its user side, each
    the slope over every step with its 95% CI (or "< X" below resolution)."""
    fits = cost_fits(samples)
    t = Table(title=title, title_justify="left")
    add_columns(
        t, ["runtime", "measure", "per instance", "95% CI", "steps"], ("runtime", "measure")
    )
    t.caption = (
        "per instance: the slope of memory against instances running over every "
        "step (caches dropped; the steps' increments pooled); 95% CI: a t interval "
        'from the steps\' spread; "< X": the CI includes 0 or the slope is below '
        "the method's resolution X"
    )
    t.caption_justify = "left"
    names = [m.name for m in metrics.fitted()]
    shown = [r for r in runtime_order if any((name, r) in fits for name in names)]
    for i, r in enumerate(shown):
        mine = [name for name in names if (name, r) in fits]
        for j, name in enumerate(mine):  # the runtime named once, a rule under its rows
            f = fits[(name, r)]
            ups = f"{f.points} steps, {f.groups} pile-up" + ("s" if f.groups > 1 else "")
            ends = j + 1 == len(mine) and i + 1 < len(shown)
            cells = cost_cells(f, name)
            t.add_row(r if j == 0 else "", metrics.label(name), *cells, ups, end_section=ends)
    return t


def unit_points(samples: Rows, metric: str, runtime: str) -> list[tuple[int, int, float]]:
    """(repetition, background, value) of `metric` on `runtime`: one point per pile-up and
    background count, its nested values summarised as the tables do: the median for a
    figure read as a distribution (one slow boot in five moved a mean by half, and
    a crun pile-up to 1200 whose medians rose 1.3x read "undecided"), else the mean."""
    ok = _ok(samples)
    ok = ok.take(ok.where("metric", metric) & ok.where("runtime", runtime))
    if not len(ok):
        return []
    workload = ok.labels["workload"][ok.codes["workload"][-1]]
    middle = np.median if metrics.lookup(metric, workload).summary == "median" else np.mean
    points = [
        (int(rep), int(n), float(middle(ok.value[rows])))
        for (rep, n), rows in ok.groups("repetition", "background")
    ]
    return sorted(points)


def trend(samples: Rows, metric: str, runtime: str) -> Fit | None:
    """The slope of `metric` per PER background instances on `runtime`."""
    pts = unit_points(samples, metric, runtime)
    found = sen_fit([p[1] for p in pts], [p[2] for p in pts], [p[0] for p in pts])
    return None if found is None else found.scaled(PER)


def trend_cells(fit: Fit | None) -> tuple[str, str, str]:
    """(slope per PER, 95% CI, verdict)."""
    if fit is None:
        return "n/a", "n/a", "undecided (one background count)"
    ci = span(fit.ci_low, fit.ci_high) if fit.has_ci else "n/a (too few points)"
    return f"{'+' if fit.slope > 0 else ''}{fmt(fit.slope)}", ci, verdict(fit)


def first_workload(f: Frame, metric: str) -> str:
    """The workload of `metric`'s first row ("" where it has none)."""
    rows = np.flatnonzero(f.where("metric", metric))
    return f.labels["workload"][f.codes["workload"][rows[0]]] if rows.size else ""


def trend_table(title: str, samples: Rows, metric: str, runtime_order: list[str]) -> Table:
    """Per runtime: the worker's figure's slope per PER background instances, its 95% CI
    and the verdict."""
    f = as_frame(samples)
    units = f.codes["unit"][f.where("metric", metric)]
    unit = f.labels["unit"][units[0]] if units.size else ""
    named = metrics.label(metric, first_workload(f, metric))
    t = Table(
        title=f"{title} ({named}, {unit} per {PER} background instances)", title_justify="left"
    )
    add_columns(
        t, ["runtime", f"slope per {PER}", "95% CI", "verdict", "points"], ("runtime", "verdict")
    )
    for r in runtime_order:
        pts = unit_points(f, metric, r)
        if pts:
            t.add_row(r, *trend_cells(trend(f, metric, r)), str(len(pts)))
    return t
