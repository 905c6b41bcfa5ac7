"""Rich tables of a run's samples: never a lone number, always spread and n."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from typing import overload

import numpy as np
from rich import box
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.stats import Summary
from virtbench.report.cells import (
    CI_HEADER,
    Rows,
    add_columns,
    add_interval_rows,
    cv_cell,
    fmt,
    group,
    median_cell,
    median_rows,
    natural,
    quantity,
    refusal,
    scaled,
    span,
    summarize_rows,
)
from virtbench.report.fits import first_workload
from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import RunRecord, Sample


def summary_table(
    title: str,
    samples: Rows,
    runtime_order: list[str],
    *,
    wide: bool = False,
    seen: list[Summary] | None = None,
    ids: bool = False,
    facts: list[str] | None = None,
) -> Table:
    """One row per (metric, workload, runtime): median, 95% CI of the median (the range
    with fewer than 5 units: cells.interval_column), CV, n; `wide` adds mean, SD, min-max
    and outliers (Tukey's fences). Failed measurements are counted, never averaged.
    `seen` collects the summaries shown; `ids` names figures by id, not label; `facts`
    (where given) takes a figure every runtime measured alike, one value each (an image
    size, a pile-up that reached its target), as a line instead of rows that compare
    nothing."""
    f = as_frame(samples)
    groups = {
        k: rows
        for k, rows in group(f).items()
        if metrics.lookup(k[1], k[4]).summary == "median" and not cannot(f, rows, k[3])
    }
    summaries = {k: summarize_rows(f, rows) for k, rows in groups.items()}
    several = len({k[4] for k in groups}) > 1
    if facts is not None:
        for pair, line in alike(summaries, several).items():
            facts.append(line)
            groups = {k: v for k, v in groups.items() if (k[1], k[4]) != pair}
    t = Table(title=title, title_justify="left")
    cols = ["measure", "runtime", "median", CI_HEADER, "CV", "n"]
    cols += ["mean", "SD", "min-max", "outliers"] if wide else []
    failed = f.failed
    cols += ["failed"] if any(failed[rows].any() for rows in groups.values()) else []
    add_columns(t, cols, ("measure", "runtime"))
    order = {r: i for i, r in enumerate(runtime_order)}
    rows_shown: list[tuple[list[str], Summary]] = []
    units: list[str] = []
    said = ""  # a group's measure, said on its first row
    for key in sorted(groups, key=lambda k: (natural(k[1]), k[4], order.get(k[3], 99))):
        _experiment, metric, unit, runtime, workload = key
        st = summaries[key]
        if seen is not None:
            seen.append(st)
        measure = _measure(metric, workload, several, ids)
        median = median_cell(st.median, unit, metrics.lookup(metric, workload))
        row = ["" if measure == said else measure, runtime, median, cv_cell(st), str(st.n)]
        said = measure
        row += _wide_cells(st, unit) if wide else []
        row += [str(int(failed[groups[key]].sum()))] if "failed" in cols else []
        rows_shown.append((row, st))
        units.append(unit)
    below = [row[2].startswith("< ") for row, _ in rows_shown]
    add_interval_rows(t, rows_shown, cols.index(CI_HEADER), units, grouped=True, below=below)
    return t


def cannot(f: Frame, rows: np.ndarray, runtime: str) -> bool:
    """Whether every one of `rows` failed because `runtime` cannot do it (said once,
    above the table, rather than as a row of failures)."""
    if f.ok[rows].any():
        return False
    errors = {f.labels["error"][c] for c in f.codes["error"][rows].tolist()}
    return all(e.startswith(f"{runtime} cannot: ") for e in errors)


def _measure(metric: str, workload: str, several: bool, ids: bool) -> str:
    """A row's figure: its label (its id with `ids`), its workload where several."""
    text = metric if ids else metrics.label(metric, workload)
    return f"{text} ({workload})" if several else text


def _wide_cells(st: Summary, unit: str) -> list[str]:
    """Mean, SD, min-max and outliers, in the unit the median is shown in."""
    factor, shown = scaled(st.median, unit)
    spread = span(st.minimum * factor, st.maximum * factor, shown)
    return [fmt(st.mean * factor), fmt(st.sd * factor), spread, str(st.outliers)]


def alike(summaries: dict[tuple[str, ...], Summary], several: bool) -> dict[tuple[str, str], str]:
    """(metric, workload) -> a line saying its value, for each figure that every runtime
    (two or more) measured as one and the same value."""
    by: dict[tuple[str, str], list[tuple[tuple[str, ...], Summary]]] = defaultdict(list)
    for key, st in summaries.items():
        by[(key[1], key[4])].append((key, st))
    out = {}
    for (metric, workload), found in by.items():
        values = {st.minimum for _, st in found} | {st.maximum for _, st in found}
        if len(found) >= 2 and len(values) == 1 and all(st.n for _, st in found):
            value = quantity(values.pop(), found[0][0][2])[0]
            text = _measure(metric, workload, several, False)
            out[(metric, workload)] = f"{text}: {value}"
    return out


# Headers of the host's availability at each scalability point: the series the registry
# has the scalability plot draw (metrics.plotted), in its order.
HOST_COLUMNS = ("CPU idle", "mem avail", "swap free")


@overload
def by_worker(samples: Frame) -> list[tuple[str, Frame]]: ...
@overload
def by_worker(samples: list[Sample]) -> list[tuple[str, list[Sample]]]: ...
def by_worker(samples: Rows) -> list[tuple[str, Frame]] | list[tuple[str, list[Sample]]]:
    """A scalability or isolation experiment's samples per worker (its workload), in the
    order they were measured: a spec may measure several workers the same way. A frame
    gives frames, a list of samples lists."""
    if isinstance(samples, Frame):
        return [
            (w, samples.take(samples.where("workload", w))) for w in samples.distinct("workload")
        ]
    out: dict[str, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.workload, []).append(s)
    return list(out.items())


def worker_metric(samples: Rows) -> str | None:
    """The figure a scalability or isolation table follows: the metric of the first
    failed or successful worker measurement (the workload's primary one comes first)."""
    if isinstance(samples, Frame):
        for (metric, workload), _ in samples.groups("metric", "workload"):
            if metrics.lookup(metric, workload).headline:
                return metric
        return None
    for s in samples:
        if metrics.lookup(s.metric, s.workload).headline:
            return s.metric
    return None


def scalability_table(
    title: str, samples: Rows, runtime_order: list[str], seen: list[Summary] | None = None
) -> Table:
    """Per runtime and background count: the worker's figure (median, 95% CI or range,
    CV, n, and relative to the point with no background, as S1 normalised), next to the
    host's CPU idle, MemAvailable and free swap measured at that point."""
    f = as_frame(samples)
    f = f.take(~f.warmup)
    metric = worker_metric(f)
    is_metric = f.where("metric", metric or "")
    unit = f.labels["unit"][f.codes["unit"][is_metric][0]] if is_metric.any() else ""
    named = metrics.label(metric or "", first_workload(f, metric or ""))
    t = Table(title=f"{title} ({named}, {unit})", title_justify="left")
    cols = ["runtime", "background", "median", CI_HEADER, "CV", "n", "vs 0"]
    host = metrics.plotted("scalability")
    add_columns(t, [*cols, *HOST_COLUMNS], ("runtime",), ("background",))
    points = dict(f.groups("runtime", "background", "metric"))
    failed, workloads = f.failed, f.codes["workload"]
    have = set(f.distinct("runtime"))
    shown: list[tuple[list[str], Summary]] = []
    for r in (r for r in runtime_order if r in have):
        first = math.nan
        at_r = f.where("runtime", r) & is_metric
        for n in sorted(set(f.background[at_r].tolist())):
            worker = points[(r, n, metric)]
            st = summarize_rows(f, worker)
            if seen is not None:
                seen.append(st)
            lost = int(failed[worker].sum())
            if n == 0:  # "vs 0": only ever against the measurements alone
                first = st.median
            # "vs 0" is a ratio: none to a first point of nothing (or within resolution)
            workload = f.labels["workload"][workloads[worker[0]]]
            usable = not math.isnan(first) and not refusal(metric, workload, first)  # type: ignore[arg-type]  # rows measured: a worker metric
            rel = st.median / first if usable and not math.isnan(st.median) else math.nan
            host_cells = []
            for _, m in zip(HOST_COLUMNS, host, strict=True):  # one column each
                rows = points.get((r, n, m.name))
                median = median_rows(f, rows)[0]
                host_cells.append(f"{fmt(median)}{m.unit}" if median == median else "n/a")
            count = f"{st.n}" + (f" ({lost} failed)" if lost else "")
            vs0 = f"{rel:.2f}x" if not math.isnan(rel) else "n/a"
            name = r if n == min(f.background[at_r].tolist()) else ""  # once per runtime
            row = [name, str(n), fmt(st.median), cv_cell(st), count, vs0, *host_cells]
            shown.append((row, st))
    add_interval_rows(t, shown, cols.index(CI_HEADER), grouped=True)
    return t


def runs_table(rows: list[tuple[RunRecord, int]]) -> Table:
    """The store's runs; with a host and fleet column once a fleet's runs are in it."""
    t = Table(
        title="runs", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )  # no rules: seven columns in 80
    fleets = any(run.host or run.fleet for run, _ in rows)
    cols = ["run", "name", "started", "status", "runtimes", "experiments", "samples"]
    for col in cols + (["host", "fleet"] if fleets else []):
        t.add_column(col)
    for run, n in rows:
        when = dt.datetime.fromtimestamp(run.created).strftime("%Y-%m-%d %H:%M:%S")
        exps = ", ".join(e.get("type", "?") for e in run.spec.get("experiment", []))
        cells = [
            run.id,
            run.name,
            when,
            run.status,
            ", ".join(run.spec.get("runtimes", [])),
            exps,
            str(n),
        ]
        t.add_row(*cells, *([run.host, run.fleet] if fleets else []))
    return t
