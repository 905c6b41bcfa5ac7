"""Rich tables of a run's samples: never a lone number, always spread and n."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable

from rich.table import Table

from virtbench.stats import summarize
from virtbench.store import RunRecord, Sample


def fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def group(samples: Iterable[Sample]) -> dict[tuple[str, str, str, str, str], list[Sample]]:
    """Non-warm-up samples keyed by (experiment, metric, unit, runtime, workload)."""
    out: dict[tuple[str, str, str, str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        if not s.warmup:
            out[(s.experiment, s.metric, s.unit, s.runtime, s.workload)].append(s)
    return out


# Stored for plots and time series, but not summarised as a distribution.
NOT_SUMMARISED = {"density.mem_available"}


def summary_table(
    title: str, samples: list[Sample], runtime_order: list[str], wide: bool = False
) -> Table:
    """One row per (metric, workload, runtime): median, 95% CI of the median, CV, n;
    `wide` adds mean, SD and min-max. Failed measurements are counted, never averaged."""
    t = Table(title=title, title_justify="left")
    cols = ["measure", "runtime", "median", "95% CI", "CV", "n"]
    if wide:
        cols += ["mean", "SD", "min-max"]
    groups = group(samples)
    if any(s.error for rows in groups.values() for s in rows):
        cols.append("failed")
    for col in cols:
        left = col in ("measure", "runtime")
        t.add_column(
            col, justify="left" if left else "right", no_wrap=col in ("measure", "runtime")
        )
    order = {r: i for i, r in enumerate(runtime_order)}
    several_workloads = len({k[4] for k in groups}) > 1
    for key in sorted(groups, key=lambda k: (k[1], k[4], order.get(k[3], 99))):
        experiment, metric, unit, runtime, workload = key
        if metric in NOT_SUMMARISED:
            continue
        rows = groups[key]
        st = summarize([r.value for r in rows if not r.error])
        ci = f"{fmt(st.ci_low)}-{fmt(st.ci_high)}" if not math.isnan(st.ci_low) else "n<3"
        cv = f"{st.cv * 100:.1f}%" if not math.isnan(st.cv) else "-"
        measure = metric.removeprefix(experiment + ".")
        if several_workloads:
            measure += f" ({workload})"
        row = [measure, runtime, f"{fmt(st.median)} {unit}", ci, cv, str(st.n)]
        if wide:
            row += [fmt(st.mean), fmt(st.sd), f"{fmt(st.minimum)}-{fmt(st.maximum)}"]
        if "failed" in cols:
            row.append(str(sum(1 for r in rows if r.error)) or "")
        t.add_row(*row)
    return t


def experiment_tables(run: RunRecord, samples: list[Sample], wide: bool = False) -> list[Table]:
    """One summary table per experiment type in the run, in spec order."""
    order = run.spec.get("runtimes", [])
    kinds: list[str] = []
    for s in samples:
        if s.experiment not in kinds:
            kinds.append(s.experiment)
    return [
        summary_table(
            f"{kind} — run {run.id}", [s for s in samples if s.experiment == kind], order, wide
        )
        for kind in kinds
    ]


def runs_table(rows: list[tuple[RunRecord, int]]) -> Table:
    t = Table(title="runs", title_justify="left")
    for col in ("run", "name", "started", "status", "runtimes", "experiments", "samples"):
        t.add_column(col)
    for run, n in rows:
        when = dt.datetime.fromtimestamp(run.created).strftime("%Y-%m-%d %H:%M:%S")
        exps = ",".join(e.get("type", "?") for e in run.spec.get("experiment", []))
        t.add_row(
            run.id, run.name, when, run.status, ",".join(run.spec.get("runtimes", [])), exps, str(n)
        )
    return t
