"""What sandbox users read first: time to interactive per batch kind (`tti`), pooled over
its batches, as its tail and its success rate, each with its 95% CI (analysis/tails.py).

  p50, p95, p99   of every instance's create call -> first command, the batch kind's
                  instances pooled over the repetitions; a CI from the batches resampled
                  whole, or why there is none
  success         instances that became interactive / all, with its 95% CI
  wall, per inst. the median batch's wall time and its amortized time per instance
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.table import Table

from virtbench.analysis.tails import Estimate, quantile_ci, success_ci
from virtbench.report.cells import add_columns, fmt
from virtbench.store.frame import Frame

QUANTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


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


def pooled(f: Frame) -> list[Batches]:
    """Every runtime's every batch kind of a run's `tti` samples (warm-ups left out)."""
    f = f.take(~f.warmup)
    out = []
    for (metric, runtime), rows in f.groups("metric", "runtime"):
        name, _, at = metric.partition("@")
        if name != "tti.interactive":
            continue
        ok = f.ok[rows]
        values, units = f.value[rows][ok], f.repetition[rows][ok]
        tails = {label: quantile_ci(values, units, q) for label, q in QUANTILES}
        success = success_ci(ok, f.repetition[rows])
        out.append(Batches(runtime, at, tails, success, int(ok.sum()), int(rows.size),
                           len(set(f.repetition[rows].tolist())),
                           _median(f, f"tti.wall@{at}", runtime),
                           _median(f, f"tti.amortized@{at}", runtime)))  # fmt: skip
    return sorted(out, key=lambda b: (batch_order(b.at), b.runtime))


def _median(f: Frame, metric: str, runtime: str) -> float:
    rows = f.where("metric", metric) & f.where("runtime", runtime) & f.ok
    return float(np.median(f.value[rows])) if rows.any() else math.nan


def estimate_cell(e: Estimate) -> str:
    """`25.1 (95% CI 24.5-25.8)`, or `25.1 (no CI: 3 batches)`."""
    if math.isnan(e.value):
        return "-"
    if e.has_ci:
        return f"{fmt(e.value)} (95% CI {fmt(e.low)}-{fmt(e.high)})"
    return f"{fmt(e.value)} ({e.why_none})"


def tti_table(title: str, f: Frame, order: list[str]) -> Table:
    """One row per runtime and batch kind: the pooled tail, success and wall time."""
    t = Table(title=title, title_justify="left")
    add_columns(t, ["batch", "runtime", "p50 ms", "p95 ms", "p99 ms", "success %",
                    "instances", "batches", "wall ms", "ms / instance"],
                ("batch", "runtime"))  # fmt: skip
    rank = {r: i for i, r in enumerate(order)}
    found = sorted(pooled(f), key=lambda b: (batch_order(b.at), rank.get(b.runtime, 99)))
    for b in found:
        t.add_row(describe(b.at), b.runtime, *(estimate_cell(b.tails[q]) for q, _ in QUANTILES),
                  estimate_cell(b.success), f"{b.ok}/{b.n}", str(b.batches), fmt(b.wall),
                  fmt(b.amortized))  # fmt: skip
    return t
