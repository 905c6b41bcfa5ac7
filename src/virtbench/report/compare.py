"""A/B comparison: is B really slower than A?

Two sides, each a set of samples: two runs (`virtbench compare A B`), or two runtimes of
one run (`virtbench compare RUN --runtimes a,b`), or one runtime of each of two runs.
Samples are paired by condition: experiment, metric, workload, background count,
attacker, placement and the workload's level (connections, clients...), plus the runtime
when both sides hold the same runtimes. For every condition present on both sides:

  change  = median(B) / median(A) - 1, over one value per independent unit (repetition;
          a pile-up's instance): nested values are averaged within their unit first;
          with 5 units or more a side, its 95% CI (a bootstrap of both medians)
  p       permutation test of the difference of means (significance.ab_test), Holm-corrected
          over all the conditions compared, so more metrics do not mean more false alarms
  verdict "worse" / "better" (in the metric's direction) when p <= alpha and the
          ratio is at least 1 + the minimum effect either way (B/A or A/B: the same
          verdict, mirrored, whichever side is A); where either side's median is within
          the method's resolution of zero a ratio means nothing, and the verdict is
          decided on the difference (B - A, with its 95% CI) beyond that resolution;
          "too few" when no test of these sample sizes
          could reach alpha after Holm's correction over the m conditions (smallest
          possible p x m > alpha; 3 vs 3 never can: its smallest p is 0.1); "failed"
          when B has only failed samples where A has values, "missing" when B lacks a
          condition A measured; else "no change"

Failed samples count only as failures, warm-ups not at all; figures the registry keeps
out (virtbench.metrics `ab_compared`: the host's availability) are not compared. Conditions only
B measured are not shown.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.fit import p_difference
from virtbench.analysis.significance import (
    ABResult,
    ab_tests,
    difference_verdict,
    holm,
    min_p,
    p_floor,
    verdict,
)
from virtbench.analysis.stats import difference_ci, slowdown_ci
from virtbench.errors import VirtbenchError
from virtbench.report.cells import (
    P_FLOOR,
    Rows,
    add_columns,
    fmt,
    median_cell,
    p_text,
    refusal,
    scaled,
    span,
    unit_keys,
)
from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import Sample

Key = tuple[str, ...]


def condition(s: Sample, with_runtime: bool) -> Key:
    """What must match for two samples to be compared."""
    level = s.params.get("level")
    # a pile-up's background count is where in it, not a condition: one group per run
    background = "0" if metrics.lookup(s.metric, s.workload).pile_up else str(s.background)
    key = (
        s.experiment,
        s.metric,
        s.unit,
        s.workload,
        background,
        s.attacker,
        s.placement,
        "" if level is None else str(level),
    )
    return (*key, s.runtime) if with_runtime else key


def label(key: Key) -> str:
    """A condition as one readable cell: the figure's label (workload, level, background...)."""
    _experiment, metric, _unit, workload, background, attacker, placement, level = key[:8]
    parts = [workload]
    if level and not metric.endswith(f"@{level}"):
        parts.append(f"@{level}")
    if background != "0":
        parts.append(f"{background} background")
    if attacker:
        parts.append(f"{attacker}/{placement}")
    if len(key) > 8:
        parts.append(key[8])
    return f"{metrics.label(metric, workload)} ({', '.join(parts)})"


@dataclass(frozen=True)
class Row:
    key: Key
    direction: str
    result: ABResult
    p_adjusted: float
    verdict: str
    reason: str = ""  # why there is no ratio ("no ratio")
    cells: tuple[str, str] = ("", "")  # A's and B's figure as shown, where not a median
    # the change's 95% CI (a bootstrap of the two medians over units); nan: none
    ci: tuple[float, float] = (math.nan, math.nan)
    # where there is no ratio: B - A and its 95% CI (nan: none)
    diff: tuple[float, float, float] = (math.nan, math.nan, math.nan)


