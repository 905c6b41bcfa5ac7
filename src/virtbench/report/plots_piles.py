"""Plots of the experiments that pile instances up or put neighbours beside a worker:
scalability, isolation and density (report/plots.py draws them with the others)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from virtbench import metrics
from virtbench.analysis.fit import Fit
from virtbench.analysis.stats import Summary, summarize
from virtbench.report.cells import scaled
from virtbench.report.plotkit import (
    Plot,
    ci_err,
    colour_for,
    colours,
    new_figure,
    runtimes_in,
    slugify,
    successful,
)
from virtbench.report.tables import by_worker, worker_metric
from virtbench.store.records import Sample, value_of, values_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def scalability(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S1's scalability figure of each worker the run measured (`_scalability_one`)."""
    return per_worker(samples, order, _scalability_one)


def _scalability_one(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S1's figures: the worker's figure against background instances with every runtime
    on one axis, raw (the median at each point, its 95% CI as a band, the fitted line
    dotted) and normalised to each runtime's first point; beside them the host's CPU
    idle, memory available and free swap (%) at each point, per runtime."""
    from virtbench.report.fits import PER, trend, trend_cells

    ok = successful(samples)
    metric = worker_metric(ok)
    if metric is None:
        return []
    unit = next(s.unit for s in ok if s.metric == metric)
    runtimes = runtimes_in([s for s in ok if s.metric == metric], order)
    colour = colour_for(order)
    label = metrics.label(metric, ok[0].workload)
    fig, (raw, rel, host) = new_figure(f"{label} against background instances", 3, 4.4)
    for r in runtimes:
        mine = [s for s in ok if s.runtime == r]
        points = sorted({s.background for s in mine if s.metric == metric})
        sts = [_point(mine, metric, n) for n in points]
        mean = np.array([st.median for st in sts])
        low = np.array([st.ci_low if st.has_ci else st.minimum for st in sts])
        high = np.array([st.ci_high if st.has_ci else st.maximum for st in sts])
        c = colour(r)
        raw.plot(points, mean, marker="o", ms=3, color=c, label=r)
        raw.fill_between(points, low, high, color=c, alpha=0.15)
        f = trend(ok, metric, r)
        if f is not None:  # the fitted line, per background instance
            slope, ci, word = trend_cells(f)
            line = [f.level + f.slope / PER * (n - points[0]) for n in points]
            raw.plot(points, line, ls=":", color=c, label=f"{r} fit: {slope}/{PER} ({ci}), {word}")
        first = mean[0] or math.nan
        rel.plot(points, mean / first, marker="o", ms=3, color=c, label=r)
        rel.fill_between(points, low / first, high / first, color=c, alpha=0.15)
        for m, ls in zip(metrics.plotted("scalability"), ("-", "--", ":"), strict=False):
            vals = [
                np.mean(
                    [s.value for s in mine if s.metric == m.name and s.background == n]
                    or [math.nan]
                )
                for n in points
            ]
            if not all(math.isnan(v) for v in vals):
                host.plot(points, vals, ls=ls, color=c, label=f"{r}: {m.label}")
    raw.set_title("median (band: 95% CI, or the range below 5 runs)", fontsize=9)
    raw.set_ylabel(f"{label} ({unit})")
    rel.set_title("normalised to the first point", fontsize=9)
    rel.set_ylabel("relative to the first point (x)")
    rel.axhline(1.0, color="grey", lw=0.8)
    host.set_title("host availability at each point", fontsize=9)
    host.set_ylabel("host availability (%)")
    host.set_ylim(0, 105)
    for ax in (raw, rel, host):
        ax.set_xlabel("background instances")
        ax.legend(fontsize=8)
    wl = ok[0].workload
    return [Plot(f"scalability-{slugify(wl)}-{slugify(metric)}", f"{wl}: {label}", fig)]


def _point(samples: list[Sample], metric: str, background: int) -> Summary:
    """The median of `metric` at one background count, with its 95% CI over runs."""
    at = [s for s in samples if s.metric == metric and s.background == background]
    return summarize(values_of(at), [s.repetition for s in at])


def isolation(samples: list[Sample], order: list[str]) -> list[Plot]:
    """The isolation bars of each worker the run measured (`_isolation_one`)."""
    return per_worker(samples, order, _isolation_one)


def _isolation_one(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = successful(samples)
    metric = worker_metric(ok)
    if metric is None:
        return []
    ok = [s for s in ok if s.metric == metric]
    runtimes = runtimes_in(ok, order)
    unit, direction = ok[0].unit, ok[0].direction
    attackers = sorted({s.attacker for s in ok if s.attacker})
    placements = sorted({s.placement for s in ok if s.placement}, key=_placement_order)
    label = metrics.label(metric, ok[0].workload)
    title = f"{label} ({unit}, {direction} is better) next to each attacker: median, 95% CI"
    fig, axes = new_figure(title, len(runtimes), 5.2)
    width = 0.8 / max(1, len(placements))
    for ax, r in zip(axes, runtimes, strict=True):
        mine = [s for s in ok if s.runtime == r]
        base = summarize(values_of(s for s in mine if not s.attacker))
        ax.bar(
            [0], [base.median], 0.6, yerr=ci_err([base]), capsize=3, color="grey", label="baseline"
        )
        for j, p in enumerate(placements):
            sts = [
                summarize(values_of(s for s in mine if (s.attacker, s.placement) == (a, p)))
                for a in attackers
            ]
            x = np.arange(1, len(attackers) + 1) + (j - (len(placements) - 1) / 2) * width
            med = [st.median if st.n else math.nan for st in sts]  # not measured: no bar
            ax.bar(x, med, width, yerr=ci_err(sts), capsize=2, color=colours()[j], label=p)
            for xi, st in zip(x, sts, strict=True):
                if not st.n:
                    ax.annotate("n/a", (xi, 0), ha="center", va="bottom", fontsize=8, color="grey")
        ax.set_xticks(range(len(attackers) + 1), ["baseline", *attackers], rotation=30)
        ax.set_title(r, fontsize=9)
        ax.set_ylabel(f"{label} ({unit})")
        ax.legend(fontsize=8)
    wl = ok[0].workload
    return [Plot(f"isolation-{slugify(wl)}-{slugify(metric)}", f"{wl}: {label} by attacker", fig)]


def isolation_relative(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S1's normalised isolation bars of each worker (`_isolation_relative_one`)."""
    return per_worker(samples, order, _isolation_relative_one)


def _isolation_relative_one(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S1's isolation bars: per placement, the worker's performance under each attacker
    relative to its baseline (1 = unaffected, 0.5 = half as fast, whichever way its figure
    improves), every runtime side by side, with the bootstrap 95% CI of the ratio."""
    from virtbench.analysis.stats import slowdown_ci

    ok = successful(samples)
    metric = worker_metric(ok)
    if metric is None:
        return []
    ok = [s for s in ok if s.metric == metric]
    runtimes = runtimes_in(ok, order)
    direction = ok[0].direction
    attackers = sorted({s.attacker for s in ok if s.attacker})
    placements = sorted({s.placement for s in ok if s.placement}, key=_placement_order)
    if not attackers or not placements:
        return []
    colour = colour_for(order)
    label = metrics.label(metric, ok[0].workload)
    title = f"{label} relative to its baseline (1 = unaffected)"
    fig, axes = new_figure(title, len(placements), 5.2)
    width = 0.8 / max(1, len(runtimes))
    for ax, p in zip(axes, placements, strict=True):
        for j, r in enumerate(runtimes):
            base = [s for s in ok if s.runtime == r and not s.attacker]
            rel, below, above = [], [], []
            for a in attackers:
                hit = [s for s in ok if (s.runtime, s.attacker, s.placement) == (r, a, p)]
                point, low, high = slowdown_ci(
                    values_of(base),
                    values_of(hit),
                    direction,
                    units_b=[s.repetition for s in base],
                    units_a=[s.repetition for s in hit],
                )
                ratio = 1 / (1 + point) if hit and base else math.nan
                rel.append(ratio)
                ci = not (math.isnan(low) or math.isnan(high))  # a higher slowdown, a lower ratio
                below.append(ratio - 1 / (1 + high) if ci else 0.0)
                above.append(1 / (1 + low) - ratio if ci else 0.0)
            x = np.arange(len(attackers)) + (j - (len(runtimes) - 1) / 2) * width
            err = [below, above]
            ax.bar(x, rel, width, yerr=err, capsize=2, color=colour(r), label=r)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(range(len(attackers)), attackers, rotation=30)
        ax.set_title(f"attackers {p}", fontsize=9)
        ax.set_ylabel("performance / baseline (x)")
        ax.legend(fontsize=8)
    wl = ok[0].workload
    return [
        Plot(
            f"isolation-relative-{slugify(wl)}-{slugify(metric)}",
            f"{wl}: {label} relative to its baseline",
            fig,
        )
    ]


def per_worker(
    samples: list[Sample],
    order: list[str],
    draw: Callable[[list[Sample], list[str]], list[Plot]],
) -> list[Plot]:
    """`draw` for each worker apart (a spec may measure several)."""
    return [p for _, theirs in by_worker(samples) for p in draw(theirs, order)]


def _placement_order(p: str) -> int:
    known = ["same-cpu", "smt-sibling", "other-cpu", "all-other"]
    return known.index(p) if p in known else len(known)


def density(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Each new instance's PSS as instances pile up; then the host's memory in use and its
    kernel side above the pile-up's start, each with its fitted slope (report/fits.py)."""
    from virtbench.report.fits import cost_fits

    ok = successful(samples)
    panels = metrics.plotted("density")
    series = {m.name: m.fits or m.name for m in panels}
    if not any(s.metric in series.values() for s in ok):
        return []
    fits = cost_fits(ok)
    colour = colour_for(order)
    fig, axes = new_figure("Memory against instances running", len(panels), 4.6)
    for ax, m in zip(axes, panels, strict=True):
        mine = [s for s in ok if s.metric == series[m.name]]
        # memory in KiB, MiB or GiB as the panel's values need
        k, unit = scaled(float(np.median([abs(value_of(s)) for s in mine] or [0.0])), "MiB")
        for r in runtimes_in(mine, order):
            if not m.fits:  # a new instance's PSS, at the instances running with it
                by: dict[int, list[float]] = defaultdict(list)
                for s in mine:
                    if s.runtime == r:
                        by[s.background + 1].append(value_of(s) * k)
                xs = sorted(by)
                ax.plot(
                    xs,
                    [np.median(by[n]) for n in xs],
                    marker="." if len(xs) > 30 else "o",
                    ms=3,
                    lw=1,
                    label=r,
                    color=colour(r),
                )
                continue
            _steps(ax, mine, Steps(r, colour(r), fits.get((m.name, r)), m.name))
        ax.set_title(m.label, fontsize=9)
        ax.set_xlabel("instances running")
        if m.fits:
            ax.set_ylabel("above the pile-up's start (MiB)")
            ax.axhline(0.0, color="grey", lw=0.8)
        else:
            ax.set_ylabel(f"{m.label} ({unit})")
            ax.set_ylim(bottom=0)
        if mine:
            ax.legend(fontsize=8)
    return [Plot("density-memory-per-instance", "Memory per instance", fig)]


@dataclass(frozen=True)
class Steps:
    """One runtime's pile-ups in a memory panel: the `runtime`, its `colour`, and the
    line fitted through its steps (`fit`, of the figure `name`; None: none fitted)."""

    runtime: str
    colour: tuple
    fit: Fit | None
    name: str


def _steps(ax: Axes, mine: list[Sample], steps: Steps) -> None:
    """Each pile-up's steps above its own start, and the line fitted through them."""
    from virtbench.report.fits import cost_cells

    r, f, c = steps.runtime, steps.fit, steps.colour
    start: dict[int, float] = {}
    pts = sorted((s.repetition, s.background, value_of(s)) for s in mine if s.runtime == r)
    for rep, _, v in pts:
        start.setdefault(rep, v)
    xs = [n for _, n, _ in pts]
    ax.plot(xs, [v - start[rep] for rep, _, v in pts], ls="", marker="o", ms=3, color=c)
    text = cost_cells(f, steps.name)[0] if f is not None else "n/a"
    if f is not None:
        ax.plot([min(xs), max(xs)], [0.0, f.slope * (max(xs) - min(xs))], lw=1, color=c)
    ax.plot([], [], marker="o", ms=3, color=c, label=f"{r}: {text} each")
