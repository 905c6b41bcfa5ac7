"""Rich tables of a run's samples: never a lone number, always spread and n."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from collections.abc import Iterable

from rich.table import Table

from virtbench import metrics
from virtbench.records import RunRecord, Sample
from virtbench.stats import Summary, slowdown_ci, summarize


def fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def spread(st: Summary) -> tuple[str, str]:
    """The 95% CI and CV cells of a summary. With fewer than MIN_UNITS independent units
    there is no CI: the range is shown, named as such ("0.6-0.9 (range of 3)")."""
    if st.has_ci:
        ci = f"{fmt(st.ci_low)}-{fmt(st.ci_high)}"
    elif st.units == 1 and st.minimum == st.maximum:  # one run's figure (a pile-up's count)
        ci = "- (1 unit)"
    elif st.n:
        of = f"{st.units}" if st.units == st.n else f"{st.n} in {st.units} unit"
        of += "s" if st.units > 1 and st.units != st.n else ""
        ci = f"{fmt(st.minimum)}-{fmt(st.maximum)} (range of {of})"
    else:
        ci = "-"
    cv = f"{st.cv * 100:.1f}%" if not math.isnan(st.cv) else "-"
    return ci, cv


def refusal(metric: str, workload: str, baseline: float, who: str = "A") -> str:
    """Why a change against `baseline` (A's median) would mean nothing, or "": a baseline
    that is zero or negative, or within the figure's resolution of zero."""
    m = metrics.lookup(metric, workload)
    if math.isnan(baseline):
        return ""
    if baseline <= 0:
        return f"{who}'s median is {fmt(baseline)} {m.unit}: a ratio to it means nothing"
    if m.resolution is not None and baseline <= m.resolution:
        return (f"{who}'s median {fmt(baseline)} {m.unit} is within the method's resolution "
                f"({fmt(m.resolution)} {m.unit}): a ratio to it means nothing")  # fmt: skip
    return ""


def unit_of(s: Sample) -> tuple[int, int]:
    """The independent unit a sample belongs to (what a confidence interval resamples):
    a figure taken once per instance of a pile-up (metrics.py: repeated and `pile_up`)
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
    return summarize([r.value for r in ok], [unit_of(r) for r in ok])  # type: ignore[misc]


def unit_values(rows: Iterable[Sample]) -> list[float]:
    """The successful values of `rows` averaged within each independent unit."""
    by: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in rows:
        if not r.error and r.value is not None:
            by[unit_of(r)].append(r.value)
    return [sum(v) / len(v) for v in by.values()]


def flagged(rows: Iterable[Sample]) -> int:
    """How many samples were measured on a host that was not quiet (other work ran,
    or the quiet wait timed out): `load` > 0 or `quiet` false in their params."""
    return sum(
        1
        for r in rows
        if not r.warmup and (r.params.get("load", 0) or r.params.get("quiet", True) is False)
    )


def add_columns(
    t: Table, cols: list[str], labels: tuple[str, ...], keep: tuple[str, ...] = ()
) -> None:
    """Columns right-aligned, but the `labels` ones: left-aligned; those and the `keep`
    ones are never wrapped."""
    for col in cols:
        left = col in labels
        t.add_column(col, justify="left" if left else "right", no_wrap=left or col in keep)


def group(samples: Iterable[Sample]) -> dict[tuple[str, str, str, str, str], list[Sample]]:
    """Non-warm-up samples keyed by (experiment, metric, unit, runtime, workload)."""
    out: dict[tuple[str, str, str, str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        if not s.warmup:
            out[(s.experiment, s.metric, s.unit, s.runtime, s.workload)].append(s)
    return out


def natural(text: str) -> tuple:
    """Sort key that orders numbers inside names by value: tps@4 before tps@16."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def summary_table(
    title: str, samples: list[Sample], runtime_order: list[str], wide: bool = False
) -> Table:
    """One row per (metric, workload, runtime): median, 95% CI of the median, CV, n;
    `wide` adds mean, SD, min-max and outliers (Tukey's fences). Failed measurements are
    counted, never averaged."""
    t = Table(title=title, title_justify="left")
    cols = ["measure", "runtime", "median", "95% CI", "CV", "n"]
    if wide:
        cols += ["mean", "SD", "min-max", "outliers"]
    groups = group(samples)
    if any(s.error for rows in groups.values() for s in rows):
        cols.append("failed")
    add_columns(t, cols, ("measure", "runtime"))
    order = {r: i for i, r in enumerate(runtime_order)}
    several_workloads = len({k[4] for k in groups}) > 1
    for key in sorted(groups, key=lambda k: (natural(k[1]), k[4], order.get(k[3], 99))):
        experiment, metric, unit, runtime, workload = key
        if metrics.lookup(metric, workload).summary != "median":  # a per-point series
            continue
        rows = groups[key]
        st = summarize_samples(rows)
        ci, cv = spread(st)
        measure = metric.removeprefix(experiment + ".")
        if several_workloads:
            measure += f" ({workload})"
        row = [measure, runtime, f"{fmt(st.median)} {unit}", ci, cv, str(st.n)]
        if wide:
            row += [fmt(st.mean), fmt(st.sd), f"{fmt(st.minimum)}-{fmt(st.maximum)}",
                    str(st.outliers)]  # fmt: skip
        if "failed" in cols:
            row.append(str(sum(1 for r in rows if r.error)) or "")
        t.add_row(*row)
    return t


