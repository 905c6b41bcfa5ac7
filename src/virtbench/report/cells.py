"""How a group of samples becomes a table cell: its independent units, its summary with
spread and n, and the formatting and sorting every table of the report and terminal
shares (tables.py lays out the run's tables, fits.py the trend and cost ones)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.stats import BOOTSTRAP_MAX_VALUES, CI_BOOTSTRAP, Summary, summarize
from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import Sample, values_of

Rows = Frame | list[Sample]


def fmt(x: float | None, digits: int = 3) -> str:
    """A number as people write it: `digits` significant digits, never in scientific
    notation ("0.0117", "20.1"), thousands grouped from 1,000 ("-1,420"); "n/a" for
    none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x == 0:
        return "0"
    return np.format_float_positional(x, precision=digits, fractional=False, trim="-")


P_FLOOR = 0.001  # smaller p values all read "< 0.001": their digits mean nothing more


def p_text(p: float) -> str:
    """A p value as people write it: "0.012", "< 0.001"; "n/a" for none."""
    if math.isnan(p):
        return "n/a"
    return f"< {P_FLOOR:g}" if p < P_FLOOR else fmt(p, 2)


def span(low: float, high: float, unit: str = "", digits: int = 3) -> str:
    """An interval as the whole project writes it: "1.24-1.48 ms"; "-39.3 to -30.5%"
    where a bound is negative (a hyphen would read as a minus); "n/a" for none."""
    if math.isnan(low) or math.isnan(high):
        return "n/a"
    sep = " to " if low < 0 or high < 0 else "-"
    text = f"{fmt(low, digits)}{sep}{fmt(high, digits)}"
    return f"{text}{'' if not unit or unit.startswith('%') else ' '}{unit}"


# Units a value is shown in as its size needs: (unit as stored, [(bigger unit, factor)])
SCALES: dict[str, tuple[tuple[str, float], ...]] = {
    "MiB": (("KiB", 1024.0), ("MiB", 1.0), ("GiB", 1 / 1024)),
    "KiB": (("KiB", 1.0), ("MiB", 1 / 1024), ("GiB", 1 / 1024**2)),
}


def scaled(value: float, unit: str) -> tuple[float, str]:
    """(factor, unit) to show `value` (stored in `unit`) in: memory in KiB, MiB or GiB
    as its size needs (1 <= shown < 1024 where it can be); any other unit as it is."""
    choices = SCALES.get(unit)
    if not choices or math.isnan(value):
        return 1.0, unit
    if value == 0:  # nothing, in the smallest unit the tables use (0 KiB)
        return choices[0][1], choices[0][0]
    for name, factor in choices:
        small = abs(value * factor) < 1 and name != choices[0][0]
        if abs(value * factor) < 1024 and not small:
            return factor, name
    return choices[-1][1], choices[-1][0]


def quantity(
    value: float, unit: str, low: float = math.nan, high: float = math.nan
) -> tuple[str, str]:
    """(figure, its interval) with their unit, both in the unit the figure's size needs
    ("12 KiB", "9.77-12.7 KiB")."""
    if math.isnan(value):
        return "n/a", span(low, high)
    factor, shown = scaled(value, unit)
    text = f"{fmt(value * factor)}{'' if shown.startswith('%') else ' '}{shown}".rstrip()
    return text, span(low * factor, high * factor, shown)


def median_cell(value: float, unit: str, m: metrics.Metric) -> str:
    """A median, or "< X" where it lies within the method's resolution X of zero (a
    counter the kernel adds up in batches reads 0 with up to a batch uncounted); a count's
    0 is exact and stays."""
    res = m.resolution
    count = res is not None and float(res).is_integer() and unit != "%"
    if res is not None and m.lower_bound == 0.0 and 0 <= value < res and not (count and value == 0):
        return f"< {quantity(res, unit)[0]}"
    return quantity(value, unit)[0]


CI_HEADER = "95% CI"  # a column of confidence intervals only
RANGE_HEADER = "range"  # of ranges only: groups of fewer than MIN_UNITS units
MIXED_HEADER = "interval"  # of both: each cell says which it holds


