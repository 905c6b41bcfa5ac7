"""What each figure a run shows means: its label, its unit and its one-line definition,
from the metric registry (what it includes, from which event to which, by which clock)."""

from __future__ import annotations

from virtbench import metrics
from virtbench.store.frame import Frame


def glossary(f: Frame) -> list[tuple[str, str, str]]:
    """(label, unit, definition) of every figure the run's samples hold, and of each
    slope fitted to a series they hold (memory per instance), once per declaration (a
    family's members share one, shown by its first member's label), in the order the
    registry declares them."""
    seen: dict[int, tuple[str, str, str]] = {}
    order = {id(m): i for i, m in enumerate(metrics.registry())}
    for (metric, workload, unit), _ in f.groups("metric", "workload", "unit"):
        m = metrics.lookup(metric, workload)
        key = id(m)
        if key in seen:
            continue
        seen[key] = (m.label_of(metric), unit or m.unit, m.includes)
    held = set(f.distinct("metric"))
    for m in metrics.fitted():  # a slope of a series the run holds: read, never stored
        if m.fits in held:
            seen[id(m)] = (m.label_of(m.name), m.unit, m.includes)
    ranked = sorted(seen.items(), key=lambda kv: order.get(kv[0], len(order)))
    return [entry for _, entry in ranked]
