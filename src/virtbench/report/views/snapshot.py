"""`snapshot`: which runtime comes back from a checkpoint on disk fastest (restore call
-> the same instance's heartbeat); with dirty levels, at the largest level two runtimes
reached, and the restore's slope per 100 MiB dirtied; every figure summarised, the
figures against the memory dirtied, each figure's median and tail per runtime."""

from __future__ import annotations

from rich.table import Table

from virtbench import metrics
from virtbench.experiments import snapshot
from virtbench.experiments.snapshot_many import MANY_TO_READY
from virtbench.report import plots_sandbox
from virtbench.report.sandbox import PER_MIB, dirty_slopes, dirty_table
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.views.kind import (
    Shown,
    View,
    heading,
    median_question,
    standings,
    summaries,
)
from virtbench.store.frame import Frame

RESTORE = snapshot.RESTORE_TO_READY.name
SENTENCE = "{a} comes back {x} faster than {b}"
# the figures its plot draws, calls and the restore back to the same instance's heartbeat
FIGURES = (
    snapshot.CHECKPOINT.name,
    snapshot.RESTORE.name,
    RESTORE,
    MANY_TO_READY.name,
)


def answers(f: Frame) -> list[Answer]:
    """Back from disk: without dirty levels, each runtime's median; with them, at the
    largest level two runtimes reached, then the slope per PER_MIB MiB dirtied."""
    out = median_question("Fastest back from a checkpoint on disk", RESTORE, SENTENCE)(f)
    cold = snapshot.COLD_RESTORE_TO_READY.name
    out += median_question("Fastest back from a checkpoint on a cold disk", cold, SENTENCE)(f)
    restores = [x for x in dirty_slopes(f) if x.metric == RESTORE]
    for d in sorted({d for x in restores for d in x.medians}, reverse=True):
        metric = f"{RESTORE}@{d}MiB"
        found = standings(f.take(f.where("metric", metric)))
        if sum(1 for s in found if s.ok) >= 2:
            out += ranked(
                f"Fastest back from a checkpoint, {d} MiB dirtied",
                metrics.label(metric),
                "ms",
                found,
                True,
                metric=metric,
                sentence=SENTENCE,
            )
            break
    slopes = [
        Standing(x.runtime, x.fit.slope, x.fit.ci_low, x.fit.ci_high)
        for x in restores
        if x.fit is not None
    ]
    return out + ranked(
        "Least restore time per memory dirtied",
        f"{metrics.label(RESTORE)}, per {PER_MIB} MiB dirtied",
        "ms",
        slopes,
        True,
        scale="difference",
        figure="slope",
        sentence="{a} takes {x} less per " + f"{PER_MIB} MiB than " + "{b}",
    )


def tables(shown: Shown) -> list[Table]:
    """Each figure summarised, then the figures against the memory dirtied."""
    out = summaries(shown)
    slopes = dirty_slopes(shown.frame)
    if slopes:
        title = f"{heading(shown)}: against the memory dirtied"
        out.append(dirty_table(title, slopes, shown.order))
    return out


VIEW = View(
    "snapshot",
    title="Checkpoint and restore",
    about=(
        "A running instance checkpointed to disk and restored: the calls, and restore to "
        "the same instance's next heartbeat."
    ),
    order=40,
    answers=answers,
    tables=tables,
    plots=(
        lambda d: plots_sandbox.operations(
            d.samples,
            d.order,
            "snapshot-restore",
            "Checkpoint and restore: the calls, and restore -> the same instance's heartbeat",
            FIGURES,
        ),
    ),
)