def _fit_results(
    a: Frame, b: Frame, with_runtime: bool
) -> dict[Key, tuple[ABResult, str, tuple[str, str]]]:
    """Memory costs (slopes, report/fits.py) on both sides: B's slope against A's, the
    p of their difference, and why there is no ratio where A's is below resolution."""
    from virtbench.report.fits import baseline_refusal, cost_cells, cost_fits

    fa, fb = cost_fits(a), cost_fits(b)
    out: dict[Key, tuple[ABResult, str, tuple[str, str]]] = {}
    for (metric, rt), x in fa.items():
        side_b = [
            f for (mb, rb), f in fb.items() if mb == metric and (rb == rt or not with_runtime)
        ]
        if len(side_b) != 1:
            continue
        y = side_b[0]
        key = fit_key(a, metric, rt)
        key = key if with_runtime else key[:-1]
        why = baseline_refusal(x, metric, "A") or baseline_refusal(y, metric, "B") or ""
        change = math.nan if why else y.slope / x.slope - 1
        r = ABResult(x.points, y.points, x.slope, y.slope, change, p_difference(x, y))
        out[key] = (r, why, (cost_cells(x, metric)[0], cost_cells(y, metric)[0]))
    return out


def fit_key(f: Frame, metric: str, runtime: str) -> Key:
    """The condition (with its runtime) of a memory cost fitted from the frame's series:
    its workload is the series', and it has no background, attacker or level."""
    m = metrics.lookup(metric)
    rows = np.flatnonzero(f.where("metric", m.fits or "") & f.where("runtime", runtime))
    workload = f.labels["workload"][f.codes["workload"][rows[0]]] if rows.size else ""
    return (metric.partition(".")[0], metric, m.unit, workload, "0", "", "", "", runtime)


FIELDS = (
    "experiment",
    "metric",
    "unit",
    "workload",
    "background",
    "attacker",
    "placement",
    "params",
    "runtime",
)  # what a condition is made of (`condition`)


def _groups(f: Frame, with_runtime: bool) -> dict[Key, np.ndarray]:
    """Indices of non-warm-up rows by condition (`condition`), failed ones included
    (they count as failures); only the figures compare compares (virtbench.metrics)."""
    return condition_rows(f, with_runtime, lambda m: m.ab_compared)


def condition_rows(
    f: Frame, with_runtime: bool, wanted: Callable[[metrics.Metric], bool]
) -> dict[Key, np.ndarray]:
    """Indices of non-warm-up rows by condition (`condition`) in the order first
    measured, of the figures `wanted` (given each one's declaration) keeps."""
    keep = np.flatnonzero(~f.warmup)
    merged: dict[Key, list[np.ndarray]] = defaultdict(list)
    for fields, rows in f.take(keep).groups(*FIELDS):
        exp, metric, unit, workload, bg, attacker, placement, params, runtime = fields
        m = metrics.lookup(metric, workload)
        if not wanted(m):
            continue
        level = json.loads(params).get("level")
        key = (
            exp,
            metric,
            unit,
            workload,
            "0" if m.pile_up else str(bg),
            attacker,
            placement,
            "" if level is None else str(level),
        )
        merged[(*key, runtime) if with_runtime else key].append(keep[rows])
    return {k: np.sort(np.concatenate(v)) for k, v in merged.items()}


def unit_means(f: Frame, rows: np.ndarray) -> np.ndarray:
    """One value per independent unit (report/cells.py `unit_of`), in the order the
    units were first measured: the mean of a unit's nested values (batches of one
    instance, boots at one point of one pile-up), so the test counts units, not the
    correlated values inside them."""
    rows = rows[f.ok[rows]]
    if not rows.size:
        return np.zeros(0)
    _, first, inverse = np.unique(unit_keys(f, rows), return_index=True, return_inverse=True)
    means = np.bincount(inverse, weights=f.value[rows]) / np.bincount(inverse)
    return means[np.argsort(first, kind="stable")]


