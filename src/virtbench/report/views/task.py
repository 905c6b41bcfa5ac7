"""`task`: which runtime finishes a real agent step soonest (create call -> its task's
exit: clone, install, test), one by one and at the largest level two runtimes reached,
pooled as `tti`'s time to interactive is, with each runtime's success rate; the pooled
table, its steps (inside the instance) beside it, then its other figures summarised."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from rich.table import Table

from virtbench.experiments import task
from virtbench.report.cells import add_columns, fmt
from virtbench.report.sandbox import Batches, batch_order, describe, pooled, tti_table
from virtbench.report.standing import Answer, ranked
from virtbench.report.views.kind import Shown, View, heading, summaries
from virtbench.report.views.tti import standing
from virtbench.store.frame import Frame

DONE = task.DONE.name
STEPS = tuple(task.STEPS)  # the steps, each a column


def answers(f: Frame) -> list[Answer]:
    """One by one, and at the largest level two runtimes reached."""
    kinds: dict[str, list[Batches]] = {}
    for b in pooled(f, main=DONE):
        if b.ok:
            kinds.setdefault(b.at, []).append(b)
    levels = sorted((at for at in kinds if at != "seq" and len(kinds[at]) >= 2), key=batch_order)
    out = []
    for at in dict.fromkeys(["seq", *levels[-1:]]):
        out += ranked(
            f"Fastest to a task done, {describe(at)}",
            "create call to the task's exit (median instance)",
            "ms",
            [standing(b) for b in kinds.get(at, [])],
            True,
            metric=f"{DONE}@{at}",
            sentence="{a} finishes the task {x} sooner than {b}",
        )
    return out


def steps_table(title: str, f: Frame, order: list[str]) -> Table:
    """Per runtime and batch kind: each step's median inside the instance, and what the
    work directory was (its file system) and how many tests passed."""
    t = Table(title=title, title_justify="left")
    cols = ["batch", "runtime", *STEPS, "work fs", "passed"]
    add_columns(t, cols, ("batch", "runtime", "work fs"), keep=("batch",))
    f = f.take(~f.warmup & f.ok)
    rank = {r: i for i, r in enumerate(order)}
    found = [
        (at, runtime)
        for (metric, runtime), _ in f.groups("metric", "runtime")
        for name, _, at in [metric.partition("@")]
        if name == DONE
    ]
    before = ""  # the batch kind of the row above: each kind named once
    for at, runtime in sorted(found, key=lambda k: (batch_order(k[0]), rank.get(k[1], 99))):
        mine = f.where("runtime", runtime)
        steps = [task.STEPS[s].at(at).name for s in STEPS]
        cells = [_median(f, mine & f.where("metric", m)) for m in steps]
        done = np.flatnonzero(mine & f.where("metric", f"{DONE}@{at}"))
        params = f.params_of(int(f.codes["params"][done[0]])) if done.size else {}
        where, passed = params.get("work_fs", ""), params.get("tests_passed", "")
        kind = describe(at)
        t.add_row("" if kind == before else kind, runtime, *cells, str(where), str(passed))
        before = kind
    t.caption = (
        "ms: each step's median, as the instances timed it (their own monotonic clocks); "
        "work fs: the file system the task worked in; passed: the project's tests"
    )
    t.caption_justify = "left"
    return t


def _median(f: Frame, rows: np.ndarray) -> str:
    return fmt(float(np.median(f.value[rows]))) if rows.any() else "n/a"


def tables(shown: Shown) -> list[Table]:
    """The pooled table, the steps, then every other figure summarised."""
    f = shown.frame
    out = [tti_table(f"{heading(shown)}: create -> task done, pooled", f, shown.order, None, DONE)]
    out.append(steps_table(f"{heading(shown)}: its steps, inside", f, shown.order))
    pooled_ones = [f.code("metric", m) for m in f.distinct("metric") if m.startswith(f"{DONE}@")]
    rest = f.take(np.flatnonzero(~np.isin(f.codes["metric"], pooled_ones)))
    return out + summaries(replace(shown, frame=rest))


VIEW = View(
    "task",
    title="An agent's task, end to end",
    about=(
        "From the create call to the end of a real task run inside (clone a project, "
        "install it and its test dependencies from local wheels, run its tests), one by "
        "one and many at once, with the share that finished, and each step's time."
    ),
    order=11,
    answers=answers,
    tables=tables,
)
