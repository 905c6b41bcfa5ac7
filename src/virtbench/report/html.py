"""`virtbench report`: one self-contained HTML file (inline CSS and SVG, no script, no
fetch) for one or more runs.

Per run: what ran and where (status, command, environment, artifacts, the spec), what to
distrust (events such as skipped placements and guard stops, failed samples, samples
taken under emulation, and every group whose CV is above `cv_warn`), the tables the
terminal shows (with mean, SD, min-max and outliers), the plots (report/plots.py), the
differences between runtimes and a DESMET-style score table against a baseline runtime
(S5's bands unless configured): findings.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from virtbench import __version__
from virtbench.report import compare as cmp
from virtbench.report import conditions, cost, facts, sections, standing, twocpu, views
from virtbench.report import hosts as hostsmod
from virtbench.report.answers import answers
from virtbench.report.cells import bounded_note, fmt, quantity
from virtbench.report.desmet import DESMET_BANDS, desmet
from virtbench.report.findings import (
    HtmlTable,
    differences,
    failures,
    from_rich,
    ranked,
    run_notes,
    warnings,
)
from virtbench.report.glossary import glossary
from virtbench.report.hosts import named_line
from virtbench.report.plotkit import Plot
from virtbench.report.svgplot import LightPlot
from virtbench.report.trust import CI_NOTE
from virtbench.run.preflight import not_run_line
from virtbench.store import Store
from virtbench.store.frame import Frame
from virtbench.store.records import RunRecord, Sample

TEMPLATE = "report.html.j2"


@dataclass
class Options:
    baseline: str | None = None  # runtime the scores are against; default native, or first
    bands: dict[str, tuple[float, ...]] = field(default_factory=lambda: dict(DESMET_BANDS))
    cv_warn: float = 0.10  # groups with a CV above this are listed as warnings
    plots_dir: Path | None = None  # also write every plot there as PNG and SVG
    ratio_baseline: str | None = None  # the answers' ratios against it (default: the best)
    global_test: str = "kruskal"  # or "anova": ANOVA with Tukey's HSD, as S3 did
    # DESMET: a feature's importance by pattern on its name (fnmatch, first match; default 1)
    weights: dict[str, float] = field(default_factory=dict)
    boot_baseline: str | None = None  # boot is scored against this one (default: baseline)
    # (label, href) shown as a line of links above the title (the site's way back)
    links: list[tuple[str, str]] = field(default_factory=list)
    # figures drawn without matplotlib where a type has them so (the site's run pages)
    light_plots: bool = False
    # a run's answers as the report shows them (`answer_view`), worked out already (by run
    # id; the site's), not worked out again
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # what an instance costs: the price per hour, and the memory (GiB) and CPUs of the host
    # it is worked out for (None: each run's own)
    host_price: float | None = None
    host_memory_gib: float | None = None
    host_cpus: float | None = None


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "n/a"


PLOT_MAX_VALUES = 500  # per group: plots draw an evenly spaced subset of bigger ones


def plotted(f: Frame) -> tuple[list[Sample], str]:
    """The samples the plots draw, and what was left out: of every group (experiment,
    metric, workload, runtime, background, attacker, placement) at most PLOT_MAX_VALUES
    values, evenly spaced in the order measured, and every failed one. The tables and
    tests use them all."""
    from virtbench.analysis.stats import bounded_subset

    keys = (
        "experiment",
        "metric",
        "workload",
        "runtime",
        "background",
        "attacker",
        "placement",
        "warmup",
    )
    keep, capped = [np.flatnonzero(f.failed)], 0
    ok = np.flatnonzero(~f.failed)
    for _, rows in f.take(ok).groups(*keys):
        if rows.size > PLOT_MAX_VALUES:
            capped += 1
            rows = rows[bounded_subset(np.zeros(rows.size, dtype=np.int64), PLOT_MAX_VALUES)]
        keep.append(ok[rows])
    note = (
        f"plots draw at most {PLOT_MAX_VALUES:,} values of each group (evenly spaced in "
        f"the order measured; {capped} groups had more): the tables use every value"
        if capped
        else ""
    )
    return f.samples(np.sort(np.concatenate(keep))), note


def _runtime_order(run: RunRecord, f: Frame) -> list[str]:
    """The run's runtimes in spec order, then any others its samples name, by name."""
    order = list(run.spec.get("runtimes", []))
    return order + sorted(set(f.distinct("runtime")) - set(order))