def interval(st: Summary, unit: str = "") -> tuple[str, str]:
    """(what, text) of a summary's interval, in the unit its median is shown in
    (`quantity`): (CI_HEADER, "0.6-0.9 ms") where it has a 95% CI. With fewer than
    MIN_UNITS independent units there is none and the range is shown: (RANGE_HEADER,
    "0.6-0.9 ms (of 3)"), "(of 9 in 3 units)" where units hold several values; ("",
    "one value") for one run's figure (a pile-up's count), ("", "n/a") for none."""
    factor, shown = scaled(st.median, unit)
    if st.has_ci:
        return CI_HEADER, span(st.ci_low * factor, st.ci_high * factor, shown)
    if st.units == 1 and st.minimum == st.maximum:
        return "", "one value"
    if not st.n:
        return "", "n/a"
    of = f"{st.units}" if st.units == st.n else f"{st.n} in {st.units} unit"
    of += "s" if st.units > 1 and st.units != st.n else ""
    return RANGE_HEADER, f"{span(st.minimum * factor, st.maximum * factor, shown)} (of {of})"


def interval_column(sts: Iterable[Summary], units: Iterable[str] = ()) -> tuple[str, list[str]]:
    """(header, cells) of a column of the summaries' intervals (each in its unit, where
    `units` gives them), its header saying what the cells hold, so that no range ever
    stands under a CI's name: "95% CI" over CIs, "range" over ranges, and over both
    "interval", each cell then naming its own ("95% CI 1.2-1.5", "range 0.6-0.9 (of 3)")."""
    sts = list(sts)
    found = [interval(st, u) for st, u in zip(sts, [*units, *[""] * len(sts)], strict=False)]
    kinds = {what for what, _ in found if what}
    if len(kinds) > 1:
        return MIXED_HEADER, [f"{what} {text}" if what else text for what, text in found]
    return (kinds.pop() if kinds else CI_HEADER), [text for _, text in found]


def cv_cell(st: Summary) -> str:
    return f"{st.cv * 100:.1f}%" if not math.isnan(st.cv) else "n/a"


def add_interval_rows(
    t: Table,
    rows: list[tuple[list[str], Summary]],
    at: int,
    units: Iterable[str] = (),
    grouped: bool = False,
    below: Iterable[bool] = (),
) -> None:
    """Add `rows` (cells, summary) to `t`, each with its summary's interval (in its unit
    of `units`) put in at column `at`, whose header becomes what that column holds
    (`interval_column`); `grouped`: a rule under each group of rows (a row whose first
    cell is empty continues the one above); a row of `below` (its median within the
    method's resolution: median_cell) has no interval finer than that."""
    header, cells = interval_column((st for _, st in rows), units)
    flags = list(below) or [False] * len(cells)
    cells = ["below resolution" if b else c for c, b in zip(cells, flags, strict=True)]
    t.columns[at].header = header
    for i, ((row, _), cell) in enumerate(zip(rows, cells, strict=True)):
        # grouped: a row whose first cell is empty continues the group above it
        ends = grouped and i + 1 < len(rows) and rows[i + 1][0][0] != ""
        t.add_row(*row[:at], cell, *row[at:], end_section=ends)


def refusal(metric: str, workload: str, baseline: float, who: str = "A") -> str:
    """Why a change against `baseline` (A's median) would mean nothing, or "": a baseline
    that is zero or negative, or within the figure's resolution of zero."""
    m = metrics.lookup(metric, workload)
    if math.isnan(baseline):
        return ""
    if baseline <= 0:
        return f"{who}'s median is {quantity(baseline, m.unit)[0]}: a ratio to it means nothing"
    if m.resolution is not None and baseline <= m.resolution:
        return (
            f"{who}'s median {quantity(baseline, m.unit)[0]} is within the method's "
            f"resolution ({quantity(m.resolution, m.unit)[0]}): a ratio to it means nothing"
        )
    return ""


def unit_of(s: Sample) -> tuple[int, int]:
    """The independent unit a sample belongs to (what a confidence interval resamples):
    a figure taken once per instance of a pile-up (virtbench.metrics: repeated and `pile_up`)
    is its instance's; every other figure's is its repetition (a fresh instance, or one
    pile-up), whose nested values (batches of one instance, boots at one point of one
    pile-up) are resampled together."""
    m = metrics.lookup(s.metric, s.workload)
    if m.pile_up and m.repeated:
        return (s.repetition, s.background)
    return (s.repetition, -1)