def _chosen(keys: list[Key], patterns: list[str] | None) -> list[Key]:
    """The conditions whose metric one of the glob `patterns` matches (all of them
    without patterns), in their order."""
    if not patterns:
        return keys
    return [k for k in keys if any(fnmatch.fnmatchcase(k[1], m) for m in patterns)]


def compare(
    a: Rows,
    b: Rows,
    with_runtime: bool,
    *,
    alpha: float = 0.05,
    min_effect: float = 0.05,
    metrics: list[str] | None = None,
) -> list[Row]:
    """One row per condition measured in A (`metrics`: glob patterns to keep). A condition
    B lacks is "missing", one where B has no successful value while A has is "failed":
    both are regressions, not rows to leave out."""
    fa, fb = as_frame(a), as_frame(b)
    ga, gb = _groups(fa, with_runtime), _groups(fb, with_runtime)
    va = {k: unit_means(fa, rows) for k, rows in ga.items()}
    vb = {k: unit_means(fb, rows) for k, rows in gb.items()}
    keys = _chosen([k for k in ga if va[k].size], metrics)
    if not any(k in gb for k in keys):
        raise VirtbenchError(
            "compare: no measurement appears on both sides (same experiment, metric, "
            "workload and conditions); check the runs, --runtimes or --metric"
        )
    tested = [k for k in keys if k in vb and vb[k].size]
    results = dict(zip(tested, ab_tests([(va[k], vb[k]) for k in tested]), strict=True))
    why = {k: _no_ratio(k, results[k]) for k in tested}
    fits = _fit_results(fa, fb, with_runtime)
    fitted = {k: fits[k] for k in _chosen(list(fits), metrics)}
    shown = {}
    for k, (r, reason, cells) in fitted.items():
        results[k], why[k], shown[k] = r, reason, cells
    tested += list(fitted)
    keys += list(fitted)
    adjusted = dict(zip(tested, holm([results[k].p for k in tested]), strict=True))
    m = sum(1 for k in tested if not math.isnan(results[k].p))
    rows = []

    def direction_of(k: Key) -> str:
        if k not in ga:
            return "lower"  # a memory cost: less is better
        return fa.labels["direction"][fa.codes["direction"][ga[k][0]]]

    for k in keys:
        if k not in results:
            r = ABResult(va[k].size, 0, float(np.median(va[k])), math.nan, math.nan, math.nan)
            rows.append(Row(k, direction_of(k), r, math.nan, "failed" if k in gb else "missing"))
            continue
        r, p = results[k], adjusted[k]
        cells = shown.get(k, ("", ""))
        if why[k]:
            sides = None if k in fitted else (va[k], vb[k])
            rows.append(_no_ratio_row(k, direction_of(k), r, p, alpha, why[k], cells, sides))
            continue
        v = verdict(r, direction_of(k), p, alpha, min_effect)
        if v == "no change" and min_p(r.n_a, r.n_b) * m > alpha:
            v = "too few"  # Holm multiplies the smallest p by m: these sizes cannot reach alpha
        ci = change_ci(va[k], vb[k]) if k not in fitted else (math.nan, math.nan)
        rows.append(Row(k, direction_of(k), r, p, v, "", cells, ci))
    return rows


def _no_ratio_row(
    k: Key,
    direction: str,
    r: ABResult,
    p: float,
    alpha: float,
    reason: str,
    cells: tuple[str, str],
    sides: tuple[np.ndarray, np.ndarray] | None,
) -> Row:
    """A row without a ratio, decided on B - A (with its CI where `sides` gives the
    units' values), beyond the method's resolution."""
    v = difference_verdict(r, direction, p, alpha, metrics.lookup(k[1], k[3]).resolution)
    ci = difference_ci(*sides) if sides is not None else (math.nan, math.nan)
    return Row(k, direction, r, p, v, reason, cells, diff=(r.median_b - r.median_a, *ci))


