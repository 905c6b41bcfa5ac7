"""What each figure a run shows means: its label, its unit and its one-line definition,
from the metric registry (what it includes, from which event to which, by which clock)."""

from __future__ import annotations

import re

from virtbench import metrics
from virtbench.report.cells import SCALES
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
        seen[key] = (m.label_of(metric), shown_unit(unit or m.unit), plain(m.includes))
    held = set(f.distinct("metric"))
    for m in metrics.fitted():  # a slope of a series the run holds: read, never stored
        if m.fits in held:
            seen[id(m)] = (m.label_of(m.name), shown_unit(m.unit), plain(m.includes))
    ranked = sorted(seen.items(), key=lambda kv: order.get(kv[0], len(order)))
    return [entry for _, entry in ranked]


def shown_unit(unit: str) -> str:
    """A figure's unit as the tables show it: memory in KiB, MiB or GiB as its size
    needs (cells.scaled), any other as it is."""
    choices = SCALES.get(unit)
    return ", ".join(name for name, _ in choices) if choices else unit


def plain(text: str) -> str:
    """A definition as prose: the code marks of a name (`some`) left out."""
    return re.sub(r"`([^`]*)`", r"\1", text)
