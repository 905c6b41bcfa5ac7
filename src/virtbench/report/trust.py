"""What a reader must weigh before trusting a run's figures: what the intervals mean,
samples taken on a busy host, figures that depend on what ran before them, and groups
whose values fall in two modes."""

from __future__ import annotations

from collections import defaultdict

from virtbench import metrics
from virtbench.records import Sample
from virtbench.report.tables import flagged, fmt
from virtbench.stats import modes

CI_NOTE = (
    "95% CI: percentile bootstrap of the median over independent units (repetitions; a "
    "pile-up's instances for per-instance figures), nested values resampled together; "
    "fewer than 5 units: the range instead"
)


def two_modes(rows: list[Sample]) -> list[str]:
    """One line per group of values measured under one condition (metric, workload,
    runtime, background instances, attacker and placement) that fall in two separated
    clusters (stats.modes): its median stands for neither. A pile-up's figures, which
    change along the pile-up by design, are not looked at."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for s in rows:
        m = metrics.lookup(s.metric, s.workload)
        if s.error or s.value is None or m.summary != "median" or m.pile_up:
            continue
        condition = (s.background, str(s.params.get("attacker", "")),
                     str(s.params.get("placement", "")))  # fmt: skip
        groups[(s.metric, s.workload, s.runtime, s.unit, condition)].append(s.value)
    out = []
    for (metric, workload, runtime, unit, condition), vals in sorted(groups.items()):
        found = modes(vals, metrics.lookup(metric, workload).resolution)
        if found:
            background, attacker, placement = condition
            where = f" with {background} in the background" if background else ""
            where += f" beside {attacker} ({placement})" if attacker else ""
            out.append(
                f"{metric} ({workload}) on {runtime}{where} has two modes: "
                f"{found.low_n} values near {fmt(found.low_median)} {unit} and "
                f"{found.high_n} near {fmt(found.high_median)} {unit}; its median "
                "describes neither"
            )
    return out


def trust_notes(samples: list[Sample]) -> list[tuple[str, str]]:
    """(level, text) a reader must weigh: samples measured on a host that was not quiet,
    groups whose figures depend on the runtime measured before them, and groups with two
    modes."""
    from virtbench.experiments.order import order_effects

    rows = [s for s in samples if not s.warmup]
    out: list[tuple[str, str]] = []
    n = flagged(rows)
    if n:
        out.append(("warning", f"{n} of {len(rows)} samples were measured while other work "
                               "ran on the host, or its quiet wait timed out (their params: "
                               "load > 0 or quiet = false)"))  # fmt: skip
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for s in rows:
        if "predecessor" in s.params and not s.error and s.value is not None:
            name = f"{s.metric} ({s.workload}) on {s.runtime}"
            groups[name].append((s.params["predecessor"], s.value))
    out += [("warning", e.text()) for e in order_effects(groups.items())]
    out += [("warning", text) for text in two_modes(rows)]
    return out
