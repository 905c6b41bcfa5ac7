"""A/B comparison: is B really slower than A?

Two sides, each a set of samples: two runs (`virtbench compare A B`), or two runtimes of
one run (`virtbench compare RUN --runtimes a,b`), or one runtime of each of two runs.
Samples are paired by condition: experiment, metric, workload, background count,
attacker, placement and the workload's level (connections, clients...), plus the runtime
when both sides hold the same runtimes. For every condition present on both sides:

  change  = median(B) / median(A) - 1, over one value per independent unit (repetition;
          a pile-up's instance): nested values are averaged within their unit first
  p       permutation test of the difference of means (stats.ab_test), Holm-corrected
          over all the conditions compared, so more metrics do not mean more false alarms
  verdict "worse" / "better" (in the metric's direction) when p <= alpha and
          |change| >= the minimum effect; "too few" when no test of these sample sizes
          could reach alpha after Holm's correction over the m conditions (smallest
          possible p x m > alpha; 3 vs 3 never can: its smallest p is 0.1); "failed"
          when B has only failed samples where A has values, "missing" when B lacks a
          condition A measured; else "no change"

Failed samples count only as failures, warm-ups not at all; figures the registry keeps
out (metrics.py `ab_compared`: the host's availability) are not compared. Conditions only
B measured are not shown.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.errors import VirtbenchError
from virtbench.fit import p_difference
from virtbench.records import Sample
from virtbench.report.tables import add_columns, fmt, refusal, unit_values
from virtbench.stats import ABResult, ab_test, holm, min_p, verdict

Key = tuple[str, ...]


def condition(s: Sample, with_runtime: bool) -> Key:
    """What must match for two samples to be compared."""
    level = s.params.get("level")
    # a pile-up's background count is where in it, not a condition: one group per run
    background = "0" if metrics.lookup(s.metric, s.workload).pile_up else str(s.background)
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
    reason: str = ""  # why there is no ratio ("no ratio")
    cells: tuple[str, str] = ("", "")  # A's and B's figure as shown, where not a median


def _fit_results(
    a: list[Sample], b: list[Sample], with_runtime: bool
) -> dict[Key, tuple[ABResult, str, tuple[str, str]]]:
    """Memory costs (slopes, report/fits.py) on both sides: B's slope against A's, the
    p of their difference, and why there is no ratio where A's is below resolution."""
    from virtbench.report.fits import baseline_refusal, cost_cells, cost_fits

    fa, fb = cost_fits(a), cost_fits(b)
    out: dict[Key, tuple[ABResult, str, tuple[str, str]]] = {}
    for (metric, rt), x in fa.items():
        m = metrics.lookup(metric)
        side_b = [f for (mb, rb), f in fb.items()
                  if mb == metric and (rb == rt or not with_runtime)]  # fmt: skip
        if len(side_b) != 1:
            continue
        y = side_b[0]
        workload = next((s.workload for s in a if s.metric == m.fits and s.runtime == rt), "")
        key = ("density", metric, m.unit, workload, "0", "", "", "")
        key = (*key, rt) if with_runtime else key
        why = baseline_refusal(x, metric, "A") or ""
        change = math.nan if why else y.slope / x.slope - 1
        r = ABResult(x.points, y.points, x.slope, y.slope, change, p_difference(x, y))
        out[key] = (r, why, (cost_cells(x, metric)[0], cost_cells(y, metric)[0]))
    return out


def _groups(samples: list[Sample], with_runtime: bool) -> dict[Key, list[Sample]]:
    """Non-warm-up samples by condition, failed ones included (they count as failures)."""
    out: dict[Key, list[Sample]] = defaultdict(list)
    for s in samples:
        if not s.warmup and metrics.lookup(s.metric, s.workload).ab_compared:
            out[condition(s, with_runtime)].append(s)
    return out


def _values(rows: list[Sample]) -> list[float]:
    """One value per independent unit (report/tables.py `unit_of`): the mean of a unit's
    nested values (batches of one instance, boots at one point of one pile-up), so the
    test counts units, not the correlated values inside them."""
    return unit_values(rows)