def _svgs(
    draw: Callable[[], list[Plot] | list[LightPlot]], scope: str, plots_dir: Path | None
) -> Callable[[], list[dict[str, str]]]:
    """A task drawing `draw`'s plots as inline SVGs (ids scoped to the run), each also
    saved under `plots_dir` when given."""

    def svgs() -> list[dict[str, str]]:
        out = []
        for p in draw():
            if plots_dir is not None:
                p.save(plots_dir)
            out.append({"title": p.title, "svg": p.svg(scope=scope)})
            p.close()
        return out

    return svgs


def _run_facts(run: RunRecord) -> dict[str, Any]:
    """What the appendix says of the run itself: when, where, how it was started, with
    what, in words (report/facts.py)."""
    env = run.environment
    return {
        "named": [named_line(label, n) for label, n in env.get("named_runtimes", {}).items()],
        "run": run,
        "host": hostsmod.host_of(run),
        "started": _when(run.created),
        "finished": _when(run.finished),
        "duration": f"{(run.finished - run.created) / 60:.1f} min" if run.finished else "n/a",
        "argv": " ".join(run.argv),
        "environment": facts.environment(env),
        "vulnerabilities": facts.vulnerabilities(env),
        "tools": facts.tools(env),
        "versions": sorted(env.get("runtimes", {}).items()),
        "artifacts": [
            (a["name"], a["digest"][:16], quantity(a["disk_bytes"] / 1024, "KiB")[0])
            for a in run.artifacts
        ],
        "spec": facts.spec_toml(run.spec),
    }


def answer_parts(f: Frame, baseline: str | None) -> list[dict[str, Any]]:
    """Each answer as the report shows it (`answer_view`)."""
    return [answer_view(a) for a in answers(f, baseline)]


def answer_view(a: standing.Answer) -> dict[str, Any]:
    """An answer: its question, the sentences its CIs allow, its table and notes."""
    return {
        "question": a.question,
        "measure": a.measure,
        "sentences": a.sentences(),
        "undecided": a.undecided(),
        "table": from_rich(standing.table(a)),
        "notes": standing.notes(a),
    }


def _experiments(
    run: RunRecord,
    f: Frame,
    figures: dict[str, list[dict[str, str]]],
    seen: list[Any],
    alike: list[str],
) -> list[dict[str, Any]]:
    """Each experiment type's section: its heading, tables and plots, in the views'
    order; `alike` collects what every runtime measured alike (for the facts)."""
    out = []
    facts_of: dict[str, list[str]] = {}
    for kind, tables in sections.by_type(
        run, f, wide=True, seen=seen, facts=alike, facts_of=facts_of
    ):
        view = views.of(kind)
        out.append(
            {
                "type": kind,
                "heading": view.title or kind,
                "about": view.about,
                # what every runtime measured alike: said in its own section too
                "alike": facts_of.get(kind, []),
                # what a runtime cannot do, beside the tables it leaves empty
                "cannot": [
                    text
                    for _, text in failures(f.take(f.where("experiment", kind)))
                    if " cannot: " in text
                ],
                "tables": [from_rich(t) for t in tables],
                "plots": figures.get(kind, []),
            }
        )
    return out


def not_run(run: RunRecord) -> list[tuple[str, str]]:
    """The guests the run's study compared that the run did not (spec/brings.py), as
    warnings: the first a reader weighs."""
    return [
        ("warning", f"not run: {not_run_line(entry)}")
        for entry in run.environment.get("not_run", [])
    ]


FIRST_WARNINGS = 5  # said before the results; the rest one click away


def _warnings(
    run: RunRecord, f: Any, events: list[tuple[float, str, str]], cv_warn: float
) -> dict[str, Any]:
    """The warnings a reader weighs first (at most FIRST_WARNINGS, by what they change),
    the rest, and the run's own notes (what only confirms what was asked)."""
    found = ranked(not_run(run) + warnings(f, events, cv_warn))
    return {
        "warnings": found[:FIRST_WARNINGS],
        "more_warnings": found[FIRST_WARNINGS:],
        "run_notes": run_notes(events),
    }


