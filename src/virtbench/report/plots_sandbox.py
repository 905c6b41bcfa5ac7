"""The figures of the sandbox questions: many starts at once (`burst`), and the
operations on a running instance (`exec`, `pause`, `snapshot`)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from virtbench import metrics
from virtbench.experiments import burst as bursts
from virtbench.report.plotkit import (
    Plot,
    colour_for,
    log_if_spread,
    log_levels,
    new_figure,
    runtimes_in,
    successful,
)
from virtbench.store.records import Sample, value_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def burst(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Per runtime, time to ready against instances launched at once: the median of every
    instance at that level (all repetitions), a band from its 5th to its 95th percentile
    and its 99th as a dotted line; beside it, instances ready per second."""
    ok = successful(samples)
    each: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    rate: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in ok:
        name, _, level = s.metric.partition("@")
        if not level.isdigit():
            continue
        if name == bursts.SPAWN_TO_READY.name:
            each[s.runtime][int(level)].append(float(value_of(s)))
        elif name == bursts.READY_PER_S.name:
            rate[s.runtime][int(level)].append(float(value_of(s)))
    if not each:
        return []
    colour = colour_for(order)
    fig, (ax, ax_rate) = new_figure(
        "Many starts at once: time to ready (own launch call -> ready)"
        " and instances ready per second",
        ncols=2,
    )
    levels_seen: set[int] = set()
    for r in runtimes_in([s for s in ok if s.runtime in each], order):
        levels = sorted(each[r])
        levels_seen.update(levels)
        q = np.array([np.percentile(each[r][lv], [5, 50, 95, 99]) for lv in levels])
        ax.plot(levels, q[:, 1], marker="o", color=colour(r), label=f"{r} median")
        ax.fill_between(levels, q[:, 0], q[:, 2], color=colour(r), alpha=0.18)
        ax.plot(levels, q[:, 3], linestyle=":", color=colour(r), label=f"{r} p99")
        if rate.get(r):
            lv = sorted(rate[r])
            ax_rate.plot(
                lv, [float(np.median(rate[r][x])) for x in lv], marker="o", color=colour(r), label=r
            )
    for a in (ax, ax_rate):
        a.set_xlabel("instances launched at once")
        if min(levels_seen) > 0 and max(levels_seen) / min(levels_seen) >= 8:
            log_levels(a)
    ax.set_ylabel("time to ready (ms; band: 5th to 95th percentile)")
    ax_rate.set_ylabel("instances ready per second (1/s, median)")
    ax.legend(fontsize=8)
    ax_rate.legend(fontsize=8)
    return [
        Plot(
            "burst-time-to-ready",
            "Many starts at once: time to ready against instances launched together",
            fig,
        )
    ]


def operations(
    samples: list[Sample], order: list[str], name: str, title: str, figures: tuple[str, ...]
) -> list[Plot]:
    """Per runtime: a bar at each of `figures`' medians, a line from its 5th to its 99th
    percentile (every sample of the run); a runtime that cannot is named with why it
    cannot, in short, where its bars would be."""
    mine = [s for s in samples if not s.warmup]
    ok = successful(mine)
    if not ok:
        return []
    runtimes = runtimes_in(mine, order)
    fig, (ax,) = new_figure(title, width=8.4)
    fig.set_figheight(1.2 + 0.5 * len(runtimes) * max(1, len(figures) / 2))
    height = 0.8 / len(figures)
    colours = colour_for(list(figures))
    for j, metric in enumerate(figures):
        shown = False
        for i, r in enumerate(runtimes):
            v = [float(value_of(s)) for s in ok if s.runtime == r and s.metric == metric]
            if not v:
                continue
            y = i + (j - (len(figures) - 1) / 2) * height
            p5, med, p99 = np.percentile(v, [5, 50, 99])
            label = None if shown else metrics.label(metric)
            ax.barh(y, med, height=height * 0.9, color=colours(metric), label=label)
            ax.plot([p5, p99], [y, y], color="black", linewidth=1)
            shown = True
    _cannot(ax, mine, ok, runtimes)
    values = [float(value_of(s)) for s in ok]
    if min(values) > 0 and max(values) / min(values) >= 30:
        log_if_spread(ax, values, "ms", axis="x")
    ax.set_yticks(range(len(runtimes)), runtimes)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms; bar: median, line: 5th to 99th percentile)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return [Plot(name, title, fig)]


def _cannot(ax: Axes, mine: list[Sample], ok: list[Sample], runtimes: list[str]) -> None:
    """Why a runtime has no bars, where its bars would be."""
    for i, r in enumerate(runtimes):
        if not any(s.runtime == r for s in ok):
            why = next((s.error for s in mine if s.runtime == r and s.error), "no figure")
            where = ax.get_yaxis_transform()
            ax.text(0.01, i, _short(why), transform=where, va="center", fontsize=8, color="grey")


def _short(why: str, width: int = 70) -> str:
    """Why a runtime has no bars, cut to fit beside its row (the table has it whole)."""
    head, cannot, rest = why.partition(" cannot: ")
    what, why = ("cannot: ", rest) if cannot else ("failed: ", head)
    return what + (why if len(why) <= width else why[: width - 1] + "\u2026")
