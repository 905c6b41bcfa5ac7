"""The figures of the sandbox questions: many starts at once (`burst`)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from virtbench.report.plotkit import Plot, _colour, _figure, _ok, _runtimes
from virtbench.store.records import Sample


def burst(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Per runtime, time to ready against instances launched at once: the median of every
    instance at that level (all repetitions), a band from its 5th to its 95th percentile
    and its 99th as a dotted line; beside it, instances ready per second."""
    ok = [s for s in _ok(samples) if s.experiment == "burst"]
    each: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    rate: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in ok:
        name, _, level = s.metric.partition("@")
        if not level.isdigit():
            continue
        if name == "burst.spawn_to_ready":
            each[s.runtime][int(level)].append(float(s.value))  # type: ignore[arg-type]
        elif name == "burst.ready_per_s":
            rate[s.runtime][int(level)].append(float(s.value))  # type: ignore[arg-type]
    if not each:
        return []
    colour = _colour(order)
    fig, (ax, ax_rate) = _figure("Many starts at once: time to ready (own launch call -> ready)"
                                 " and instances ready per second", ncols=2)  # fmt: skip
    levels_seen: set[int] = set()
    for r in _runtimes([s for s in ok if s.runtime in each], order):
        levels = sorted(each[r])
        levels_seen.update(levels)
        q = np.array([np.percentile(each[r][lv], [5, 50, 95, 99]) for lv in levels])
        ax.plot(levels, q[:, 1], marker="o", color=colour(r), label=f"{r} median")
        ax.fill_between(levels, q[:, 0], q[:, 2], color=colour(r), alpha=0.18)
        ax.plot(levels, q[:, 3], linestyle=":", color=colour(r), label=f"{r} p99")
        if rate.get(r):
            lv = sorted(rate[r])
            ax_rate.plot(lv, [float(np.median(rate[r][x])) for x in lv], marker="o",
                         color=colour(r), label=r)  # fmt: skip
    for a in (ax, ax_rate):
        a.set_xlabel("instances launched at once")
        if min(levels_seen) > 0 and max(levels_seen) / min(levels_seen) >= 8:
            a.set_xscale("log")
    ax.set_ylabel("ms (band: 5th to 95th percentile)")
    ax_rate.set_ylabel("instances ready per second (median)")
    ax.legend(fontsize=7)
    ax_rate.legend(fontsize=7)
    return [Plot("burst-time-to-ready", "Many starts at once: time to ready against "
                 "instances launched together", fig)]  # fmt: skip
