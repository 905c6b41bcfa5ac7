"""Rich tables of a run's samples: never a lone number, always spread and n."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.stats import Summary, slowdown_ci
from virtbench.report.cells import (
    CI_HEADER,
    Rows,
    add_columns,
    add_interval_rows,
    cv_cell,
    fmt,
    group,
    median_rows,
    natural,
    refusal,
    summarize_rows,
    unit_keys,
)
from virtbench.report.fits import cost_table, trend_table
from virtbench.report.sandbox import dirty_slopes, dirty_table, tti_table
from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import RunRecord, Sample


def summary_table(title: str, samples: Rows, runtime_order: list[str], wide: bool = False,
                  seen: list[Summary] | None = None) -> Table:  # fmt: skip
    """One row per (metric, workload, runtime): median, 95% CI of the median (the range
    with fewer than 5 units: cells.interval_column), CV, n; `wide` adds mean, SD, min-max
    and outliers (Tukey's fences). Failed measurements are counted, never averaged.
    `seen` collects the summaries shown."""
    f = as_frame(samples)
    t = Table(title=title, title_justify="left")
    cols = ["measure", "runtime", "median", CI_HEADER, "CV", "n"]
    if wide:
        cols += ["mean", "SD", "min-max", "outliers"]
    groups = group(f)
    failed = f.failed
    if any(failed[rows].any() for rows in groups.values()):
        cols.append("failed")
    add_columns(t, cols, ("measure", "runtime"))
    order = {r: i for i, r in enumerate(runtime_order)}
    several_workloads = len({k[4] for k in groups}) > 1
    rows_shown: list[tuple[list[str], Summary]] = []
    for key in sorted(groups, key=lambda k: (natural(k[1]), k[4], order.get(k[3], 99))):
        experiment, metric, unit, runtime, workload = key
        if metrics.lookup(metric, workload).summary != "median":  # a per-point series
            continue
        rows = groups[key]
        st = summarize_rows(f, rows)
        if seen is not None:
            seen.append(st)
        measure = metric.removeprefix(experiment + ".")
        if several_workloads:
            measure += f" ({workload})"
        row = [measure, runtime, f"{fmt(st.median)} {unit}", cv_cell(st), str(st.n)]
        if wide:
            row += [fmt(st.mean), fmt(st.sd), f"{fmt(st.minimum)}-{fmt(st.maximum)}",
                    str(st.outliers)]  # fmt: skip
        if "failed" in cols:
            row.append(str(int(failed[rows].sum())) or "")
        rows_shown.append((row, st))
    add_interval_rows(t, rows_shown, cols.index(CI_HEADER))
    return t


# Headers of the host's availability at each scalability point: the series the registry
# has the scalability plot draw (metrics.plotted), in its order.
HOST_COLUMNS = ("CPU idle", "mem avail", "swap free")


def by_worker(samples: Rows) -> list[tuple[str, Rows]]:
    """A scalability or isolation experiment's samples per worker (its workload), in the
    order they were measured: a spec may measure several workers the same way. A frame
    gives frames, a list of samples lists."""
    if isinstance(samples, Frame):
        return [(w, samples.take(samples.where("workload", w)))
                for w in samples.distinct("workload")]  # fmt: skip
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


def scalability_table(title: str, samples: Rows, runtime_order: list[str],
                      seen: list[Summary] | None = None) -> Table:  # fmt: skip
    """Per runtime and background count: the worker's figure (median, 95% CI or range,
    CV, n, and relative to the point with no background, as S1 normalised), next to the
    host's CPU idle, MemAvailable and free swap measured at that point."""
    f = as_frame(samples)
    f = f.take(~f.warmup)
    metric = worker_metric(f)
    is_metric = f.where("metric", metric or "")
    unit = f.labels["unit"][f.codes["unit"][is_metric][0]] if is_metric.any() else ""
    t = Table(title=f"{title} ({metric}, {unit})", title_justify="left")
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
            usable = not math.isnan(first) and not refusal(metric, workload, first)  # type: ignore[arg-type]
            rel = st.median / first if usable and not math.isnan(st.median) else math.nan
            host_cells = []
            for _, m in zip(HOST_COLUMNS, host, strict=True):  # one column each
                rows = points.get((r, n, m.name))
                median = median_rows(f, rows)[0]
                host_cells.append(f"{fmt(median)}{m.unit}")
            row = [r, str(n), fmt(st.median), cv_cell(st),
                   f"{st.n}" + (f" ({lost} failed)" if lost else ""),
                   f"{rel:.2f}x" if not math.isnan(rel) else "-", *host_cells]  # fmt: skip
            shown.append((row, st))
    add_interval_rows(t, shown, cols.index(CI_HEADER))
    return t


