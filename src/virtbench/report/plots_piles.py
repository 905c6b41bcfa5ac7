"""Plots of the experiments that pile instances up or put neighbours beside a worker:
scalability, isolation and density (report/plots.py draws them with the others)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from virtbench import metrics
from virtbench.records import Sample
from virtbench.report.plotkit import (
    COLOURS,
    Plot,
    _ci_err,
    _colour,
    _figure,
    _ok,
    _runtimes,
    _slug,
)
from virtbench.report.tables import worker_metric
from virtbench.stats import summarize


def scalability(samples: list[Sample], order: list[str]) -> list[Plot]:
    from virtbench.report.fits import PER, trend, trend_cells

    ok = [s for s in _ok(samples) if s.experiment == "scalability"]
    metric = worker_metric(ok)
    if metric is None:
        return []
    runtimes = _runtimes([s for s in ok if s.metric == metric], order)
    fig, axes = _figure(f"scalability: {metric}, normalised to the first point",
                        len(runtimes), 4.6)  # fmt: skip
    for ax, r in zip(axes, runtimes, strict=True):
        mine = [s for s in ok if s.runtime == r]
        points = sorted({s.background for s in mine if s.metric == metric})
        by = {n: np.array([s.value for s in mine if s.metric == metric and s.background == n])
              for n in points}  # fmt: skip
        first = float(np.mean(by[points[0]])) or math.nan
        mean = np.array([np.mean(by[n]) for n in points]) / first
        sd = np.array([np.std(by[n], ddof=1) if len(by[n]) > 1 else 0.0 for n in points]) / first
        ax.plot(points, mean, marker="o", color=COLOURS[0], label=f"{metric} (mean)")
        ax.fill_between(points, mean - sd, mean + sd, color=COLOURS[0], alpha=0.2, label="± SD")
        f = trend(ok, metric, r)
        if f is not None:  # the fitted line, per background instance
            slope, ci, word = trend_cells(f)
            line = [(f.level + f.slope / PER * (n - points[0])) / first for n in points]
            ax.plot(points, line, ls=":", color=COLOURS[0],
                    label=f"fit: {slope} per {PER} ({ci}), {word}")  # fmt: skip
        for host, c in zip(metrics.plotted("scalability"), COLOURS[1:], strict=False):
            vals = [np.mean([s.value for s in mine if s.metric == host.name and s.background == n]
                            or [math.nan]) for n in points]  # fmt: skip
            if vals and not math.isnan(vals[0]) and vals[0]:
                ax.plot(points, np.array(vals) / vals[0], ls="--", color=c, label=host.label)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_title(r, fontsize=9)
        ax.set_xlabel("background instances")
        ax.set_ylabel("relative to the first point")
        ax.legend(fontsize=7)
    return [Plot(f"scalability-{_slug(metric)}", f"scalability: {metric}", fig)]


def isolation(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = [s for s in _ok(samples) if s.experiment == "isolation"]
    metric = worker_metric(ok)
    if metric is None:
        return []
    ok = [s for s in ok if s.metric == metric]
    runtimes = _runtimes(ok, order)
    unit, direction = ok[0].unit, ok[0].direction
    attackers = sorted({s.attacker for s in ok if s.attacker})
    placements = sorted({s.placement for s in ok if s.placement}, key=_placement_order)
    fig, axes = _figure(f"isolation: {metric} ({unit}, {direction} is better), median and "
                        "95% CI", len(runtimes), 5.2)  # fmt: skip
    width = 0.8 / max(1, len(placements))
    for ax, r in zip(axes, runtimes, strict=True):
        mine = [s for s in ok if s.runtime == r]
        base = summarize([s.value for s in mine if not s.attacker])
        ax.bar([0], [base.median], 0.6, yerr=_ci_err([base]), capsize=3, color="grey",
               label="baseline")  # fmt: skip
        for j, p in enumerate(placements):
            sts = [summarize([s.value for s in mine if (s.attacker, s.placement) == (a, p)])
                   for a in attackers]  # fmt: skip
            x = np.arange(1, len(attackers) + 1) + (j - (len(placements) - 1) / 2) * width
            med = [st.median if st.n else math.nan for st in sts]  # not measured: no bar
            ax.bar(x, med, width, yerr=_ci_err(sts), capsize=2, color=COLOURS[j], label=p)
            for xi, st in zip(x, sts, strict=True):
                if not st.n:
                    ax.annotate("n/a", (xi, 0), ha="center", va="bottom", fontsize=7,
                                color="grey")  # fmt: skip
        ax.set_xticks(range(len(attackers) + 1), ["baseline", *attackers], rotation=30)
        ax.set_title(r, fontsize=9)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    return [Plot(f"isolation-{_slug(metric)}", f"isolation: {metric}", fig)]


def _placement_order(p: str) -> int:
    known = ["same-cpu", "smt-sibling", "other-cpu", "all-other"]
    return known.index(p) if p in known else len(known)


def density(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Each new instance's PSS as instances pile up; then the host's memory in use and its
    kernel side above the pile-up's start, each with its fitted slope (report/fits.py)."""
    from virtbench.report.fits import cost_cells, cost_fits

    ok = [s for s in _ok(samples) if s.experiment == "density"]
    panels = metrics.plotted("density")
    series = {m.name: m.fits or m.name for m in panels}
    if not any(s.metric in series.values() for s in ok):
        return []
    fits = cost_fits(ok)
    colour = _colour(order)
    fig, axes = _figure("density: memory against instances running", len(panels), 4.6)
    for ax, m in zip(axes, panels, strict=True):
        mine = [s for s in ok if s.metric == series[m.name]]
        for r in _runtimes(mine, order):
            if not m.fits:  # a new instance's PSS, at the instances running with it
                by: dict[int, list[float]] = defaultdict(list)
                for s in mine:
                    if s.runtime == r:
                        by[s.background + 1].append(s.value)  # type: ignore[arg-type]
                xs = sorted(by)
                ax.plot(xs, [np.median(by[n]) for n in xs], marker="." if len(xs) > 30 else "o",
                        ms=3, lw=1, label=r, color=colour(r))  # fmt: skip
                continue
            # each pile-up's steps above its own start, and the line fitted through them
            start: dict[int, float] = {}
            pts = sorted((s.repetition, s.background, s.value) for s in mine if s.runtime == r)
            for rep, _, v in pts:
                start.setdefault(rep, v)  # type: ignore[arg-type]
            xs = [n for _, n, _ in pts]
            ax.plot(xs, [v - start[rep] for rep, _, v in pts], ls="", marker="o", ms=3,
                    color=colour(r))  # fmt: skip
            f = fits.get((m.name, r))
            text = cost_cells(f, m.name)[0] if f is not None else "-"
            if f is not None:
                line = [0.0, f.slope * (max(xs) - min(xs))]
                ax.plot([min(xs), max(xs)], line, lw=1, color=colour(r))
            ax.plot([], [], marker="o", ms=3, color=colour(r), label=f"{r}: {text} each")
        ax.set_title(m.label, fontsize=9)
        ax.set_xlabel("instances running")
        if m.fits:
            ax.set_ylabel("MiB above the pile-up's start")
            ax.axhline(0.0, color="grey", lw=0.8)
        else:
            ax.set_ylabel("MiB per instance")
            ax.set_ylim(bottom=0)
        if mine:
            ax.legend(fontsize=7)
    return [Plot("density-memory-per-instance", "density: memory per instance", fig)]