# Headers of the host's availability at each scalability point: the series the registry
# has the scalability plot draw (metrics.plotted), in its order.
HOST_COLUMNS = ("CPU idle", "mem avail", "swap free")


def by_worker(samples: list[Sample]) -> list[tuple[str, list[Sample]]]:
    """A scalability or isolation experiment's samples per worker (its workload), in the
    order they were measured: a spec may measure several workers the same way."""
    out: dict[str, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.workload, []).append(s)
    return list(out.items())


def worker_metric(samples: list[Sample]) -> str | None:
    """The figure a scalability or isolation table follows: the metric of the first
    failed or successful worker measurement (the workload's primary one comes first)."""
    for s in samples:
        if metrics.lookup(s.metric, s.workload).headline:
            return s.metric
    return None


def scalability_table(title: str, samples: list[Sample], runtime_order: list[str]) -> Table:
    """Per runtime and background count: the worker's figure (median, 95% CI, CV, n, and
    relative to the point with no background, as S1 normalised), next to the host's CPU
    idle, MemAvailable and free swap measured at that point."""
    rows = [s for s in samples if not s.warmup]
    metric = worker_metric(rows)
    unit = next((s.unit for s in rows if s.metric == metric), "")
    t = Table(title=f"{title} ({metric}, {unit})", title_justify="left")
    cols = ["runtime", "background", "median", "95% CI", "CV", "n", "vs 0"]
    host = metrics.plotted("scalability")
    add_columns(t, [*cols, *HOST_COLUMNS], ("runtime",), ("background",))
    runtimes = [r for r in runtime_order if any(s.runtime == r for s in rows)]
    for r in runtimes:
        mine = [s for s in rows if s.runtime == r]
        first = math.nan
        for n in sorted({s.background for s in mine if s.metric == metric}):
            at = [s for s in mine if s.background == n]

            def median(name: str, at: list[Sample] = at) -> float:
                return summarize_samples([s for s in at if s.metric == name]).median

            worker = [s for s in at if s.metric == metric]
            st = summarize_samples(worker)
            failed = sum(1 for s in worker if s.error)
            if n == 0:  # "vs 0": only ever against the measurements alone
                first = st.median
            # "vs 0" is a ratio: none to a first point of nothing (or within resolution)
            workload = worker[0].workload if worker else ""
            usable = not math.isnan(first) and not refusal(metric, workload, first)
            rel = st.median / first if usable and not math.isnan(st.median) else math.nan
            t.add_row(
                r,
                str(n),
                fmt(st.median),
                *spread(st),
                f"{st.n}" + (f" ({failed} failed)" if failed else ""),
                f"{rel:.2f}x" if not math.isnan(rel) else "-",
                *(
                    f"{fmt(median(m.name))}{m.unit}"
                    for _, m in zip(HOST_COLUMNS, host, strict=True)  # one column each
                ),
            )
    return t