Interval = tuple[str, float, float, float]  # attacker, slowdown, CI low, CI high
_NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class _Baseline:
    """A runtime's rows without an attacker, which its slowdowns are measured against."""

    rows: np.ndarray  # not failed
    median: float
    finite: np.ndarray  # of `rows`, those with a finite value
    units: np.ndarray  # the unit keys of `finite`
    n_units: int  # independent units among `rows`


class _Isolation:
    """What the cells of an isolation table share: the worker's samples by runtime, attacker
    and placement, each runtime's baseline, and the notes the cells gather (the slowdown
    intervals each placement gives, the baselines no ratio may use)."""

    def __init__(self, f: Frame, metric: str | None, runtimes: list[str]) -> None:
        self.f, self.metric = f, metric
        self.ok, self.failed = f.ok, f.failed
        first = f.samples(np.arange(min(1, len(f))))
        self.unit = first[0].unit if first else ""
        self.direction = first[0].direction if first else "higher"
        self.workload = first[0].workload if first else ""
        self.cells_of = dict(f.groups("runtime", "attacker", "placement"))
        self.bases = {r: self._baseline(r) for r in runtimes}
        # per (runtime, placement): each attacker's slowdown interval, to say where a
        # placement cannot tell attack kinds apart
        self.intervals: dict[tuple[str, str], list[Interval]] = defaultdict(list)
        self.refused: list[str] = []  # baselines no ratio may use
        # per (runtime, placement): the attackers next to which the worker was faster
        # with confidence (the whole slowdown CI below 0)
        self.faster: dict[tuple[str, str], list[str]] = defaultdict(list)
        params = [f.params_of(i) for i in range(len(f.labels["params"]))]
        self.busy = any(p.get("baseline") == "busy" for p in params)

    def _baseline(self, runtime: str) -> _Baseline:
        """The runtime's successful rows without an attacker, their median and units."""
        f = self.f
        base = np.concatenate(
            [rows for (r, a, _), rows in self.cells_of.items() if r == runtime and not a]
            or [_NO_ROWS]
        )
        base = base[~self.failed[base]]
        finite = base[self.ok[base]]
        n_units = np.unique(unit_keys(f, base)).size
        return _Baseline(base, median_rows(f, base)[0], finite, unit_keys(f, finite), n_units)

    def conditions(self) -> list[tuple[str, str]]:
        """(attacker, placement) of every row: the baseline (no attacker) first."""
        return sorted({(a, p) for _, a, p in self.cells_of}, key=lambda c: (c[0] != "", c[0], c[1]))

    def cells(self, runtime: str, attacker: str, placement: str) -> list[str]:
        """The runtime's two cells of a row: the worker's median, and its slowdown."""
        these = self.cells_of.get((runtime, attacker, placement), _NO_ROWS)
        ok = these[~self.failed[these]]
        lost = len(these) - len(ok)
        median, n = median_rows(self.f, ok)
        fail_text = f" ({lost} failed)" if lost else ""
        shown = f"{fmt(median)} n={n}{fail_text}" if len(these) else "-"
        return [shown, self.slowdown(runtime, attacker, placement, ok)]

    def slowdown(self, runtime: str, attacker: str, placement: str, ok: np.ndarray) -> str:
        """The slowdown cell of the worker's (not failed) rows `ok` beside `attacker`
        against the runtime's baseline, with its 95% CI."""
        base = self.bases[runtime]
        if not attacker or not len(ok) or not len(base.rows):
            return "-"
        why = refusal(self.metric, self.workload, base.median, f"{runtime}'s baseline")  # type: ignore[arg-type]
        if why:
            self.refused.append(f"{runtime}: {why}")
            return "no ratio"
        f = self.f
        a = ok[self.ok[ok]]
        point, lo, hi = slowdown_ci(
            f.value[base.finite],
            f.value[a],
            self.direction,
            units_b=base.units,
            units_a=unit_keys(f, a),
        )
        if math.isnan(lo):
            units = min(base.n_units, np.unique(unit_keys(f, ok)).size)
            return f"{point * 100:+.1f}% (no CI: {units} unit{'' if units == 1 else 's'})"
        self.intervals[(runtime, placement)].append((attacker, point, lo, hi))
        cell = f"{point * 100:+.1f}% ({lo * 100:+.1f}..{hi * 100:+.1f})"
        if hi < 0:
            self.faster[(runtime, placement)].append(attacker)
            cell += " faster"
        return cell

    def notes(self) -> list[str]:
        """The table's caption: inseparable placements, the runtimes faster next to an
        attacker, then the refused baselines."""
        return (inseparable(self.intervals) + faster(self.faster, self.busy)
                + list(dict.fromkeys(self.refused)))  # fmt: skip