def _no_ratio(k: Key, r: ABResult) -> str:
    """Why B against A has no ratio ("": it has one): either side's median within the
    method's resolution of zero, whichever side it is."""
    return refusal(k[1], k[3], r.median_a) or refusal(k[1], k[3], r.median_b, "B")


VERDICT_STYLE = {
    "worse": "red",
    "failed": "red",
    "missing": "red",
    "better": "green",
    "no change": "",
    "too few": "dim",
}
REGRESSIONS = ("worse", "failed", "missing")


def change_ci(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The 95% CI of median(B) / median(A) - 1 over one value per unit: a percentile
    bootstrap of both sides (analysis/stats.slowdown_ci, as "lower": B over A); nan
    with fewer than 5 units on a side."""
    _, lo, hi = slowdown_ci(a, b, "lower")
    return lo, hi


def cells(row: Row) -> list[str]:
    """A row's cells as the verdict table shows them (plain text)."""
    r, unit = row.result, row.key[2]
    change = f"{r.change * 100:+.1f}%" if not math.isnan(r.change) else "n/a"
    if not math.isnan(row.ci[0]) and not math.isnan(r.change):
        change += f" ({span(row.ci[0] * 100, row.ci[1] * 100, '%', digits=2)})"
    if row.reason:  # no ratio: the difference, in the figure's unit
        change = difference_cell(row)
    m = metrics.lookup(row.key[1], row.key[3])
    medians = (median_cell(r.median_a, unit, m), median_cell(r.median_b, unit, m))
    a_cell, b_cell = row.cells if row.cells[0] else medians
    n = f"{r.n_a}/{r.n_b}" + (" steps" if row.cells[0] else "")
    return [label(row.key), a_cell, b_cell, change, p_cell(row), n, row.verdict]


def difference_cell(row: Row) -> str:
    """B - A in the figure's unit, with its 95% CI where it has one ("n/a": none)."""
    d, lo, hi = row.diff
    if math.isnan(d):
        return "n/a"
    unit = row.key[2]
    factor, shown = scaled(max(abs(d), abs(lo) if not math.isnan(lo) else 0.0), unit)
    text = f"{'+' if d > 0 else ''}{fmt(d * factor)} {shown}"
    return text if math.isnan(lo) else f"{text} ({span(lo * factor, hi * factor, shown)})"


def p_cell(row: Row) -> str:
    """The Holm-corrected p; "< x" where the test resampled and no resample was as far
    apart as the sides (its p is then a bound: significance.p_floor)."""
    if math.isnan(row.p_adjusted):
        return "n/a"
    floor = p_floor(row.result.n_a, row.result.n_b)
    bound = row.result.method == "permutation" and floor and row.result.p <= floor
    if bound and row.p_adjusted >= P_FLOOR:
        return f"< {fmt(row.p_adjusted, 2)}"
    return p_text(row.p_adjusted)


def headers() -> list[str]:
    """The verdict table's headers: A and B by their letters (the title names them:
    `title`), so the table keeps its layout at 80 columns."""
    return ["measure", "A", "B", "change (95% CI)", "p (Holm)", "n", "verdict"]


def title(name_a: str, name_b: str, min_effect: float, alpha: float) -> str:
    """The verdict table's title: which run and runtime is A, which B, and the test."""
    return f"A = {name_a}, B = {name_b}: B against A (min effect {min_effect:g}%, alpha {alpha:g})"


MEASURE_MIN = 20


def verdict_table(title: str, rows: list[Row], name_a: str, name_b: str) -> Table:
    t = Table(title=title, title_justify="left")
    add_columns(t, headers(), ("measure", "verdict"))
    t.columns[0].min_width = MEASURE_MIN  # a measure's name, never a word a line
    for row in rows:
        *rest, v = cells(row)
        t.add_row(*rest, _styled(v))
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