def isolation_table(title: str, samples: list[Sample], runtime_order: list[str]) -> Table:
    """Per attacker and placement: the worker's median and its slowdown against the
    baseline (positive = slower, whichever way the metric improves) with a 95% CI."""
    t = Table(title=title, title_justify="left")
    rows = [s for s in samples if not s.warmup]
    metric = worker_metric(rows)
    rows = [s for s in rows if s.metric == metric]
    runtimes = [r for r in runtime_order if any(s.runtime == r for s in rows)]
    unit = rows[0].unit if rows else ""
    direction = rows[0].direction if rows else "higher"
    t.add_column("attacker")
    t.add_column("placement")
    for r in runtimes:
        t.add_column(f"{r} {metric} ({unit})", justify="right")
        t.add_column(f"{r} slowdown (95% CI)", justify="right")
    conditions: list[tuple[str, str]] = []
    for s in sorted(rows, key=lambda s: (s.attacker != "", s.attacker, s.placement)):
        if (s.attacker, s.placement) not in conditions:
            conditions.append((s.attacker, s.placement))
    # per (runtime, placement): each attacker's slowdown interval, to say where a
    # placement cannot tell attack kinds apart
    intervals: dict[tuple[str, str], list[tuple[str, float, float, float]]] = defaultdict(list)
    refused: list[str] = []  # baselines no ratio may use
    for attacker, placement in conditions:
        cells = [attacker or "(baseline)", placement or "-"]
        for r in runtimes:
            mine = [s for s in rows if s.runtime == r]
            base = [s for s in mine if not s.attacker and not s.error]
            these = [s for s in mine if (s.attacker, s.placement) == (attacker, placement)]
            ok = [s for s in these if not s.error]
            failed = len(these) - len(ok)
            st = summarize_samples(ok)
            fail_text = f" ({failed} failed)" if failed else ""
            cells.append(f"{fmt(st.median)} n={st.n}{fail_text}" if these else "-")
            if not attacker or not ok or not base:
                cells.append("-")
                continue
            why = refusal(metric, rows[0].workload, summarize_samples(base).median,
                          f"{r}'s baseline")  # fmt: skip
            if why:
                cells.append("no ratio")
                refused.append(f"{r}: {why}")
                continue
            point, lo, hi = slowdown_ci(
                [s.value for s in base], [s.value for s in ok], direction,
                units_b=[unit_of(s) for s in base], units_a=[unit_of(s) for s in ok],
            )  # fmt: skip
            units = min(len({unit_of(s) for s in base}), len({unit_of(s) for s in ok}))
            ci = (
                f" ({lo * 100:+.1f}..{hi * 100:+.1f})"
                if not math.isnan(lo)
                else f" (no CI: {units} units)"
            )
            if not math.isnan(lo):
                intervals[(r, placement)].append((attacker, point, lo, hi))
            cells.append(f"{point * 100:+.1f}%{ci}")
        t.add_row(*cells)
    notes = inseparable(intervals) + list(dict.fromkeys(refused))
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


def experiment_tables(run: RunRecord, samples: list[Sample], wide: bool = False) -> list[Table]:
    """One summary table per experiment type in the run, in spec order; scalability and
    isolation add their per-point and slowdown tables."""
    order = run.spec.get("runtimes", [])
    kinds: list[str] = []
    for s in samples:
        if s.experiment not in kinds:
            kinds.append(s.experiment)
    from virtbench.report.fits import cost_table, trend_table

    tables = []
    for kind in kinds:
        mine = [s for s in samples if s.experiment == kind]
        title = f"{kind} — run {run.id}"
        if kind in ("scalability", "isolation"):  # one worker at a time: never mixed
            for worker, theirs in by_worker(mine):
                named = f"{title} ({worker})" if len(by_worker(mine)) > 1 else title
                if kind == "isolation":
                    tables.append(isolation_table(f"{named}: slowdown", theirs, order))
                    continue
                tables.append(scalability_table(f"{named}: by background instances", theirs,
                                                order))  # fmt: skip
                metric = worker_metric([s for s in theirs if not s.warmup])
                if metric is not None:
                    tables.append(trend_table(f"{named}: trend", theirs, metric, order))
            if kind == "isolation":  # a summary over all conditions would mix them
                continue
            # the pile-up's own figures; the worker's are in the per-point table
            mine = [s for s in mine if metrics.lookup(s.metric, s.workload).pile_up]
        table = summary_table(title, mine, order, wide)
        if table.row_count:  # e.g. a scalability run whose only figures are per point
            tables.append(table)
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
