"""`tti`: which runtime is interactive soonest (create call -> the first command that
succeeds inside), one by one and at the smallest and largest level two runtimes reached:
the pooled p50 and p95 of every instance with batch-resampled CIs, and each runtime's
success rate; the pooled table, then its other figures summarised."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rich.table import Table

from virtbench.experiments import tti
from virtbench.report.sandbox import Batches, batch_order, describe, pooled, tti_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.views.kind import Shown, View, heading, summaries
from virtbench.store.frame import Frame

INTERACTIVE = tti.INTERACTIVE.name


def answers(f: Frame) -> list[Answer]:
    """One by one, at the smallest and at the largest level two runtimes reached."""
    kinds: dict[str, list[Batches]] = {}
    for b in pooled(f):
        if b.ok:
            kinds.setdefault(b.at, []).append(b)
    levels = sorted(
        (at for at in kinds if at not in ("seq", "stagger") and len(kinds[at]) >= 2),
        key=batch_order,
    )
    out = []
    for at in dict.fromkeys(["seq", *levels[:1], *levels[-1:]]):
        found = kinds.get(at, [])
        out += ranked(
            f"Fastest to interactive, {describe(at)}",
            "time to interactive (median instance)",
            "ms",
            [standing(b) for b in found],
            True,
            metric=f"{INTERACTIVE}@{at}",
            sentence="{a} is interactive {x} sooner than {b}",
        )
    return out


def standing(b: Batches) -> Standing:
    p50, p95 = b.tails["p50"], b.tails["p95"]
    return Standing(
        b.runtime,
        p50.value,
        p50.low,
        p50.high,
        p95=(p95.value, p95.low, p95.high),
        ok=b.ok,
        total=b.n,
        no_ci=p50.why_none,
    )


def tables(shown: Shown) -> list[Table]:
    """The pooled table, then every other figure summarised."""
    f = shown.frame
    title = f"{heading(shown)}: create -> first command, pooled"
    out = [tti_table(title, f, shown.order, slo_ms(shown))]
    pooled_ones = [
        f.code("metric", m) for m in f.distinct("metric") if m.startswith(f"{INTERACTIVE}@")
    ]
    rest = f.take(np.flatnonzero(~np.isin(f.codes["metric"], pooled_ones)))
    return out + summaries(replace(shown, frame=rest))


def slo_ms(shown: Shown) -> float | None:
    """The SLO the run's tti experiment set (`slo_p99_ms`), if any."""
    for exp in shown.run.spec.get("experiment", []):
        if exp.get("type") == "tti" and exp.get("slo_p99_ms"):
            return float(exp["slo_p99_ms"])
    return None


VIEW = View(
    "tti",
    title="Time to interactive",
    about=(
        "From the create call to the first command that succeeds inside, one by one, "
        "staggered and many at once, with the share that made it."
    ),
    order=10,
    answers=answers,
    tables=tables,
)
