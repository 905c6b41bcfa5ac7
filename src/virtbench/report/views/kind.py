"""What a view declares about the experiment type it shows, and what its parts are
given: the type's own samples, never the whole run's to filter by type name.

  answers  (Frame) -> the questions its samples answer (report/standing.py)
  tables   (Shown) -> its tables, in order (default: each figure summarised)
  plots    each (Drawn) -> its plots
  order    where its answers and section stand among the run's types
  title    its section's heading, in words ("Startup time")
  about    one sentence on what it measured
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rich.table import Table

from virtbench import metrics
from virtbench.analysis.stats import Summary
from virtbench.figure import Metric
from virtbench.report.cells import interval, summarize_rows, unit_keys
from virtbench.report.plotkit import Plot
from virtbench.report.standing import Answer, Standing, ranked
from virtbench.report.svgplot import LightPlot
from virtbench.report.tables import by_worker, summary_table, worker_metric
from virtbench.store.frame import Frame
from virtbench.store.records import RunRecord, Sample

Series = list[tuple[str, float, float]]  # a run's time series: (name, t, value)


@dataclass(frozen=True)
class Drawn:
    """What a type's plots draw: its samples (report/html.plotted's subset), the run's
    runtimes in order and the run's per-process series."""

    samples: list[Sample]
    order: list[str]
    series: Series = field(default_factory=list)


@dataclass(frozen=True)
class Shown:
    """What a type's tables are made of: the run, the type's samples (warm-ups
    included: each table leaves them out), the runtimes in order, whether wide, the
    summaries shown (collected, for what their intervals were made with), and whether
    figures are named by their ids (`show --ids`) rather than their labels; `facts`
    collects what every runtime measured alike (tables.summary_table)."""

    run: RunRecord
    frame: Frame
    order: list[str]
    wide: bool = False
    seen: list[Summary] | None = None
    ids: bool = False
    facts: list[str] | None = None


def summaries(shown: Shown) -> list[Table]:
    """Every figure of the type summarised: median, 95% CI, CV, n (tables.summary_table),
    none where its figures are series only."""
    t = summary_table(
        heading(shown),
        shown.frame,
        shown.order,
        wide=shown.wide,
        seen=shown.seen,
        ids=shown.ids,
        facts=shown.facts,
    )
    return [t] if t.row_count else []


def heading(shown: Shown) -> str:
    """ "boot — run abc123": the title a type's tables begin with."""
    kinds = shown.frame.distinct("experiment")
    return f"{kinds[0] if kinds else ''} \u2014 run {shown.run.id}"


def no_answers(f: Frame) -> list[Answer]:
    del f
    return []


@dataclass(frozen=True)
class View:
    """How experiment type `type` is shown."""

    type: str
    order: int = 100
    title: str = ""
    about: str = ""
    answers: Callable[[Frame], list[Answer]] = no_answers
    tables: Callable[[Shown], list[Table]] = summaries
    plots: tuple[Callable[[Drawn], list[Plot]], ...] = ()
    # the same figures drawn without matplotlib (report/lightplots.py), where a page
    # asks for them (the site's run pages)
    light: tuple[Callable[[Drawn], list[LightPlot]], ...] = ()


def standings(f: Frame, floor: float = np.nan) -> list[Standing]:
    """Each runtime's median of `f`'s successful values, its 95% CI (over independent
    units), the values and units a ratio's bootstrap resamples, and how many of its
    measurements succeeded."""
    out = []
    for (runtime, unit), idx in f.groups("runtime", "unit"):
        st = summarize_rows(f, idx)
        what, text = interval(st, unit)
        ok = idx[f.ok[idx]]
        out.append(
            Standing(
                runtime,
                st.median,
                st.ci_low,
                st.ci_high,
                floor,
                values=f.value[ok],
                units=unit_keys(f, ok),
                ok=int(ok.size),
                total=int(idx.size),
                no_ci=f"{what} {text}".strip() if not st.has_ci else "",
            )
        )
    return out


def measure(metric: str, workload: str, several: bool = True) -> str:
    """A figure as a person reads it: its label, and its workload where it matters."""
    text = metrics.label(metric, workload)
    return f"{text} ({workload})" if several and workload else text


def first(f: Frame, name: str) -> str:
    """Text field `name` of the first row ("" when there is none)."""
    return f.labels[name][f.codes[name][0]] if len(f) else ""


def median_question(question: str, metric: str, sentence: str) -> Callable[[Frame], list[Answer]]:
    """The answers of one question that each runtime's median of `metric` answers
    (where it has one: a runtime that cannot is left out), per workload."""
    return medians(question, sentence, lambda m, name: name == metric)


def medians(
    question: str, sentence: str, wanted: Callable[[Metric, str], bool]
) -> Callable[[Frame], list[Answer]]:
    """The answers of one question, one per figure `wanted` keeps (given its declaration
    and its name) and workload: each runtime's median of it, best first."""

    def answers(f: Frame) -> list[Answer]:
        out = []
        several = len(f.distinct("workload")) > 1
        for (metric, workload, unit, direction), rows in f.groups(
            "metric", "workload", "unit", "direction"
        ):
            if not wanted(metrics.lookup(metric, workload), metric):
                continue
            out += ranked(
                question,
                measure(metric, workload, several),
                unit,
                standings(f.take(rows)),
                direction == "lower",
                metric=metric,
                workload=workload,
                sentence=sentence,
            )
        return out

    return answers


def workers(f: Frame) -> list[tuple[str, Frame, str]]:
    """(worker, its rows, the figure its tables follow) of a scalability or isolation
    run: a spec may measure several workers the same way, never mixed."""
    out: list[tuple[str, Frame, str]] = []
    for worker, mine in by_worker(f):
        metric = worker_metric(mine)
        if metric is not None:
            out.append((str(worker), mine, metric))
    return out
