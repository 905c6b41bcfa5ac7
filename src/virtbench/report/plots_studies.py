"""The figures the published studies drew, from a run's samples and series:

  startup      every boot figure: each runtime's median and 95% CI, one shared axis (S3)
  image        each runtime's image size on disk, where the sizes differ (S3)
  payload      syscall cost against payload size per call, and the first-touch cost of
               k pages against k: median with its 95% CI per runtime (S4)
  bars         each throughput workload's headline figure: each runtime's median and
               95% CI, grouped by level where the workload sweeps one (S5)
  resources    a server's CPU % and RSS over each measurement, per runtime and
               repetition, its runtime's daemons dashed (S2's pidstat series)
Warm-ups and failed samples are never drawn.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from virtbench import metrics, workloads
from virtbench.analysis.stats import Summary, summarize
from virtbench.experiments.boot import TEARDOWN
from virtbench.metrics.run import IMAGE_SIZE
from virtbench.report.cells import quantity, scaled
from virtbench.report.plotkit import (
    MAX_PER_KIND,
    Plot,
    ci_err,
    colour_for,
    log_if_spread,
    new_figure,
    runtimes_in,
    slugify,
    successful,
    unit_ticks,
)
from virtbench.store.records import Sample, value_of, values_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

SIZED = re.compile(r"^(read|write|sendto_recvfrom)_(\d+)b_ns$")
PAGES = re.compile(r"^page_fault_(\d+)p_ns$")
Series = list[tuple[str, float, float]]


def by_unit(samples: list[Sample]) -> Callable[[str, str], Summary]:
    """A runtime's median of a metric with its 95% CI over its repetitions, for each
    runtime and metric asked for (the samples grouped once)."""
    groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.runtime, s.metric].append(s)

    def of(runtime: str, metric: str) -> Summary:
        mine = groups.get((runtime, metric), [])
        return summarize(values_of(mine), [s.repetition for s in mine])

    return of


def startup_panels(
    samples: list[Sample], order: list[str]
) -> tuple[list[str], list[tuple[str, list[Sample]]]]:
    """The startup figure's runtimes and panels: the start figures, and the teardown
    where the run timed it (none without a start figure)."""
    ok = successful(samples)
    starts = [s for s in ok if s.metric != TEARDOWN.name]
    stops = [s for s in ok if s.metric == TEARDOWN.name]
    if not starts:
        return [], []
    return runtimes_in(starts, order), [("Start", starts)] + ([("Teardown", stops)] * bool(stops))


def startup(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S3's startup figure as medians: every headline and side boot figure, each
    runtime's median with its 95% CI as a dot and whisker, on one shared axis (a log
    one only where the medians span more than a decade); the teardown beside it, on
    its own axis, where the run timed it."""
    runtimes, panels = startup_panels(samples, order)
    if not panels:
        return []
    wide = 7.4 if len(panels) == 1 else 6.4  # two panels as wide as a page shows them
    fig, axes = new_figure(
        "Startup time per runtime: median and 95% CI", ncols=len(panels), width=wide
    )
    for ax, (title, chosen) in zip(axes, panels, strict=True):
        _medians_panel(ax, chosen, runtimes)
        ax.set_title(title, fontsize=9)
    return [Plot("startup-medians", "Startup time per runtime (median, 95% CI)", fig)]


def _medians_panel(ax: Axes, ok: list[Sample], runtimes: list[str]) -> None:
    """One panel of the startup figure: each metric's medians and CIs per runtime."""
    names = sorted({s.metric for s in ok}, key=lambda m: (not metrics.lookup(m).headline, m))
    unit = ok[0].unit
    colours = colour_for(names)
    step = 0.7 / max(1, len(names))
    values = []
    summary = by_unit(ok)
    for j, metric in enumerate(names):
        sts = [summary(r, metric) for r in runtimes]
        x = np.arange(len(runtimes)) + (j - (len(names) - 1) / 2) * step
        shown = [(xi, st) for xi, st in zip(x, sts, strict=True) if st.n]
        if not shown:
            continue
        xs, kept = [xi for xi, _ in shown], [st for _, st in shown]
        colour, label = colours(metric), metrics.label(metric)
        medians = [st.median for st in kept]
        ax.errorbar(
            xs, medians, yerr=ci_err(kept), fmt="o", ms=4, capsize=3, color=colour, label=label
        )
        values += medians
    ax.set_xticks(range(len(runtimes)), runtimes)
    ax.tick_params(axis="x", rotation=30)
    ax.set_ylabel(f"time ({unit})")
    if not log_if_spread(ax, values, unit):
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(unit_ticks(unit))
    ax.legend(fontsize=9)


