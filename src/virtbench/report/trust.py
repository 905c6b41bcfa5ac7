"""What a reader must weigh before trusting a run's figures: what the intervals mean,
samples taken on a busy host, figures that depend on what ran before them, and groups
whose values fall in two modes."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from virtbench import metrics
from virtbench.analysis.stats import modes
from virtbench.report.cells import Rows, flagged, fmt
from virtbench.store.frame import Frame, as_frame

CI_NOTE = (
    "95% CI: percentile bootstrap of the median over independent units (repetitions; a "
    "pile-up's instances for per-instance figures), nested values resampled together; "
    'fewer than 5 units: no CI, the range (min-max) instead, named "range"'
)


def two_modes(rows: Rows) -> list[str]:
    """One line per group of values measured under one condition (metric, workload,
    runtime, background instances, attacker and placement) that fall in two separated
    clusters (stats.modes): its median stands for neither. A pile-up's figures, which
    change along the pile-up by design, are not looked at."""
    f = as_frame(rows)
    f = f.take(f.ok)
    looked = np.zeros(len(f), dtype=bool)  # the figures whose modes are looked for, first
    for (metric, workload), idx in f.groups("metric", "workload"):
        m = metrics.lookup(metric, workload)
        looked[idx] = m.summary == "median" and not m.pile_up
    f = f.take(looked)
    keys = ("metric", "workload", "runtime", "unit", "background", "attacker", "placement")
    out = []
    for key, idx in sorted(f.groups(*keys), key=lambda g: g[0]):
        metric, workload, runtime, unit, background, attacker, placement = key
        m = metrics.lookup(metric, workload)
        found = modes(f.value[idx], m.resolution)
        if found:
            where = f" with {background} in the background" if background else ""
            where += f" beside {attacker} ({placement})" if attacker else ""
            named = metrics.label(metric, workload)
            out.append(
                f"{named} ({workload}) on {runtime}{where} has two modes: "
                f"{found.low_n} values near {fmt(found.low_median)} {unit} and "
                f"{found.high_n} near {fmt(found.high_median)} {unit}; its median "
                "describes neither"
            )
    return out


def predecessor_groups(f: Frame) -> dict[str, list[tuple[str, float]]]:
    """Per metric, workload and runtime: (predecessor, value) of each independent unit --
    a repetition (at its background, beside its attackers, on its host), its values'
    median where it holds many (exec's commands in one instance, a pile-up's instances).
    Values of one unit share their instance and their moment, so counting each would
    make a few units look like many, and their chance differences an order effect."""
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    predecessor = f.param("predecessor")
    ok = f.ok & (predecessor != None)  # noqa: E711 (an object array, element-wise)
    sub = f.take(ok)
    pred = predecessor[ok]
    fields = (
        "metric",
        "workload",
        "runtime",
        "repetition",
        "background",
        "attacker",
        "placement",
        "host",
    )
    for (metric, workload, runtime, *_), idx in sub.groups(*fields):
        name = f"{metrics.label(metric, workload)} ({workload}) on {runtime}"
        for p in dict.fromkeys(pred[idx].tolist()):  # one predecessor per unit, as a rule
            groups[name].append((p, float(np.median(sub.value[idx][pred[idx] == p]))))
    return dict(groups)


def trust_notes(samples: Rows) -> list[tuple[str, str]]:
    """(level, text) a reader must weigh: samples measured on a host that was not quiet,
    groups whose figures depend on the runtime measured before them, and groups with two
    modes."""
    from virtbench.analysis.order import order_effects

    f = as_frame(samples)
    f = f.take(~f.warmup)
    out: list[tuple[str, str]] = []
    n = flagged(f)
    if n:
        out.append(
            (
                "warning",
                f"{n} of {len(f)} samples were measured while other work "
                "ran on the host, or its quiet wait timed out (their params: "
                "load > 0 or quiet = false)",
            )
        )
    out += [("warning", e.text()) for e in order_effects(predecessor_groups(f).items())]
    out += [("warning", text) for text in two_modes(f)]
    return out