def isolation_table(title: str, samples: Rows, runtime_order: list[str]) -> Table:
    """Per attacker and placement: the worker's median and its slowdown against the
    baseline (positive = slower, whichever way the metric improves) with a 95% CI."""
    t = Table(title=title, title_justify="left")
    f = as_frame(samples)
    f = f.take(~f.warmup)
    metric = worker_metric(f)
    f = f.take(f.where("metric", metric or ""))
    have = set(f.distinct("runtime"))
    runtimes = [r for r in runtime_order if r in have]
    table = _Isolation(f, metric, runtimes)
    t.add_column("attacker")
    t.add_column("placement")
    for r in runtimes:
        t.add_column(f"{r} {metric} ({table.unit})", justify="right")
        t.add_column(f"{r} slowdown (95% CI)", justify="right")
    for attacker, placement in table.conditions():
        cells = [attacker or "(baseline)", placement or "-"]
        for r in runtimes:
            cells += table.cells(r, attacker, placement)
        t.add_row(*cells)
    for i, r in enumerate(runtimes):  # "95% CI" only over a column that holds one
        if not any(runtime == r for runtime, _ in table.intervals):
            t.columns[3 + 2 * i].header = f"{r} slowdown"
    notes = table.notes()
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    return t


def inseparable(
    intervals: dict[tuple[str, str], list[tuple[str, float, float, float]]],
) -> list[str]:
    """Placements where every attacker's slowdown interval overlaps every other's: there
    the figure says how much the worker loses to its neighbours, not which kind of attack
    costs more (on a CPU the attackers share with the worker, they take CPU time whatever
    they do)."""
    out = []
    for (runtime, placement), rows in intervals.items():
        if len(rows) < 2 or max(lo for _, _, lo, _ in rows) > min(hi for *_, hi in rows):
            continue
        lo, hi = min(p for _, p, _, _ in rows), max(p for _, p, _, _ in rows)
        why = " (they share the worker's CPU)" if placement == "same-cpu" else ""
        out.append(
            f"{runtime} at {placement}: the {len(rows)} attackers' slowdowns ({lo * 100:+.0f}% "
            f"to {hi * 100:+.0f}%) overlap within their 95% CIs: this placement cannot tell "
            f"attack kinds apart on this host{why}"
        )
    return out


