"""The isolation table: per attacker and placement, each runtime's worker median and its
slowdown against the runtime's own baseline (no attacker) with a 95% CI, and the notes
that say what the slowdowns cannot tell (placements that cannot tell attack kinds apart,
a worker faster next to an attacker, baselines no ratio may use)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.stats import slowdown_ci
from virtbench.report.cells import (
    Rows,
    add_columns,
    fmt,
    median_rows,
    refusal,
    span,
    unit_keys,
)
from virtbench.report.tables import worker_metric
from virtbench.store.frame import Frame, as_frame

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
        why = refusal(self.metric, self.workload, base.median, f"{runtime}'s baseline")  # type: ignore[arg-type]  # a table with rows has its metric
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