def summarize_samples(rows: Iterable[Sample]) -> Summary:
    """Summary of the successful values of `rows`, over their independent units."""
    ok = [r for r in rows if not r.error and r.value is not None]
    return summarize(values_of(ok), [unit_of(r) for r in ok])


def unit_values(rows: Iterable[Sample]) -> list[float]:
    """The successful values of `rows` averaged within each independent unit."""
    by: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in rows:
        if not r.error and r.value is not None:
            by[unit_of(r)].append(r.value)
    return [sum(v) / len(v) for v in by.values()]


def unit_keys(f: Frame, rows: np.ndarray) -> np.ndarray:
    """`unit_of` for the frame's `rows` (indices), one integer key per row."""
    pairs = (
        f.codes["metric"][rows].astype(np.int64) * len(f.labels["workload"])
        + (f.codes["workload"][rows])
    )
    uniq, inverse = np.unique(pairs, return_inverse=True)
    per_instance = np.array(
        [
            _per_instance(
                f.labels["metric"][p // len(f.labels["workload"])],
                f.labels["workload"][p % len(f.labels["workload"])],
            )
            for p in uniq.tolist()
        ],
        dtype=bool,
    )
    background = np.where(per_instance[inverse], f.background[rows], -1)
    return f.repetition[rows] * (1 << 32) + background + 1


def _per_instance(metric: str, workload: str) -> bool:
    m = metrics.lookup(metric, workload)
    return bool(m.pile_up and m.repeated)


def summarize_rows(f: Frame, rows: np.ndarray) -> Summary:
    """`summarize_samples` of the frame's `rows` (indices)."""
    rows = rows[f.ok[rows]]
    return summarize(f.value[rows], unit_keys(f, rows))


def median_rows(f: Frame, rows: np.ndarray | None) -> tuple[float, int]:
    """(median, n) of the successful values of the frame's `rows`, where a table shows
    no more of them (nan, 0 when there are none)."""
    values = f.value[rows[f.ok[rows]]] if rows is not None else np.zeros(0)
    return (float(np.median(values)) if values.size else math.nan), int(values.size)


def flagged(rows: Rows) -> int:
    """How many samples were measured on a host that was not quiet (other work ran,
    or the quiet wait timed out): `load` > 0 or `quiet` false in their params."""
    f = as_frame(rows)
    busy = [
        bool(f.params_of(i).get("load", 0) or f.params_of(i).get("quiet", True) is False)
        for i in range(len(f.labels["params"]))
    ]
    return int(np.sum(np.asarray(busy, dtype=bool)[f.codes["params"]] & ~f.warmup)) if busy else 0


def bounded_note(summaries: Iterable[Summary]) -> str:
    """What intervals of big groups were made with (stats.ci_of), or ""."""
    used = sorted({st.ci_method for st in summaries} - {CI_BOOTSTRAP})
    if not used:
        return ""
    return (
        f"groups of more than {BOOTSTRAP_MAX_VALUES:,} values: 95% CI by "
        f"{' or '.join(used)} (independent values: the order statistics around the "
        "median; nested ones: the bootstrap of an evenly spaced subset of each "
        "unit's values)"
    )


def add_columns(
    t: Table, cols: list[str], labels: tuple[str, ...], keep: tuple[str, ...] = ()
) -> None:
    """Columns right-aligned and never wrapped (a value is never broken across lines),
    but the `labels` ones: left-aligned, wrapped at spaces unless named in `keep`."""
    for col in cols:
        left = col in labels
        t.add_column(col, justify="left" if left else "right", no_wrap=not left or col in keep)


KEY = ("experiment", "metric", "unit", "runtime", "workload")


def group(f: Frame) -> dict[tuple[str, ...], np.ndarray]:
    """Indices of non-warm-up rows keyed by (experiment, metric, unit, runtime, workload)."""
    keep = np.flatnonzero(~f.warmup)
    return {key: keep[rows] for key, rows in f.take(keep).groups(*KEY)}


def natural(text: str) -> tuple:
    """Sort key that orders numbers inside names by value: tps@4 before tps@16."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))
