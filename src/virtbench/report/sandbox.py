"""What sandbox users read first: time to interactive per batch kind (`tti`), pooled over
its batches, as its tail and its success rate, each with its 95% CI (analysis/tails.py);
and what a snapshot costs against the memory its instance dirtied (`snapshot`'s
`dirty_mib`): each figure's median at each level and its slope per 100 MiB, a Theil-Sen
line through every repetition's levels with Sen's 95% CI (analysis/fit.py).

  p50, p95, p99   of every instance's create call -> first command, the batch kind's
                  instances pooled over the repetitions; a CI from the batches resampled
                  whole, or why there is none
  success         instances that became interactive / all, with its 95% CI
  wall, per inst. the median batch's wall time and its amortized time per instance
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.fit import Fit, sen_fit
from virtbench.analysis.tails import Estimate, quantile_ci, success_ci
from virtbench.experiments import tti
from virtbench.report.cells import add_columns, fmt, quantity, span
from virtbench.store.frame import Frame

QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
INTERACTIVE = tti.INTERACTIVE.name


@dataclass(frozen=True)
class Batches:
    """One runtime's instances of one batch kind (`at`: seq, stagger, N), pooled."""

    runtime: str
    at: str
    tails: dict[str, Estimate]  # p50, p95, p99
    success: Estimate  # %
    ok: int
    n: int
    batches: int
    wall: float  # median over the batches (nan: none, as for seq)
    amortized: float


def batch_order(at: str) -> tuple[int, int]:
    """seq, stagger, then the levels in order."""
    return (0, 0) if at == "seq" else (1, 0) if at == "stagger" else (2, int(at))


def describe(at: str) -> str:
    """How a batch kind reads: one by one, staggered, N at once."""
    return {"seq": "one by one", "stagger": "staggered"}.get(at, f"{at} at once")


def cannots(f: Frame, main: str = INTERACTIVE) -> dict[str, str]:
    """Runtimes that cannot run tti (or `main`'s experiment: no way to run a command
    inside): runtime -> why."""
    out = {}
    for (metric, runtime), rows in f.groups("metric", "runtime"):
        if metric.partition("@")[0] != main:
            continue
        errors = {f.labels["error"][c] for c in f.codes["error"][rows].tolist()}
        if len(errors) == 1:
            why = errors.pop()
            if why.startswith(f"{runtime} cannot: "):
                out[runtime] = why.removeprefix(f"{runtime} cannot: ")
    return out


def pooled(
    f: Frame, unable: dict[str, str] | None = None, main: str = INTERACTIVE
) -> list[Batches]:
    """Every runtime's every batch kind of a run's `tti` samples (or those of `main`, a
    per-instance figure whose experiment records `.wall` and `.amortized` as tti does:
    `task.done`; warm-ups left out), but those of runtimes that cannot (`unable`,
    default `cannots(f, main)`)."""
    f = f.take(~f.warmup)
    out = []
    unable = cannots(f, main) if unable is None else unable
    prefix = main.partition(".")[0]
    for (metric, runtime), rows in f.groups("metric", "runtime"):
        name, _, at = metric.partition("@")
        if name != main or runtime in unable:
            continue
        ok = f.ok[rows]
        values, units = f.value[rows][ok], f.repetition[rows][ok]
        tails = {label: quantile_ci(values, units, q) for label, q in QUANTILES}
        success = success_ci(ok, f.repetition[rows])
        out.append(
            Batches(
                runtime,
                at,
                tails,
                success,
                int(ok.sum()),
                int(rows.size),
                len(set(f.repetition[rows].tolist())),
                _median(f, f"{prefix}.wall@{at}", runtime),
                _median(f, f"{prefix}.amortized@{at}", runtime),
            )
        )
    return sorted(out, key=lambda b: (batch_order(b.at), b.runtime))


def _median(f: Frame, metric: str, runtime: str) -> float:
    rows = f.where("metric", metric) & f.where("runtime", runtime) & f.ok
    return float(np.median(f.value[rows])) if rows.any() else math.nan


def estimate_cell(e: Estimate) -> str:
    """`25.1 (24.5-25.8)`; `25.1` alone where it has no CI (the table's caption says
    why)."""
    if math.isnan(e.value):
        return "n/a"
    return f"{fmt(e.value)} ({span(e.low, e.high)})" if e.has_ci else fmt(e.value)


def tti_table(
    title: str,
    f: Frame,
    order: list[str],
    slo_ms: float | None = None,
    main: str = INTERACTIVE,
) -> Table:
    """One row per runtime and batch kind: the pooled tail with its 95% CI, success and
    wall time; why a figure has no CI, once, under it; each p99 against the spec's SLO
    (`slo_ms`), where it gives one. Of `tti`, or of `main` (`pooled`)."""
    t = Table(title=title, title_justify="left")
    add_columns(
        t,
        [
            "batch",
            "runtime",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "success %",
            "instances",
            "batches",
            "wall ms",
            "ms / instance",
        ],
        ("batch", "runtime"),
    )
    rank = {r: i for i, r in enumerate(order)}
    unable = cannots(f, main)
    found = sorted(
        pooled(f, unable, main), key=lambda b: (batch_order(b.at), rank.get(b.runtime, 99))
    )
    before = ""  # the batch kind of the row above: each kind named once
    for i, b in enumerate(found):
        kind = describe(b.at)
        last = i + 1 == len(found) or describe(found[i + 1].at) != kind
        tails = [estimate_cell(b.tails[q]) for q, _ in QUANTILES]
        rest = [estimate_cell(b.success), f"{b.ok}/{b.n}", str(b.batches), fmt(b.wall)]
        name = "" if kind == before else kind
        ends = last and i + 1 < len(found)
        t.add_row(name, b.runtime, *tails, *rest, fmt(b.amortized), end_section=ends)
        before = kind
    why = sorted({e.why_none for b in found for e in [*b.tails.values(), b.success] if e.why_none})
    none = "; ".join(w.removeprefix("no CI: ") for w in why)
    notes = [f"a figure without a bracketed 95% CI has none: {none}"] if why else []
    notes += [f"{r} cannot: {why}" for r, why in sorted(unable.items())]
    notes += slo_notes(found, slo_ms) if slo_ms is not None else []
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    return t