def image(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S3's image sizes: what each runtime keeps on disk for the run's artifact, where
    the sizes differ (identical ones are a fact, said in words)."""
    ok = [s for s in successful(samples) if s.metric == IMAGE_SIZE.name]
    if not ok or len({s.value for s in ok}) < 2:
        return []
    runtimes = runtimes_in(ok, order)
    sizes = [max(value_of(s) for s in ok if s.runtime == r) for r in runtimes]
    factor, unit = scaled(float(np.median(sizes)), ok[0].unit)
    fig, (ax,) = new_figure("Image size on disk per runtime")
    colour = colour_for(order)
    shown = [v * factor for v in sizes]
    ax.scatter(range(len(runtimes)), shown, s=30, color=[colour(r) for r in runtimes], zorder=3)
    for x, (r, v) in enumerate(zip(runtimes, sizes, strict=True)):
        how = next(s.params.get("measured_by", "") for s in ok if s.runtime == r)
        text = f"{quantity(v, ok[0].unit)[0]}\n{how}"
        ax.annotate(text, (x, v * factor), ha="center", va="bottom", fontsize=8)
    if not log_if_spread(ax, [v * factor for v in sizes], unit):
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(unit_ticks(unit))
    ax.set_xticks(range(len(runtimes)), runtimes)
    ax.set_ylabel(f"size on disk ({unit})")
    ax.tick_params(axis="x", rotation=30)
    return [Plot("image-sizes", "Image size on disk", fig)]


def payload(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S4's syscall figures: cost against payload size per call (and page faults
    against pages), median and 95% CI per runtime."""
    ok = [s for s in successful(samples) if s.workload == "syscall"]
    panels: dict[str, list[tuple[int, Sample]]] = defaultdict(list)
    for s in ok:
        base = s.metric.partition("@")[0]
        if m := SIZED.match(base):
            panels[m[1]].append((int(m[2]), s))
        elif m := PAGES.match(base):
            panels["page faults"].append((int(m[1]), s))
    panels = {k: v for k, v in panels.items() if len({x for x, _ in v}) >= 2}
    if not panels:
        return []
    colour = colour_for(order)
    fig, axes = new_figure("syscall cost against payload (median, 95% CI)", len(panels), 4.2)
    for ax, (name, points) in zip(axes, sorted(panels.items()), strict=True):
        for r in runtimes_in([s for _, s in points], order):
            xs = sorted({x for x, s in points if s.runtime == r})
            sts = [
                summarize(
                    values_of(s for x2, s in points if s.runtime == r and x2 == x),
                    [s.repetition for x2, s in points if s.runtime == r and x2 == x],
                )
                for x in xs
            ]
            ax.errorbar(
                xs,
                [st.median for st in sts],
                yerr=ci_err(sts),
                marker="o",
                ms=3,
                capsize=2,
                label=r,
                color=colour(r),
            )
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("pages touched" if name == "page faults" else "payload (bytes)")
        ax.set_ylabel("cost per call (ns)" if name != "page faults" else "all pages (ns)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    return [Plot("syscall-payload", "syscall cost against payload size", fig)]


def bars(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S5's charts as medians: each throughput workload's primary figure, each runtime's
    median with its 95% CI as a dot and whisker, grouped by level where the workload
    sweeps one."""
    plots = []
    ok = successful(samples)
    for name in dict.fromkeys(s.workload for s in ok):
        measures = workloads.get(name).measures if name in workloads.names() else None
        primary = measures.primary.name if measures is not None else None
        mine = [s for s in ok if s.workload == name and s.metric.partition("@")[0] == primary]
        if not mine or primary is None:
            continue
        plots.append(_medians_by_level(name, primary, mine, order))
        if len(plots) == MAX_PER_KIND:
            break
    return plots


def _medians_by_level(name: str, primary: str, mine: list[Sample], order: list[str]) -> Plot:
    """One workload's primary figure per level and runtime: median and 95% CI."""
    levels = sorted({s.metric for s in mine}, key=_level_key)
    runtimes = runtimes_in(mine, order)
    colour = colour_for(order)
    label, unit = metrics.label(primary, name), mine[0].unit
    width = max(6.4, 1.2 * len(levels))
    fig, (ax,) = new_figure(f"{name}: {label}, median and 95% CI", width=width)
    step = 0.7 / max(1, len(runtimes))
    summary = by_unit(mine)
    for j, r in enumerate(runtimes):
        sts = [summary(r, lv) for lv in levels]
        x = np.arange(len(levels)) + (j - (len(runtimes) - 1) / 2) * step
        kept = [(xi, st) for xi, st in zip(x, sts, strict=True) if st.n]
        xs, at = [xi for xi, _ in kept], [st for _, st in kept]
        medians = [st.median for st in at]
        ax.errorbar(
            xs, medians, yerr=ci_err(at), fmt="o", ms=4, capsize=3, color=colour(r), label=r
        )
    ticks = [lv.partition("@")[2] or label for lv in levels]
    ax.set_xticks(range(len(levels)), ticks, rotation=30 if len(levels) > 4 else 0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{label} ({unit})")
    ax.legend(fontsize=8)
    return Plot(f"medians-{slugify(name)}-{slugify(primary)}", f"{name}: {label}", fig)


def _level_key(metric: str) -> tuple[float, str]:
    """Order levels by their number (`tps@t40` after `tps@t10`), then by name."""
    level = metric.partition("@")[2]
    m = re.search(r"\d+", level)
    return (float(m[0]) if m else -1.0, level)


def resources(series: Series, order: list[str]) -> list[Plot]:
    """S2's per-run series: CPU % and RSS of each server measurement against the seconds
    since it began, a line per runtime, repetition and level; the daemons dashed."""
    lines: dict[tuple[str, str, str], dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for name, t, value in series:
        # proc/<runtime>/<workload>/<experiment,repetition,attacker,placement,background>/
        #   <level>[/warmup|/pilot]/<part>.<metric>: one measurement each
        parts = name.split("/")
        if parts[0] != "proc" or len(parts) < 6 or parts[5] in ("warmup", "pilot"):
            continue
        runtime, workload, where, level = parts[1], parts[2], parts[3], parts[4]
        part, _, metric = parts[-1].partition(".")
        lines[(workload, runtime, f"{where} {level} {part}")][metric].append((t, value))
    plots = []
    colour = colour_for(order)
    for workload in dict.fromkeys(k[0] for k in lines):
        fig, (cpu, rss) = new_figure(f"{workload}: CPU and RSS over each measurement", 2, 4.6)
        seen: set[tuple[str, str]] = set()
        for (wl, runtime, key), m in lines.items():
            if wl != workload:
                continue
            ls = "--" if key.endswith("daemon") else "-"
            label = runtime + (" daemons" if ls == "--" else "")
            for ax, metric in ((cpu, "cpu_pct"), (rss, "rss_mib")):
                pts = sorted(m.get(metric, []))
                if not pts:
                    continue
                t0 = pts[0][0]
                ax.plot(
                    [t - t0 for t, _ in pts],
                    [v for _, v in pts],
                    ls=ls,
                    lw=1,
                    color=colour(runtime),
                    alpha=0.8,
                    label=label if (label, metric) not in seen else None,
                )
                seen.add((label, metric))
        for ax, unit in ((cpu, "CPU (%, 100 = one CPU)"), (rss, "RSS (MiB)")):
            ax.set_xlabel("time into the measurement (s)")
            ax.set_ylabel(unit)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
        plots.append(Plot(f"resources-{slugify(workload)}", f"{workload}: CPU and RSS", fig))
    return plots[:MAX_PER_KIND]
