"""Rich tables of a run's samples: never a lone number, always spread and n."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from rich import box
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
    quantity,
    refusal,
    scaled,
    span,
    summarize_rows,
    unit_keys,
)
from virtbench.report.fits import first_workload
from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import RunRecord, Sample


def summary_table(
    title: str,
    samples: Rows,
    runtime_order: list[str],
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
        for key, line in alike(summaries, several).items():
            facts.append(line)
            groups = {k: v for k, v in groups.items() if (k[1], k[4]) != key}
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
        median = quantity(st.median, unit)[0]
        row = ["" if measure == said else measure, runtime, median, cv_cell(st), str(st.n)]
        said = measure
        row += _wide_cells(st, unit) if wide else []
        row += [str(int(failed[groups[key]].sum()))] if "failed" in cols else []
        rows_shown.append((row, st))
        units.append(unit)
    add_interval_rows(t, rows_shown, cols.index(CI_HEADER), units, grouped=True)
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


def by_worker(samples: Rows) -> list[tuple[str, Rows]]:
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
            usable = not math.isnan(first) and not refusal(metric, workload, first)  # type: ignore[arg-type]
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
        shown = f"{fmt(median)} n={n}{fail_text}" if len(these) else "n/a"
        return [shown, self.slowdown(runtime, attacker, placement, ok)]

    def slowdown(self, runtime: str, attacker: str, placement: str, ok: np.ndarray) -> str:
        """The slowdown cell of the worker's (not failed) rows `ok` beside `attacker`
        against the runtime's baseline, with its 95% CI."""
        base = self.bases[runtime]
        if not attacker:
            return "baseline"
        if not len(ok) or not len(base.rows):
            return "n/a"
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
        cell = f"{point * 100:+.1f}% ({span(lo * 100, hi * 100, '%')})"
        if hi < 0:
            self.faster[(runtime, placement)].append(attacker)
            cell += " faster"
        return cell

    def notes(self) -> list[str]:
        """The table's caption: inseparable placements, the runtimes faster next to an
        attacker, then the refused baselines."""
        return (
            inseparable(self.intervals)
            + faster(self.faster, self.busy)
            + list(dict.fromkeys(self.refused))
        )


def isolation_table(title: str, samples: Rows, runtime_order: list[str]) -> Table:
    """Per attacker and placement, a row per runtime: the worker's median and its
    slowdown against the runtime's baseline (positive = slower, whichever way the metric
    improves) with a 95% CI. Runtimes as rows: as narrow with ten runtimes as with one."""
    f = as_frame(samples)
    f = f.take(~f.warmup)
    metric = worker_metric(f)
    f = f.take(f.where("metric", metric or ""))
    have = set(f.distinct("runtime"))
    runtimes = [r for r in runtime_order if r in have]
    table = _Isolation(f, metric, runtimes)
    named = metrics.label(metric or "", table.workload)
    t = Table(title=f"{title} ({named}, {table.unit})", title_justify="left")
    labels = ("attacker", "placement", "runtime")
    add_columns(t, [*labels, "median", SLOWDOWN], labels)
    conditions = table.conditions()
    for i, (attacker, placement) in enumerate(conditions):
        for j, r in enumerate(runtimes):
            first = j == 0
            name = (attacker or "(baseline)") if first else ""
            ends = j + 1 == len(runtimes) and i + 1 < len(conditions)
            cells = table.cells(r, attacker, placement)
            t.add_row(name, placement if first else "", r, *cells, end_section=ends)
    if not table.intervals:  # "95% CI" only over a column that holds one
        t.columns[4].header = "slowdown"
    notes = table.notes()
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    return t


SLOWDOWN = "slowdown (95% CI)"


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
        why = "the host's idle states or frequency favour a busy machine" + (
            ""
            if busy
            else ' (baseline = "busy" measures the baseline next to spinners on the other CPUs)'
        )
        out.append(
            f"{runtime} at {placement}: faster next to the attacker ({', '.join(names)})"
            f" {against}, with 95% confidence: {why}"
        )
    return out


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