def slo_notes(found: list[Batches], slo_ms: float) -> list[str]:
    """Each batch's p99 against the SLO (p99 <= `slo_ms`), by its CI: met where the
    whole CI is at or below the line, missed where it is above, undecided where the CI
    spans it (by the p99 itself where it has no CI, and said how many). The batch kinds
    every runtime met on one line, then a line for each other kind."""
    kinds: dict[str, dict[str, list[str]]] = {}
    bare = 0
    highest: dict[str, tuple[float, str]] = {}  # batch kind -> (highest p99 met, by which runtime)
    for b in found:
        p99 = b.tails["p99"]
        if math.isnan(p99.value):
            continue
        low, high = (p99.low, p99.high) if p99.has_ci else (p99.value, p99.value)
        bare += not p99.has_ci
        verdict = "met" if high <= slo_ms else "missed" if low > slo_ms else "undecided"
        verdicts = kinds.setdefault(describe(b.at), {})
        verdicts.setdefault(verdict, []).append(f"{b.runtime} ({fmt(p99.value)} ms)")
        if verdict == "met":
            highest[describe(b.at)] = max(
                highest.get(describe(b.at), (0.0, "")), (p99.value, b.runtime)
            )
    total = sum(len(v) for k in kinds.values() for v in k.values())
    by = f"; by the p99 itself for {bare} of {total} without one" if bare else ""
    out = [f"SLO p99 <= {fmt(slo_ms)} ms (the spec's slo_p99_ms), by each p99's 95% CI{by}"]
    all_met = [k for k, v in kinds.items() if list(v) == ["met"]]
    if all_met:
        value, runtime, kind = max((*highest[k], k) for k in all_met)
        top = f"the highest p99: {runtime} {kind}, {fmt(value)} ms"
        out.append(f"  {', '.join(all_met)}: met by every runtime ({top})")
    words = {"missed": "missed by", "undecided": "its CI spans the line for", "met": "met by"}
    for kind, verdicts in kinds.items():
        if kind not in all_met:
            said = [f"{w} {', '.join(verdicts[v])}" for v, w in words.items() if v in verdicts]
            out.append(f"  {kind}: {'; '.join(said)}")
    return out


DIRTY = re.compile(r"^(snapshot\.(?:checkpoint|size|restore_to_ready))@(\d+)MiB$")
PER_MIB = 100  # slopes are given per 100 MiB dirtied


@dataclass(frozen=True)
class DirtySlope:
    """One runtime's snapshot figure against the MiB its instances dirtied."""

    runtime: str
    metric: str
    unit: str
    medians: dict[int, float]  # MiB dirtied -> the median
    fit: Fit | None  # per PER_MIB MiB


def dirty_slopes(f: Frame) -> list[DirtySlope]:
    """Every runtime's checkpoint time, image size and restore to ready against the MiB
    dirtied: the medians and the fitted slope (successful, non-warm-up samples)."""
    f = f.take(~f.warmup & f.ok)
    found: dict[tuple[str, str], list[tuple[int, float, int, str]]] = {}
    for (metric, runtime), rows in f.groups("metric", "runtime"):
        m = DIRTY.match(metric)
        if m is None:
            continue
        unit = f.labels["unit"][f.codes["unit"][rows[0]]]
        found.setdefault((runtime, m[1]), []).extend(
            (int(m[2]), float(v), int(r), unit)
            for v, r in zip(f.value[rows], f.repetition[rows], strict=True)
        )
    out = []
    for (runtime, metric), pts in sorted(found.items()):
        mib = sorted({p[0] for p in pts})
        medians = {d: float(np.median([p[1] for p in pts if p[0] == d])) for d in mib}
        fit = sen_fit([p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts])
        out.append(
            DirtySlope(
                runtime,
                metric,
                pts[0][3],
                medians,
                fit.scaled(PER_MIB) if fit is not None else None,
            )
        )
    return out


def slope_cell(fit: Fit | None, unit: str = "") -> str:
    """`12.3 ms (10.1-14.2 ms)`; without a CI, why."""
    if fit is None:
        return "n/a (one level)"
    value, ci = quantity(fit.slope, unit, fit.ci_low, fit.ci_high)
    return f"{value} ({ci})" if fit.has_ci else f"{value} (no CI: {fit.points} points)"


def dirty_table(title: str, slopes: list[DirtySlope], order: list[str]) -> Table:
    """Per runtime and figure (`dirty_slopes`): its median at each dirty level, and its
    slope."""
    levels = sorted({d for x in slopes for d in x.medians})
    t = Table(title=title, title_justify="left")
    add_columns(
        t,
        ["runtime", "figure", *(f"{d} MiB" for d in levels), f"per {PER_MIB} MiB dirtied"],
        ("runtime", "figure"),
    )
    rank = {r: i for i, r in enumerate(order)}
    for x in sorted(slopes, key=lambda x: (rank.get(x.runtime, 99), x.metric)):
        cells = [quantity(x.medians[d], x.unit)[0] if d in x.medians else "n/a" for d in levels]
        t.add_row(x.runtime, metrics.label(x.metric), *cells, slope_cell(x.fit, x.unit))
    return t