def run_section(store: Store, run: RunRecord, opts: Options) -> dict[str, Any]:
    """What the report template shows of one run: its answers, warnings, each experiment
    type's tables and plots, the differences between its runtimes and their DESMET
    scores, what its figures mean, then its facts."""
    f = store.frame(run.id)
    order = _runtime_order(run, f)
    procs = [p for p in store.series(run.id) if p[0].startswith("proc/")]
    samples, plots_note = plotted(f)
    plots_dir = opts.plots_dir / run.id if opts.plots_dir is not None else None
    drawers = sections.drawers(samples, order, procs, light=opts.light_plots)
    # the figures are drawn on another CPU while the rest is worked out, then on both
    drawn = twocpu.in_order([_svgs(d, run.id, plots_dir) for _, d in drawers])
    figures: dict[str, list[dict[str, str]]] = {}
    for (kind, _), svgs in zip(drawers, drawn, strict=True):
        figures.setdefault(kind, []).extend(svgs)
    # the DESMET weights: the flag's, or the spec's
    weights = opts.weights or dict(run.spec.get("desmet_weights") or {})
    base, scores, score_note = desmet(f, order, dataclasses.replace(opts, weights=weights))
    seen: list[Any] = []  # the tables' summaries, for what their intervals were made with
    alike: list[str] = []
    return {
        **_run_facts(run),
        "counts": {
            "samples": int(np.sum(~f.warmup)),
            "warmups": int(np.sum(f.warmup)),
            "failed": int(np.sum(f.failed & ~f.warmup)),
        },
        "runtimes": order,
        "conditions": conditions.shown(f),
        "answers": (
            opts.answers[run.id] if run.id in opts.answers else answer_parts(f, opts.ratio_baseline)
        ),
        **_warnings(run, f, store.events(run.id), opts.cv_warn),
        "experiments": _experiments(run, f, figures, seen, alike),
        "alike": alike,
        "ci_note": " ".join([CI_NOTE, bounded_note(seen)]).strip(),
        "plots_note": plots_note,
        "glossary": glossary(f),
        "differences": differences(f, order, opts.global_test),
        "baseline": base,
        "scores": scores,
        "score_note": score_note,
        "global_test": (
            "ANOVA with Tukey's HSD"
            if opts.global_test == "anova"
            else "Kruskal-Wallis with Dunn's pairs (Holm)"
        ),
        "bands": {k: [f"{fmt(b)}%" for b in v] for k, v in opts.bands.items()},
        "cost": _cost(run, f, opts),
    }


def _cost(run: RunRecord, f: Frame, opts: Options) -> list[HtmlTable]:
    """What an instance costs on the host the options state (the run's own size where
    they do not), where a price is given and the run piled instances up, and what a task
    costs where tasks ran at once."""
    if opts.host_price is None:
        return []
    env = run.environment
    memory = (
        opts.host_memory_gib * 1024 if opts.host_memory_gib else env.get("memory_bytes", 0) / 2**20
    )
    cpus = opts.host_cpus or float(env.get("cpu_count") or 0)
    host = cost.Host(opts.host_price, memory, cpus)
    tables = [cost.table(f, host, f"run {run.id}"), cost.task_table(f, host, f"run {run.id}")]
    return [from_rich(t) for t in tables if t is not None]


@functools.cache
def _environment() -> jinja2.Environment:
    """The templates, loaded and compiled once a process (a site renders hundreds)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("virtbench.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def preload() -> None:
    """Compile the template now (a process about to fork the workers that render)."""
    _environment().get_template(TEMPLATE)


def render(store: Store, run_ids: list[str], opts: Options) -> str:
    runs = [store.run(r) for r in run_ids]  # unknown ids fail before any work
    parts = [run_section(store, r, opts) for r in runs]
    across: list[dict[str, Any]] = []
    for first, other, rows in hostsmod.comparisons(store, runs):
        testbeds = hostsmod.testbed_note(runs, first, other)
        if isinstance(rows, str):
            across.append({"a": first, "b": other, "table": None, "note": rows, "tb": testbeds})
            continue
        title = cmp.title(first, other, 5, 0.05)
        table = from_rich(cmp.verdict_table(title, rows, first, other))
        across.append({"a": first, "b": other, "table": table, "note": "", "tb": testbeds})
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            title="virtbench report: " + ", ".join(f"{r.id} ({r.name})" for r in runs),
            sections=parts,
            hosts=across,
            links=opts.links,
            version=__version__,
            generated=_when(dt.datetime.now().timestamp()),
            esc=html.escape,
        )
    )