def compare(
    a: list[Sample],
    b: list[Sample],
    with_runtime: bool,
    alpha: float = 0.05,
    min_effect: float = 0.05,
    metrics: list[str] | None = None,
) -> list[Row]:
    """One row per condition measured in A (`metrics`: glob patterns to keep). A condition
    B lacks is "missing", one where B has no successful value while A has is "failed":
    both are regressions, not rows to leave out."""
    ga, gb = _groups(a, with_runtime), _groups(b, with_runtime)
    keys = [k for k in ga if _values(ga[k])]
    if metrics:
        keys = [k for k in keys if any(fnmatch.fnmatchcase(k[1], m) for m in metrics)]
    if not any(k in gb for k in keys):
        raise VirtbenchError(
            "compare: no measurement appears on both sides (same experiment, metric, "
            "workload and conditions); check the runs, --runtimes or --metric"
        )
    tested = [k for k in keys if _values(gb.get(k, []))]
    results = {k: ab_test(_values(ga[k]), _values(gb[k])) for k in tested}
    why = {k: refusal(k[1], k[3], results[k].median_a) for k in tested}
    fitted = _fit_results(a, b, with_runtime)
    if metrics:
        fitted = {k: v for k, v in fitted.items()
                  if any(fnmatch.fnmatchcase(k[1], m) for m in metrics)}  # fmt: skip
    shown = {}
    for k, (r, reason, cells) in fitted.items():
        results[k], why[k], shown[k] = r, reason, cells
    tested += list(fitted)
    keys += list(fitted)
    adjusted = dict(zip(tested, holm([results[k].p for k in tested]), strict=True))
    m = sum(1 for k in tested if not math.isnan(results[k].p))
    rows = []
    for k in keys:
        if k not in results:
            direction = ga[k][0].direction
            va = _values(ga[k])
            r = ABResult(len(va), 0, float(np.median(va)), math.nan, math.nan, math.nan)
            rows.append(Row(k, direction, r, math.nan, "failed" if k in gb else "missing"))
            continue
        direction = ga[k][0].direction if k in ga else "lower"  # a memory cost: less is better
        r, p = results[k], adjusted[k]
        cells = shown.get(k, ("", ""))
        if why[k]:
            rows.append(Row(k, direction, r, p, "no ratio", why[k], cells))
            continue
        v = verdict(r, direction, p, alpha, min_effect)
        if v == "no change" and min_p(r.n_a, r.n_b) * m > alpha:
            v = "too few"  # Holm multiplies the smallest p by m: these sizes cannot reach alpha
        rows.append(Row(k, direction, r, p, v, "", cells))
    return rows


VERDICT_STYLE = {
    "worse": "red",
    "failed": "red",
    "missing": "red",
    "better": "green",
    "no change": "",
    "too few": "dim",
    "no ratio": "yellow",
}
REGRESSIONS = ("worse", "failed", "missing")


def verdict_table(title: str, rows: list[Row], name_a: str, name_b: str) -> Table:
    t = Table(title=title, title_justify="left")
    cols = ["measure", f"A: {name_a}", f"B: {name_b}", "change", "p (Holm)", "n", "verdict"]
    add_columns(t, cols, ("measure", "verdict"))
    for row in rows:
        r, unit = row.result, row.key[2]
        change = f"{r.change * 100:+.1f}%" if not math.isnan(r.change) else "-"
        p = f"{row.p_adjusted:.3g}" if not math.isnan(row.p_adjusted) else "-"
        a_cell, b_cell = row.cells if row.cells[0] else (f"{fmt(r.median_a)} {unit}",
                                                         f"{fmt(r.median_b)} {unit}")  # fmt: skip
        n = f"{r.n_a}/{r.n_b}" + (" steps" if row.cells[0] else "")
        t.add_row(label(row.key), a_cell, b_cell, change, p, n, _styled(row.verdict))
    return t


def _styled(v: str) -> str:
    style = VERDICT_STYLE[v]
    return f"[{style}]{v}[/]" if style else v


def reasons(rows: list[Row]) -> list[str]:
    """One line per row without a ratio: what it is and why."""
    return [f"{label(row.key)}: {row.reason}" for row in rows if row.reason]


def counts(rows: list[Row]) -> dict[str, int]:
    out = dict.fromkeys(VERDICT_STYLE, 0)
    for row in rows:
        out[row.verdict] += 1
    return out
