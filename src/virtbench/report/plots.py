"""Plots of a run (matplotlib, Agg): each a `Plot` that saves as PNG and SVG, or inlines
as SVG in the HTML report.

  boot         per boot metric: box plot with every sample (left) and CDF (right)
  latency      per latency test: box plot of each repetition's median round trip, and
               the CDF its percentiles (p50..p99.9) give, per runtime
  concurrency  throughput (or latency) against the workload's level (connections,
               clients, threads): median with its 95% CI per runtime
and, from report/plots_piles.py (S1's figures):
  scalability  per worker: its figure against background instances with every runtime
               on one axis, raw (mean +- SD, fitted line) and normalised to the first
               point, and the host's CPU idle, MemAvailable and free swap beside them
  isolation    per worker and runtime, bars of the median under baseline and every
               attacker x placement (95% CI); and per placement, every runtime's
               performance relative to its baseline
  density      memory per instance against instances running (PSS of each new instance,
               host memory in use and its kernel side, with fitted slopes)
and from report/plots_studies.py: startup and image-size bars on log scales (S3), syscall
cost against payload (S4), mean +- SD bars per runtime (S5) and each server's CPU and RSS
series (S2). Warm-ups and failed samples are never plotted.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from virtbench import metrics, workloads
from virtbench.analysis.stats import summarize
from virtbench.report.plotkit import (
    MAX_PER_KIND,
    STYLE,
    Plot,
    ci_err,
    colour_for,
    drawn_as,
    log_if_spread,
    log_levels,
    new_figure,
    numeric_level,
    runtimes_in,
    slugify,
    successful,
)
from virtbench.store.records import Sample, value_of, values_of
from virtbench.workloads.kind import LEVEL_NAME

__all__ = ["STYLE", "Plot"]


def boot_groups(
    samples: list[Sample], order: list[str]
) -> list[tuple[str, str, list[str], list[list[float]]]]:
    """Per boot figure (drawn as "boot"): (its metric, its unit, the runtimes that
    measured it in order, each one's successful values)."""
    ok = [s for s in successful(samples) if drawn_as(s, "boot")]
    out = []
    for metric in sorted({s.metric for s in ok}):
        mine = [s for s in ok if s.metric == metric]
        runtimes = runtimes_in(mine, order)
        data = [[value_of(s) for s in mine if s.runtime == r] for r in runtimes]
        out.append((metric, mine[0].unit, runtimes, data))
    return out


def boot(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Per boot figure: every sample per runtime over its box (left) and the CDF
    (right), both in the figure's unit; a log axis only where the values span more than
    a decade."""
    plots = []
    colour = colour_for(order)
    for metric, unit, runtimes, data in boot_groups(samples, order):
        label = metrics.label(metric)
        fig, (box, cdf) = new_figure(f"{label}: every sample per runtime", 2, 4.2)
        parts = box.boxplot(data, tick_labels=runtimes, showfliers=False, patch_artist=True)
        for patch, r in zip(parts["boxes"], runtimes, strict=True):
            patch.set(facecolor=colour(r), alpha=0.35)
        rng = np.random.default_rng(0)
        for i, (values, r) in enumerate(zip(data, runtimes, strict=True)):
            x = i + 1 + rng.uniform(-0.12, 0.12, len(values))
            box.scatter(x, values, s=8, color=colour(r), zorder=3)
        box.set_ylabel(f"{label} ({unit})")
        box.tick_params(axis="x", labelrotation=30)
        for values, r in zip(data, runtimes, strict=True):
            v = np.sort(values)
            cdf.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=r, color=colour(r))
        cdf.set_xlabel(f"{label} ({unit})")
        cdf.set_ylabel("fraction of samples")
        every = [v for values in data for v in values]
        log_if_spread(box, every, unit)
        log_if_spread(cdf, every, unit, axis="x")
        cdf.legend(fontsize=8)
        plots.append(Plot(f"boot-{slugify(metric)}", f"{label}: every sample", fig))
    return plots


PERCENTILE = re.compile(r"^(?P<test>.+)\.rtt_p(?P<p>\d+)$")


def latency(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Per request-response test of the latency workload: the median round trip of each
    repetition as a box plot (left), and the distribution of round trips within a run as
    the CDF its percentiles give (right: median over repetitions, min-max bars; the
    fraction axis stretches the tail, p50 .. p99.9)."""
    ok = [s for s in successful(samples) if drawn_as(s, "latency")]
    tests: dict[str, list[tuple[float, Sample]]] = defaultdict(list)
    for s in ok:
        m = PERCENTILE.match(s.metric)
        if m:
            digits = m["p"]
            pct = float(digits) if len(digits) <= 2 else float(digits) / 10 ** (len(digits) - 2)
            tests[f"{s.workload}: {m['test']}"].append((pct, s))
    plots = []
    colour = colour_for(order)
    for test in sorted(tests)[:MAX_PER_KIND]:
        points = tests[test]
        unit = points[0][1].unit
        runtimes = runtimes_in([s for _, s in points], order)
        fig, (box, cdf) = new_figure(f"{test} round trip ({unit})", 2, 4.2)
        p50 = [[value_of(s) for p, s in points if p == 50 and s.runtime == r] for r in runtimes]
        parts = box.boxplot(p50, tick_labels=runtimes, showfliers=False, patch_artist=True)
        for patch, r in zip(parts["boxes"], runtimes, strict=True):
            patch.set(facecolor=colour(r), alpha=0.35)
        box.set_title("median round trip per repetition", fontsize=9)
        box.set_ylabel(f"round trip ({unit})")
        box.tick_params(axis="x", labelrotation=30)
        for r in runtimes:
            pcts = sorted({p for p, s in points if s.runtime == r})
            med, lo, hi = [], [], []
            for p in pcts:
                vals = [value_of(s) for q, s in points if q == p and s.runtime == r]
                med.append(float(np.median(vals)))
                lo.append(med[-1] - min(vals))
                hi.append(max(vals) - med[-1])
            cdf.errorbar(
                med,
                [_pct_x(p) for p in pcts],
                xerr=[lo, hi],
                marker="o",
                capsize=3,
                label=r,
                color=colour(r),
            )
        ticks = sorted({p for p, _ in points})
        cdf.set_yticks([_pct_x(p) for p in ticks], [f"{p:g}%" for p in ticks])
        cdf.set_title("within a run: CDF from its percentiles", fontsize=9)
        cdf.set_xlabel(f"round trip ({unit})")
        cdf.set_ylabel("fraction of requests")
        log_if_spread(cdf, [value_of(s) for _, s in points], unit, axis="x")
        cdf.legend(fontsize=8)
        plots.append(Plot(f"latency-{slugify(test)}", f"{test}: round trip", fig))
    return plots


def _pct_x(p: float) -> float:
    """Percentiles on a log scale of the tail: p50 -> 1, p90 -> 2, p99 -> 3, p99.9 -> 4."""
    return -math.log10(1 - p / 100) + 0.7


def level_name(workload: str) -> str:
    """What a workload's swept level is, for a plot's axis."""
    measures = workloads.get(workload).measures if workload in workloads.names() else None
    return measures.level_name if measures is not None else LEVEL_NAME


def concurrency(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = [s for s in successful(samples) if drawn_as(s, "concurrency")]
    series: dict[tuple[str, str], list[tuple[float, Sample]]] = defaultdict(list)
    for s in ok:
        level = numeric_level(s.params.get("level"))
        if level is not None:
            series[(s.workload, s.metric.rsplit("@", 1)[0])].append((level, s))
    plots = []
    colour = colour_for(order)
    # several levels and not all zero (error counts); throughput-like first, then the rest
    keys = [
        k
        for k in sorted(series)
        if len({lv for lv, _ in series[k]}) >= 2 and any(s.value for _, s in series[k])
    ]
    keys.sort(key=lambda k: series[k][0][1].direction != "higher")
    for workload, metric in keys[:MAX_PER_KIND]:
        mine = series[(workload, metric)]
        unit = mine[0][1].unit
        label = metrics.label(metric, workload)
        fig, (ax,) = new_figure(f"{workload}: {label} ({unit}) against the level")
        for r in runtimes_in([s for _, s in mine], order):
            levels = sorted({lv for lv, s in mine if s.runtime == r})
            sts = [
                summarize(values_of(s for v, s in mine if s.runtime == r and v == lv))
                for lv in levels
            ]
            med = [st.median for st in sts]
            err = ci_err(sts)
            ax.errorbar(levels, med, yerr=err, marker="o", capsize=3, label=r, color=colour(r))
        every = sorted({lv for lv, _ in mine})
        if every[0] > 0 and every[-1] / every[0] >= 8:  # a sweep such as 1, 4, 16, 64
            log_levels(ax)
        ax.set_xlabel(level_name(workload))
        ax.set_ylabel(f"{label} ({unit})")
        ax.legend(fontsize=8)
        plots.append(
            Plot(
                f"concurrency-{slugify(workload)}-{slugify(metric)}",
                f"{workload}: {label} against the level",
                fig,
            )
        )
    return plots
