"""A/B comparison: is B really slower than A?

Two sides, each a set of samples: two runs (`virtbench compare A B`), or two runtimes of
one run (`virtbench compare RUN --runtimes a,b`), or one runtime of each of two runs.
Samples are paired by condition: experiment, metric, workload, background count,
attacker, placement and the workload's level (connections, clients...), plus the runtime
when both sides hold the same runtimes. For every condition present on both sides:

  change  = median(B) / median(A) - 1
  p       permutation test of the difference of means (stats.ab_test), Holm-corrected
          over all the conditions compared, so more metrics do not mean more false alarms
  verdict "worse" / "better" (in the metric's direction) when p <= alpha and
          |change| >= the minimum effect; "too few" when no test of these sample sizes
          could reach alpha (3 vs 3 cannot: its smallest p is 0.1); else "no change"

Failed and warm-up samples are left out; host availability series are not compared.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from dataclasses import dataclass

from rich.table import Table

from virtbench.errors import VirtbenchError
from virtbench.report.tables import add_columns, fmt
from virtbench.stats import ABResult, ab_test, holm, verdict
from virtbench.store import Sample

Key = tuple[str, ...]


# Figures taken once per instance as they pile up: the background count is where in the
# pile-up, not a condition, so all of a run's values are one group.
PILE_UP = ("density.", "scalability.")


def condition(s: Sample, with_runtime: bool) -> Key:
    """What must match for two samples to be compared."""
    level = s.params.get("level")
    background = "0" if s.metric.startswith(PILE_UP) else str(s.background)
    key = (s.experiment, s.metric, s.unit, s.workload, background, s.attacker,
           s.placement, "" if level is None else str(level))  # fmt: skip
    return (*key, s.runtime) if with_runtime else key


def label(key: Key) -> str:
    """A condition as one readable cell: metric (workload, level, background, ...)."""
    experiment, metric, _unit, workload, background, attacker, placement, level = key[:8]
    parts = [workload]
    if level and not metric.endswith(f"@{level}"):
        parts.append(f"@{level}")
    if background != "0":
        parts.append(f"{background} background")
    if attacker:
        parts.append(f"{attacker}/{placement}")
    if len(key) > 8:
        parts.append(key[8])
    return f"{metric.removeprefix(experiment + '.')} ({', '.join(parts)})"


@dataclass(frozen=True)
class Row:
    key: Key
    direction: str
    result: ABResult
    p_adjusted: float
    verdict: str


def _groups(samples: list[Sample], with_runtime: bool) -> dict[Key, list[Sample]]:
    out: dict[Key, list[Sample]] = defaultdict(list)
    for s in samples:
        if not s.warmup and not s.error and not s.metric.startswith("host."):
            out[condition(s, with_runtime)].append(s)
    return out


def compare(
    a: list[Sample],
    b: list[Sample],
    with_runtime: bool,
    alpha: float = 0.05,
    min_effect: float = 0.05,
    metrics: list[str] | None = None,
) -> list[Row]:
    """One row per condition found on both sides (`metrics`: glob patterns to keep)."""
    ga, gb = _groups(a, with_runtime), _groups(b, with_runtime)
    keys = [k for k in ga if k in gb]
    if metrics:
        keys = [k for k in keys if any(fnmatch.fnmatchcase(k[1], m) for m in metrics)]
    if not keys:
        raise VirtbenchError(
            "compare: no measurement appears on both sides (same experiment, metric, "
            "workload and conditions); check the runs, --runtimes or --metric"
        )
    results = [ab_test([s.value for s in ga[k]], [s.value for s in gb[k]]) for k in keys]
    adjusted = holm([r.p for r in results])
    rows = []
    for k, r, p in zip(keys, results, adjusted, strict=True):
        direction = ga[k][0].direction
        rows.append(Row(k, direction, r, p, verdict(r, direction, p, alpha, min_effect)))
    return rows


VERDICT_STYLE = {"worse": "red", "better": "green", "no change": "", "too few": "dim"}


def verdict_table(title: str, rows: list[Row], name_a: str, name_b: str) -> Table:
    t = Table(title=title, title_justify="left")
    cols = ["measure", f"A: {name_a}", f"B: {name_b}", "change", "p (Holm)", "n", "verdict"]
    add_columns(t, cols, ("measure", "verdict"))
    for row in rows:
        r, unit = row.result, row.key[2]
        change = f"{r.change * 100:+.1f}%" if not math.isnan(r.change) else "-"
        p = f"{row.p_adjusted:.3g}" if not math.isnan(row.p_adjusted) else "-"
        style = VERDICT_STYLE[row.verdict]
        cell = f"[{style}]{row.verdict}[/]" if style else row.verdict
        t.add_row(label(row.key), f"{fmt(r.median_a)} {unit}", f"{fmt(r.median_b)} {unit}",
                  change, p, f"{r.n_a}/{r.n_b}", cell)  # fmt: skip
    return t


def counts(rows: list[Row]) -> dict[str, int]:
    out = dict.fromkeys(VERDICT_STYLE, 0)
    for row in rows:
        out[row.verdict] += 1
    return out
