"""Bencher Metric Format (bencher.dev/bmf.json, read by `bencher run --adapter json`):
benchmark -> measure -> {value, lower_value, upper_value}. A benchmark is one condition
as `compare.label` writes it (a figure, its workload, level and runtime), so that Bencher,
which keeps one series per benchmark name, draws one line per condition; a measure is
named by its unit as a slug ("ms", "mib", "requests-s")."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from virtbench.analysis.stats import Summary
from virtbench.report.compare import Key, Row, label
from virtbench.report.compare_words import times

Bmf = dict[str, dict[str, dict[str, float]]]


def slug(unit: str) -> str:
    """A unit as a measure's name: "requests/s" -> "requests-s"."""
    return re.sub(r"[^a-z0-9]+", "-", unit.lower()).strip("-") or "value"


def of_rows(rows: list[Row], name_b: str) -> Bmf:
    """B's figures of a comparison: a benchmark per measure compared ("<measure>
    <name_b>"), its value B's median; beside it, where the change has a CI, "times-a": B
    in A's terms (how many times worse, >1, whichever way the figure improves) with that
    CI as its bounds; compare's verdicts stay in its exit status and its other outputs."""
    out: Bmf = {}
    for row in rows:
        value = row.result.median_b
        if math.isnan(value):
            continue
        mine = out.setdefault(f"{label(row.key)} {name_b}", {})
        mine[slug(row.key[2])] = {"value": float(value)}
        x, lo, hi = times(row)
        if not math.isnan(lo) and not row.reason:
            mine["times-a"] = {"value": x, "lower_value": lo, "upper_value": hi}
    return out


def of_run(summaries: Iterable[tuple[Key, Summary]], emulated: frozenset[str] = frozenset()) -> Bmf:
    """One run's figures under names that stay the same from run to run (a run id is
    not in them): each condition's median, bounded by its 95% CI where it has one; a
    runtime measured under emulation is named so ("... (emulated)")."""
    out: Bmf = {}
    for key, s in summaries:
        if not math.isfinite(s.median):
            continue
        value = {"value": float(s.median)}
        if math.isfinite(s.ci_low) and math.isfinite(s.ci_high):
            value |= {"lower_value": float(s.ci_low), "upper_value": float(s.ci_high)}
        name = label(key) + (" (emulated)" if key[-1] in emulated else "")
        out.setdefault(name, {})[slug(key[2])] = value
    return out