def faster(where: dict[tuple[str, str], list[str]], busy: bool) -> list[str]:
    """Why a worker can be faster next to an attacker, where it was with confidence (a
    negative slowdown is a reading of the host, never the attacker's gift)."""
    out = []
    for (runtime, placement), names in where.items():
        against = "even against a busy baseline" if busy else "than alone"
        why = ("the host's idle states or frequency favour a busy machine" + (
            "" if busy else ' (baseline = "busy" measures the baseline next to spinners on '
            "the other CPUs)"))  # fmt: skip
        out.append(f"{runtime} at {placement}: faster next to the attacker ({', '.join(names)})"
                   f" {against}, with 95% confidence: {why}")  # fmt: skip
    return out


def experiment_tables(run: RunRecord, samples: Rows, wide: bool = False,
                      seen: list[Summary] | None = None) -> list[Table]:  # fmt: skip
    """One summary table per experiment type in the run, in spec order; scalability and
    isolation add their per-point and slowdown tables. `seen` collects the summaries."""
    f = as_frame(samples)
    order = run.spec.get("runtimes", [])
    tables = []
    for kind in f.distinct("experiment"):
        mine = f.take(f.where("experiment", kind))
        title = f"{kind} — run {run.id}"
        if kind in ("scalability", "isolation"):  # one worker at a time: never mixed
            workers = by_worker(mine)
            for worker, theirs in workers:
                named = f"{title} ({worker})" if len(workers) > 1 else title
                if kind == "isolation":
                    tables.append(isolation_table(f"{named}: slowdown", theirs, order))
                    continue
                tables.append(scalability_table(f"{named}: by background instances", theirs,
                                                order, seen))  # fmt: skip
                metric = worker_metric(theirs.take(~theirs.warmup))  # type: ignore[union-attr]
                if metric is not None:
                    tables.append(trend_table(f"{named}: trend", theirs, metric, order))
            if kind == "isolation":  # a summary over all conditions would mix them
                continue
            # the pile-up's own figures; the worker's are in the per-point table
            piled = [rows for (m, w), rows in mine.groups("metric", "workload")
                     if metrics.lookup(m, w).pile_up]  # fmt: skip
            mine = mine.take(np.sort(np.concatenate(piled)) if piled else np.zeros(0, int))
        if kind == "tti":  # its headline pooled by batch kind; the rest summarised below
            tables.append(tti_table(f"{title}: create -> first command, pooled", mine, order))
            mine = mine.take(np.flatnonzero(~np.isin(mine.codes["metric"], [
                mine.code("metric", m) for m in mine.distinct("metric")
                if m.startswith("tti.interactive@")])))  # fmt: skip
        table = summary_table(title, mine, order, wide, seen)
        if table.row_count:  # e.g. a scalability run whose only figures are per point
            tables.append(table)
        if kind == "snapshot" and (slopes := dirty_slopes(mine)):
            tables.append(dirty_table(f"{title}: against the memory dirtied", slopes, order))
        if kind == "density":
            costs = cost_table(f"{title}: memory each instance costs", mine, order)
            if costs.row_count:
                tables.append(costs)
    return tables


def runs_table(rows: list[tuple[RunRecord, int]]) -> Table:
    """The store's runs; with a host and fleet column once a fleet's runs are in it."""
    t = Table(title="runs", title_justify="left")
    fleets = any(run.host or run.fleet for run, _ in rows)
    cols = ["run", "name", "started", "status", "runtimes", "experiments", "samples"]
    for col in cols + (["host", "fleet"] if fleets else []):
        t.add_column(col)
    for run, n in rows:
        when = dt.datetime.fromtimestamp(run.created).strftime("%Y-%m-%d %H:%M:%S")
        exps = ",".join(e.get("type", "?") for e in run.spec.get("experiment", []))
        cells = [run.id, run.name, when, run.status, ",".join(run.spec.get("runtimes", [])),
                 exps, str(n)]  # fmt: skip
        t.add_row(*cells, *([run.host, run.fleet] if fleets else []))
    return t
