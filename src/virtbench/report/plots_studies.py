"""The figures the published studies drew, from a run's samples and series:

  startup      boot figures as bars of mean +- SD per runtime on a log scale (S3)
  image        each runtime's image size on disk, log scale (S3)
  payload      syscall cost against payload size per call, and the first-touch cost of
               k pages against k: median with its 95% CI per runtime (S4)
  bars         each throughput workload's headline figure as mean +- SD bars per
               runtime, grouped by level where the workload sweeps one (S5)
  resources    a server's CPU % and RSS over each measurement, per runtime and
               repetition, its runtime's daemons dashed (S2's pidstat series)
Warm-ups and failed samples are never drawn.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from virtbench import workloads
from virtbench.analysis.stats import summarize
from virtbench.report.plotkit import (
    MAX_PER_KIND,
    Plot,
    ci_err,
    colour_for,
    new_figure,
    runtimes_in,
    slugify,
    successful,
)
from virtbench.store.records import Sample

SIZED = re.compile(r"^(read|write|sendto_recvfrom)_(\d+)b_ns$")
PAGES = re.compile(r"^page_fault_(\d+)p_ns$")
Series = list[tuple[str, float, float]]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def startup(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S3's startup figure: per boot metric, mean +- SD per runtime on a log scale."""
    ok = [s for s in successful(samples) if s.experiment == "boot" and s.metric != "boot.teardown"]
    names = sorted({s.metric for s in ok})
    if not names:
        return []
    colour = colour_for(order)
    fig, axes = new_figure("startup time per runtime (mean ± SD, log scale)", len(names), 4.2)
    for ax, metric in zip(axes, names, strict=True):
        mine = [s for s in ok if s.metric == metric]
        runtimes = runtimes_in(mine, order)
        stats = [_mean_sd([s.value for s in mine if s.runtime == r]) for r in runtimes]
        ax.bar(runtimes, [m for m, _ in stats], yerr=[sd for _, sd in stats], capsize=3,
               color=[colour(r) for r in runtimes])  # fmt: skip
        ax.set_yscale("log")
        low = min((m - sd for m, sd in stats if m - sd > 0), default=min(m for m, _ in stats))
        if low > 0:  # bars from a decade below the smallest
            ax.set_ylim(bottom=10 ** math.floor(math.log10(low)))
        ax.set_title(metric, fontsize=9)
        ax.set_ylabel(mine[0].unit)
        ax.tick_params(axis="x", rotation=30)
    return [Plot("startup-log-bars", "startup time (log scale)", fig)]


def image(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S3's image sizes: what each runtime keeps on disk for the run's artifact."""
    ok = [s for s in successful(samples) if s.experiment == "image" and s.metric == "image_size"]
    if not ok:
        return []
    runtimes = runtimes_in(ok, order)
    colour = colour_for(order)
    fig, (ax,) = new_figure("image size on disk per runtime (log scale)")
    sizes = [max(s.value for s in ok if s.runtime == r) for r in runtimes]
    ax.bar(runtimes, sizes, color=[colour(r) for r in runtimes])
    for x, (r, v) in enumerate(zip(runtimes, sizes, strict=True)):
        how = next(s.params.get("measured_by", "") for s in ok if s.runtime == r)
        ax.annotate(f"{v:.1f} MiB\n{how}", (x, v), ha="center", va="bottom", fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("MiB")
    ax.tick_params(axis="x", rotation=30)
    return [Plot("image-sizes", "image size on disk", fig)]


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
            sts = [summarize([s.value for x2, s in points if s.runtime == r and x2 == x],
                             [s.repetition for x2, s in points if s.runtime == r and x2 == x])
                   for x in xs]  # fmt: skip
            ax.errorbar(xs, [st.median for st in sts], yerr=ci_err(sts), marker="o", ms=3,
                        capsize=2, label=r, color=colour(r))  # fmt: skip
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("pages touched" if name == "page faults" else "payload (bytes)")
        ax.set_ylabel("ns" if name != "page faults" else "ns (all pages)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return [Plot("syscall-payload", "syscall cost against payload size", fig)]


def bars(samples: list[Sample], order: list[str]) -> list[Plot]:
    """S5's bar charts: each throughput workload's primary figure, mean +- SD per
    runtime, grouped by level when the workload sweeps one."""
    ok = [s for s in successful(samples) if s.experiment == "throughput"]
    plots = []
    for name in dict.fromkeys(s.workload for s in ok):
        measures = workloads.get(name).measures if name in workloads.names() else None
        primary = measures.primary if measures is not None else None
        mine = [s for s in ok if s.workload == name and s.metric.partition("@")[0] == primary]
        if not mine:
            continue
        levels = sorted({s.metric for s in mine}, key=_level_key)
        runtimes = runtimes_in(mine, order)
        colour = colour_for(order)
        fig, (ax,) = new_figure(f"{name}: {primary} ({mine[0].unit}), mean ± SD",
                             width=max(6.4, 1.2 * len(levels)))  # fmt: skip
        width = 0.8 / max(1, len(runtimes))
        for j, r in enumerate(runtimes):
            stats = [_mean_sd([s.value for s in mine if s.runtime == r and s.metric == lv]
                              or [np.nan]) for lv in levels]  # fmt: skip
            x = np.arange(len(levels)) + (j - (len(runtimes) - 1) / 2) * width
            ax.bar(x, [m for m, _ in stats], width, yerr=[sd for _, sd in stats], capsize=2,
                   color=colour(r), label=r)  # fmt: skip
        ax.set_xticks(range(len(levels)), [lv.partition("@")[2] or primary for lv in levels],
                      rotation=30 if len(levels) > 4 else 0)  # fmt: skip
        ax.set_ylabel(mine[0].unit)
        ax.legend(fontsize=7)
        plots.append(Plot(f"bars-{slugify(name)}-{slugify(primary)}", f"{name}: {primary}", fig))
        if len(plots) == MAX_PER_KIND:
            break
    return plots


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
                ax.plot([t - t0 for t, _ in pts], [v for _, v in pts], ls=ls, lw=1,
                        color=colour(runtime), alpha=0.8,
                        label=label if (label, metric) not in seen else None)  # fmt: skip
                seen.add((label, metric))
        for ax, unit in ((cpu, "CPU % (100 = one CPU)"), (rss, "RSS (MiB)")):
            ax.set_xlabel("seconds into the measurement")
            ax.set_ylabel(unit)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
        plots.append(Plot(f"resources-{slugify(workload)}", f"{workload}: CPU and RSS", fig))
    return plots[:MAX_PER_KIND]
