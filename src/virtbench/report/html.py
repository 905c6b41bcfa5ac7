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
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from virtbench import __version__
from virtbench.analysis.stats import DESMET_BANDS
from virtbench.report import compare as cmp
from virtbench.report import conditions, twocpu
from virtbench.report import hosts as hostsmod
from virtbench.report import plots as plotmod
from virtbench.report.answers import answers
from virtbench.report.cells import bounded_note
from virtbench.report.desmet import desmet
from virtbench.report.findings import HtmlTable, differences, from_rich, ranked, warnings
from virtbench.report.hosts import named_line
from virtbench.report.plotkit import Plot
from virtbench.report.tables import experiment_tables
from virtbench.report.trust import CI_NOTE
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
    global_test: str = "kruskal"  # or "anova": ANOVA with Tukey's HSD, as S3 did
    # DESMET: a feature's importance by pattern on its name (fnmatch, first match; default 1)
    weights: dict[str, float] = field(default_factory=dict)
    boot_baseline: str | None = None  # boot is scored against this one (default: baseline)


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def _env_value(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int):
        return f"{value / 2**30:.1f} GiB ({value:,} bytes)"
    return value if isinstance(value, str) else json.dumps(value)


PLOT_MAX_VALUES = 500  # per group: plots draw an evenly spaced subset of bigger ones


def plotted(f: Frame) -> tuple[list[Sample], str]:
    """The samples the plots draw, and what was left out: of every group (experiment,
    metric, workload, runtime, background, attacker, placement) at most PLOT_MAX_VALUES
    values, evenly spaced in the order measured, and every failed one. The tables and
    tests use them all."""
    from virtbench.analysis.stats import bounded_subset

    keys = ("experiment", "metric", "workload", "runtime", "background", "attacker",
            "placement", "warmup")  # fmt: skip
    keep, capped = [np.flatnonzero(f.failed)], 0
    ok = np.flatnonzero(~f.failed)
    for _, rows in f.take(ok).groups(*keys):
        if rows.size > PLOT_MAX_VALUES:
            capped += 1
            rows = rows[bounded_subset(np.zeros(rows.size, dtype=np.int64), PLOT_MAX_VALUES)]
        keep.append(ok[rows])
    note = (f"plots draw at most {PLOT_MAX_VALUES:,} values of each group (evenly spaced in "
            f"the order measured; {capped} groups had more): the tables use every value"
            if capped else "")  # fmt: skip
    return f.samples(np.sort(np.concatenate(keep))), note


def _runtime_order(run: RunRecord, f: Frame) -> list[str]:
    """The run's runtimes in spec order, then any others its samples name, by name."""
    order = list(run.spec.get("runtimes", []))
    return order + sorted(set(f.distinct("runtime")) - set(order))


def _svgs(
    draw: Callable[[], list[Plot]], scope: str, plots_dir: Path | None
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
    """What the section says of the run itself: when, where, how it was started, with
    what."""
    env = dict(run.environment)
    versions = env.pop("runtimes", {})
    named = env.pop("named_runtimes", {})
    return {
        "named": [named_line(label, n) for label, n in named.items()],
        "run": run,
        "host": hostsmod.host_of(run),
        "started": _when(run.created),
        "finished": _when(run.finished),
        "duration": f"{(run.finished - run.created) / 60:.1f} min" if run.finished else "-",
        "argv": " ".join(run.argv),
        "environment": [(k, _env_value(k, v)) for k, v in env.items()],
        "versions": sorted(versions.items()),
        "artifacts": run.artifacts,
        "spec": json.dumps(run.spec, indent=2),
    }


def run_section(store: Store, run: RunRecord, opts: Options) -> dict[str, Any]:
    """What the report template shows of one run: its facts, counts, answers, warnings,
    tables, plots, the differences between its runtimes and their DESMET scores."""
    f = store.frame(run.id)
    order = _runtime_order(run, f)
    procs = [p for p in store.series(run.id) if p[0].startswith("proc/")]
    samples, plots_note = plotted(f)
    plots_dir = opts.plots_dir / run.id if opts.plots_dir is not None else None
    drawers = plotmod.drawers(samples, order, procs)
    # the figures are drawn on another CPU while the rest is worked out, then on both
    figures = twocpu.in_order([_svgs(d, run.id, plots_dir) for d in drawers])
    # the DESMET weights: the flag's, or the spec's
    weights = opts.weights or dict(run.spec.get("desmet_weights") or {})
    base, scores, score_note = desmet(f, order, dataclasses.replace(opts, weights=weights))
    facts = _run_facts(run)
    seen: list[Any] = []  # the tables' summaries, for what their intervals were made with
    conds = conditions.of_runtimes(f)
    return {
        **facts,
        "counts": {
            "samples": int(np.sum(~f.warmup)),
            "warmups": int(np.sum(f.warmup)),
            "failed": int(np.sum(f.failed & ~f.warmup)),
        },
        "conditions": conditions.shown(f),
        "answers": [(a.question, a.line()) for a in answers(f)],
        "warnings": ranked(warnings(f, store.events(run.id), opts.cv_warn)),
        "tables": [beside(from_rich(t), conds) for t in experiment_tables(run, f, True, seen)],
        "ci_note": " ".join([CI_NOTE, bounded_note(seen)]).strip(),
        "plots_note": plots_note,
        "plots": [svg for kind in figures for svg in kind],
        "differences": differences(f, order, opts.global_test),
        "baseline": base,
        "scores": scores,
        "score_note": score_note,
        "global_test": (
            "ANOVA with Tukey's HSD"
            if opts.global_test == "anova"
            else "Kruskal-Wallis with Dunn's pairs (Holm)"
        ),
        "bands": opts.bands,
    }


def beside(t: HtmlTable, conds: dict[str, dict[str, str]]) -> HtmlTable:
    """The table with the conditions of the runtimes it shows (named in its title, headers
    or cells) as its last notes: each figure with the conditions it was taken under."""
    text = " ".join([t.title, *t.headers, *(c for row in t.rows for c in row)])
    named = [r for r in conds if re.search(rf"(?<![\w.:-]){re.escape(r)}(?![\w.:-])", text)]
    lines = [f"conditions: {conditions.line(r, conds[r])}" for r in named]
    return dataclasses.replace(t, notes=[*t.notes, *lines]) if lines else t


def render(store: Store, run_ids: list[str], opts: Options) -> str:
    runs = [store.run(r) for r in run_ids]  # unknown ids fail before any work
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("virtbench.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    sections = [run_section(store, r, opts) for r in runs]
    across = []
    for first, other, rows in hostsmod.comparisons(store, runs):
        if isinstance(rows, str):
            across.append({"a": first, "b": other, "table": None, "note": rows})
            continue
        title = f"{other} against {first} (min effect 5%, alpha 0.05)"
        table = from_rich(cmp.verdict_table(title, rows, first, other))
        across.append({"a": first, "b": other, "table": table, "note": ""})
    return env.get_template(TEMPLATE).render(
        title="virtbench report: " + ", ".join(f"{r.id} ({r.name})" for r in runs),
        sections=sections,
        hosts=across,
        version=__version__,
        generated=_when(dt.datetime.now().timestamp()),
        esc=html.escape,
    )
