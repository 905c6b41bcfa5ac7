"""A run laid out per experiment type, as its views declare (report/views): each type's
tables and plots, each made from that type's samples alone. `show` prints the tables,
the report draws both; neither names a type."""

from __future__ import annotations

import functools
from collections.abc import Callable

from rich.table import Table

from virtbench.analysis.stats import Summary
from virtbench.report import views
from virtbench.report.cells import Rows
from virtbench.report.plotkit import STYLE, Plot, pyplot
from virtbench.report.svgplot import LightPlot
from virtbench.report.views.kind import Drawn, Series, Shown
from virtbench.store.frame import as_frame
from virtbench.store.records import RunRecord, Sample


def experiment_tables(
    run: RunRecord,
    samples: Rows,
    *,
    wide: bool = False,
    seen: list[Summary] | None = None,
    ids: bool = False,
    facts: list[str] | None = None,
) -> list[Table]:
    """Every type's tables, in the order its answers are read; `seen` collects the
    summaries shown; `ids`: figures named by their ids, not their labels; `facts`
    collects what every runtime measured alike, instead of rows."""
    typed = by_type(run, samples, wide=wide, seen=seen, ids=ids, facts=facts)
    return [t for _, tables in typed for t in tables]


def by_type(
    run: RunRecord,
    samples: Rows,
    *,
    wide: bool = False,
    seen: list[Summary] | None = None,
    ids: bool = False,
    facts: list[str] | None = None,
    facts_of: dict[str, list[str]] | None = None,
) -> list[tuple[str, list[Table]]]:
    """(type, its tables) of every type the run holds, in the views' order; `facts_of`
    gets each type's own lines of `facts` (what every runtime measured alike)."""
    f = as_frame(samples)
    order = list(run.spec.get("runtimes", []))
    out = []
    for view in views.of_run(f.distinct("experiment")):
        mine = f.take(f.where("experiment", view.type))
        before = len(facts) if facts is not None else 0
        out.append((view.type, view.tables(Shown(run, mine, order, wide, seen, ids, facts))))
        if facts_of is not None and facts is not None:
            facts_of[view.type] = facts[before:]
    return out


def drawers(
    samples: list[Sample], order: list[str], series: Series | None = None, light: bool = False
) -> list[tuple[str, Callable[[], list[Plot] | list[LightPlot]]]]:
    """(type, a function drawing one kind of its plots) for every kind every type of the
    run declares, in the views' order: the kinds can be drawn apart (on another CPU).
    `light`: a type that has its figures drawn without matplotlib has them so."""
    by: dict[str, list[Sample]] = {}
    for s in samples:
        by.setdefault(s.experiment, []).append(s)
    out: list[tuple[str, Callable[[], list[Plot] | list[LightPlot]]]] = []
    for view in views.of_run(list(by)):
        drawn = Drawn(by[view.type], order, series or [])
        if light and view.light:
            out += [(view.type, functools.partial(kind, drawn)) for kind in view.light]
            continue
        out += [(view.type, functools.partial(_draw, kind, drawn)) for kind in view.plots]
    return out


def _draw(kind: Callable[[Drawn], list[Plot]], drawn: Drawn) -> list[Plot]:
    plt = pyplot()
    with plt.rc_context(STYLE):
        out = kind(drawn)
        for p in out:
            p.fig.tight_layout()
    return out


def figures(samples: list[Sample], order: list[str], series: Series | None = None) -> list[Plot]:
    """Every plot the run's samples (and its instances' resource series) allow, in the
    views' order."""
    return [p for _, draw in drawers(samples, order, series) for p in draw() if isinstance(p, Plot)]
